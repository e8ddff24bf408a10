"""Weight averaging (`rocketrl average`, rocketrl.policy.average): pooled statistics by hand, the input layer's
rewrite exact on raw observations, every deeper parameter the plain mean, and the refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from export_helpers import make_checkpoint

from rocketrl.cli import main
from rocketrl.env.obs import OBS_SIZE
from rocketrl.infra.checkpoint import load_checkpoint, read_meta, save_checkpoint
from rocketrl.policy.average import averaged_leaves, averaged_network, pooled_statistics
from rocketrl.policy.load import (
    gauntlet_bots,
    load_policy,
    policy_from_checkpoint,
    policy_name,
    resolve_checkpoint,
)


def test_pooled_statistics_by_hand() -> None:
    # Means 0 and 2 (variance 1 each): pooled mean 1, variance 1 + ((0-1)^2 + (2-1)^2) / 2 = 2.
    stats = [
        {
            "mean": torch.tensor([0.0, 5.0], dtype=torch.float64),
            "var": torch.tensor([1.0, 4.0], dtype=torch.float64),
            "count": torch.tensor(10.0, dtype=torch.float64),
        },
        {
            "mean": torch.tensor([2.0, 5.0], dtype=torch.float64),
            "var": torch.tensor([1.0, 2.0], dtype=torch.float64),
            "count": torch.tensor(30.0, dtype=torch.float64),
        },
    ]
    pooled = pooled_statistics(stats)
    assert torch.allclose(pooled["mean"], torch.tensor([1.0, 5.0], dtype=torch.float64))
    assert torch.allclose(pooled["var"], torch.tensor([2.0, 3.0], dtype=torch.float64))
    assert pooled["count"].item() == 20.0


def _bots(tmp_path: Path, lstm: bool = False) -> list[Path]:
    return [make_checkpoint(tmp_path / f"bot{seed}", lstm=lstm, seed=seed) for seed in (0, 1, 2)]


@pytest.mark.parametrize("lstm", [False, True])
def test_input_layer_reads_pooled_statistics_exactly(tmp_path: Path, lstm: bool) -> None:
    states = [load_checkpoint(path)[0] for path in _bots(tmp_path, lstm)]
    models, stats = [s["model"] for s in states], [s["obs_norm"] for s in states]
    averaged, pooled = averaged_network(models, stats)
    assert pooled is not None
    raw = torch.randn(64, OBS_SIZE, dtype=torch.float64)

    def pre_activation(model: dict, stat: dict, layer: str) -> torch.Tensor:
        """The input layer's output before its activation (an LSTM: its input gates' W_ih y + b_ih), on raw x."""
        y = (raw - stat["mean"]) / (stat["var"] + 1e-8).sqrt()
        weight, bias = (
            ("lstm.weight_ih_l0", "lstm.bias_ih_l0") if layer == "lstm" else (f"{layer}.weight", f"{layer}.bias")
        )
        return y @ model[weight].double().T + model[bias].double()

    layers = ["lstm"] if lstm else ["actor.0", "critic.0"]
    for layer in layers:
        got = pre_activation(averaged, pooled, layer)
        want = sum(pre_activation(m, s, layer) for m, s in zip(models, stats, strict=True)) / 3
        # The bots' own input layers, each on its own statistics, averaged: the same to float32 rounding.
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-4), (got - want).abs().max()
    inputs = ["lstm.weight_ih_l0"] if lstm else ["actor.0.weight", "critic.0.weight"]
    rewritten = set(inputs) | {w.replace("weight", "bias") for w in inputs}
    for name, value in averaged.items():
        if name not in rewritten:
            assert torch.allclose(value, sum(m[name] for m in models) / 3, atol=1e-7), name
        assert value.dtype == models[0][name].dtype


def test_averaging_one_bot_twice_gives_it_back(tmp_path: Path) -> None:
    path = make_checkpoint(tmp_path / "bot")
    state = load_checkpoint(path)[0]
    averaged, pooled = averaged_network([state["model"]] * 2, [state["obs_norm"]] * 2)
    for name, value in averaged.items():
        assert torch.allclose(value, state["model"][name], atol=1e-6), name
    assert torch.allclose(pooled["var"], state["obs_norm"]["var"])


def test_cli_writes_a_bot_that_plays_as_its_network_says(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bots = _bots(tmp_path)
    out = tmp_path / "soup.safetensors"
    assert main(["average", *map(str, bots), "--out", str(out)]) == 0
    assert "averaged 3 bots" in capsys.readouterr().out
    meta = read_meta(out)
    assert [entry["checkpoint"] for entry in meta["averaged_from"]] == [str(p) for p in bots]
    state = load_checkpoint(out)[0]
    assert set(state) == {"model", "obs_norm"}  # what playing and run.init_from need; no optimizer
    actor = policy_from_checkpoint(out, deterministic=True)
    states = [load_checkpoint(p)[0] for p in bots]
    expected, _ = averaged_network([s["model"] for s in states], [s["obs_norm"] for s in states])
    for name, value in actor.model.state_dict().items():
        assert torch.equal(value, expected[name]), name
    actions, _ = actor.act(torch.randn(32, OBS_SIZE))
    assert actions.shape[0] == 32
    # An existing --out is kept unless --force.
    assert main(["average", *map(str, bots), "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert [entry["checkpoint"] for entry in read_meta(out)["averaged_from"]] == [str(p) for p in bots]
    # --force replaces it: now the average of the first two bots.
    assert main(["average", *map(str, bots[:2]), "--out", str(out), "--force"]) == 0
    assert [entry["checkpoint"] for entry in read_meta(out)["averaged_from"]] == [str(p) for p in bots[:2]]
    expected, _ = averaged_network([s["model"] for s in states[:2]], [s["obs_norm"] for s in states[:2]])
    replaced = load_checkpoint(out)[0]["model"]
    for name, value in expected.items():
        assert torch.equal(replaced[name], value), name


def test_refusals_name_the_difference(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    small = make_checkpoint(tmp_path / "a")
    wide = make_checkpoint(tmp_path / "b", hidden=(64, 32))
    assert main(["average", str(small), str(wide), "--out", str(tmp_path / "x.safetensors")]) == 2
    err = capsys.readouterr().err
    assert "its model" in err and "differs" in err
    assert not (tmp_path / "x.safetensors").exists()
    assert main(["average", str(small), "--out", str(tmp_path / "x.safetensors")]) == 2
    assert "at least two bots" in capsys.readouterr().err
    attention = [make_checkpoint(tmp_path / f"t{s}", kind="attention", seed=s) for s in (0, 1)]
    assert main(["average", *map(str, attention), "--out", str(tmp_path / "x.safetensors")]) == 2
    assert "model.kind=attention" in capsys.readouterr().err
    models = [load_checkpoint(small)[0]["model"], {**load_checkpoint(small)[0]["model"]}]
    models[1]["actor.2.weight"] = torch.zeros(3, 3)
    with pytest.raises(ValueError, match="'actor.2.weight'"):
        averaged_network(models, None)


def test_bots_trained_without_normalization_average_their_weights_alone(tmp_path: Path) -> None:
    from rocketrl.infra.checkpoint import save_checkpoint
    from rocketrl.policy.average import average_checkpoints

    bots = []
    for seed in (0, 1):
        state, meta = load_checkpoint(make_checkpoint(tmp_path / f"bot{seed}", seed=seed))
        meta["config"]["ppo"]["normalize_observations"] = False  # statistics kept in the file, never applied
        bots.append(save_checkpoint(tmp_path / f"plain{seed}.safetensors", state, meta))
    out = average_checkpoints(bots, tmp_path / "soup.safetensors")
    state = load_checkpoint(out)[0]
    assert "obs_norm" not in state
    models = [load_checkpoint(p)[0]["model"] for p in bots]
    for name, value in state["model"].items():  # the input layers too: no statistics folded in
        assert torch.allclose(value, (models[0][name] + models[1][name]) / 2, atol=1e-7), name


def test_a_run_folder_stands_for_its_last_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bots = _bots(tmp_path)
    run = tmp_path / "runs" / "gen_seed2"
    (run / "checkpoints").mkdir(parents=True)
    for step, bot in ((1_000, bots[0]), (2_000, bots[1])):  # the run's older and its last checkpoint
        state, meta = load_checkpoint(bot)
        save_checkpoint(run / "checkpoints" / f"step_{step:012d}.safetensors", state, {**meta, "step": step})
    last = run / "checkpoints" / "step_000000002000.safetensors"
    assert resolve_checkpoint(run) == last and resolve_checkpoint(bots[2]) == bots[2]
    # every command that takes --checkpoint (eval, watch, export, run.init_from) plays the run's last bot
    policy = load_policy(str(run))
    for name, value in load_checkpoint(bots[1])[0]["model"].items():
        assert torch.equal(policy.model.state_dict()[name], value), name
    assert policy_name(str(run)) == "gen_seed2/step_000000002000"
    # files outside a run are named by their own folder: two lines' candidates of one name stay apart
    assert policy_name(str(tmp_path / "runs" / "line_a" / "step1_candidate.safetensors")) == "line_a/step1_candidate"
    assert policy_name(str(tmp_path / "runs" / "line_b" / "step1_candidate.safetensors")) == "line_b/step1_candidate"
    out = tmp_path / "soup.safetensors"
    assert main(["average", str(run), str(bots[2]), "--out", str(out)]) == 0
    averaged_from = read_meta(out)["averaged_from"]
    last_entry = {"checkpoint": str(last), "step": 2000, "seed": None, "init_from": None}  # the test run has neither
    assert averaged_from[0] == last_entry
    # A folder that is not a run's, or a run with no checkpoint yet: refused by name, nothing written.
    (tmp_path / "empty" / "checkpoints").mkdir(parents=True)
    for folder, message in ((tmp_path / "runs", "no checkpoints/ inside"), (tmp_path / "empty", "no checkpoint yet")):
        assert main(["average", str(folder), str(bots[2]), "--out", str(tmp_path / "x.safetensors")]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "x.safetensors").exists()


def test_from_step_a_run_folder_stands_for_every_checkpoint_it_kept_that_late(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    bots = _bots(tmp_path)
    run = tmp_path / "runs" / "gen_seed3"
    (run / "checkpoints").mkdir(parents=True)
    for step, bot in ((1_000, bots[0]), (2_000, bots[1]), (3_000, bots[2])):
        state, meta = load_checkpoint(bot)
        save_checkpoint(run / "checkpoints" / f"step_{step:012d}.safetensors", state, {**meta, "step": step})
    tail, files = tmp_path / "tail.safetensors", tmp_path / "files.safetensors"
    # the run's checkpoints from 2,000 on (the last two) and a file: three bots, as if each were named
    assert main(["average", str(run), str(bots[0]), "--from-step", "2000", "--out", str(tail)]) == 0
    assert "averaged 3 bots" in capsys.readouterr().out
    assert [bot["step"] for bot in read_meta(tail)["averaged_from"]] == [2_000, 3_000, None]
    assert main(["average", str(bots[1]), str(bots[2]), str(bots[0]), "--out", str(files)]) == 0
    for part in ("model", "obs_norm"):
        for name, value in load_checkpoint(files)[0][part].items():
            assert torch.equal(load_checkpoint(tail)[0][part][name], value), name
    # none kept that late: refused with the steps the run kept, nothing written
    assert main(["average", str(run), str(bots[0]), "--from-step", "5000", "--out", str(tmp_path / "x")]) == 2
    assert "no checkpoint at or past 5,000 agent-steps (it kept steps 1,000, 2,000, 3,000)" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_an_average_of_averages_names_every_checkpoint_it_holds_and_its_weight(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    a, b, c = _bots(tmp_path)
    for seed, bot in enumerate((a, b, c), start=2):  # runs of seeds 2, 3, 4 from gauntlet_v1
        state, meta = load_checkpoint(bot)
        meta["config"]["run"] |= {"seed": seed, "init_from": "gauntlet_v1"}
        save_checkpoint(bot, state, meta)
    pair, three = tmp_path / "pair.safetensors", tmp_path / "three.safetensors"
    assert main(["average", str(a), str(b), "--out", str(pair)]) == 0
    assert main(["average", str(pair), str(c), "--out", str(three)]) == 0
    assert "averaged 2 bots" in capsys.readouterr().out
    entries = read_meta(three)["averaged_from"]
    assert [entry["checkpoint"] for entry in entries] == [str(pair), str(c)]
    assert [inner["checkpoint"] for inner in entries[0]["averaged_from"]] == [str(a), str(b)]
    assert "averaged_from" not in entries[1]  # a plain checkpoint: no provenance of its own
    leaves = averaged_leaves(entries)
    # pair holds a and b one half each, so of the whole each is a quarter; c, averaged with pair, a half
    assert [(leaf["checkpoint"], leaf["weight"]) for leaf in leaves] == [(str(a), 0.25), (str(b), 0.25), (str(c), 0.5)]
    assert averaged_leaves(read_meta(pair)["averaged_from"]) == [
        {"checkpoint": str(a), "step": read_meta(a).get("step"), "weight": 0.5, "seed": 2, "init_from": "gauntlet_v1"},
        {"checkpoint": str(b), "step": read_meta(b).get("step"), "weight": 0.5, "seed": 3, "init_from": "gauntlet_v1"},
    ]
    # each plain checkpoint's entry keeps its run's seed and start: the average names them when the files are gone
    for bot in (a, b, c):
        bot.unlink()
    assert [(leaf["seed"], leaf["init_from"]) for leaf in averaged_leaves(read_meta(three)["averaged_from"])] == [
        (2, "gauntlet_v1"),
        (3, "gauntlet_v1"),
        (4, "gauntlet_v1"),
    ]


def test_a_gauntlet_bot_is_recorded_by_its_name_not_this_installation_s_path(tmp_path: Path) -> None:
    out = tmp_path / "pair.safetensors"
    assert main(["average", "gauntlet_v2", "pretrained", "--out", str(out)]) == 0
    newest = gauntlet_bots()[-1]  # 'pretrained' is the newest gauntlet bot, recorded as the version it is today
    entries = read_meta(out)["averaged_from"]
    assert [entry["checkpoint"] for entry in entries] == ["gauntlet_v2", newest]
    assert [leaf["checkpoint"] for leaf in averaged_leaves(entries)] == ["gauntlet_v2", newest]
    assert all(resolve_checkpoint(entry["checkpoint"]).is_file() for entry in entries)  # the names load again


def test_a_bot_saved_before_a_model_field_existed_averages_with_a_newer_one(tmp_path: Path) -> None:
    """gauntlet_v1's card predates model.kind and the attention fields: at their defaults it is the same network."""
    from rocketrl.policy.average import average_checkpoints
    from rocketrl.policy.load import checkpoint_config, resolve_checkpoint

    paths = [resolve_checkpoint(bot) for bot in ("gauntlet_v1", "gauntlet_v25")]
    old, new = (checkpoint_config(path, read_meta(path))["model"] for path in paths)
    assert "kind" not in old and "kind" in new  # what this test is about: an older model section
    out = average_checkpoints(["gauntlet_v1", "gauntlet_v25"], tmp_path / "v1_v25.safetensors")
    assert [entry["checkpoint"] for entry in read_meta(out)["averaged_from"]] == ["gauntlet_v1", "gauntlet_v25"]
