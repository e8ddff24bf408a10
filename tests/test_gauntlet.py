"""The gauntlet (every shipped bot, frozen, and the scripted opponents) and runs that start from a trained bot."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from export_helpers import make_checkpoint

from rocketrl.cli import main as rocketrl_main
from rocketrl.config import load_config
from rocketrl.infra.checkpoint import file_sha256, load_checkpoint
from rocketrl.policy.load import (
    GAUNTLET_DIR,
    gauntlet,
    gauntlet_bots,
    gauntlet_name,
    gauntlet_opponents,
    gauntlet_versions,
    load_policy,
    policy_name,
    resolve_checkpoint,
    run_starts,
)
from rocketrl.ppo.trainer import Trainer

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"

SMALL = [
    "--env.num-arenas", "2", "--env.stepping", "serial", "--env.num-workers", "1",
    "--ppo.rollout-steps", "8", "--ppo.minibatches", "1", "--ppo.epochs", "1", "--run.device", "cpu",
]  # fmt: skip


def test_version_1_is_the_first_shipped_bot_frozen_with_its_card() -> None:
    assert gauntlet_bots()[0] == "gauntlet_v1"
    assert gauntlet()[-3:] == ["rule_policy", "shadow_goalie", "ball_chaser"]
    card = json.loads((GAUNTLET_DIR / "v1.json").read_text())
    assert card["gauntlet_version"] == 1 and card["team_size"] == "1v1" and card["vs_rule_policy"]["games"] == 100
    assert resolve_checkpoint("gauntlet_v1") == GAUNTLET_DIR / "v1.safetensors"
    assert policy_name("gauntlet_v1") == "gauntlet_v1"
    policy = load_policy("gauntlet_v1", deterministic=True)
    assert policy.act(torch.zeros(3, 180), None)[0].shape == (3,)


def test_an_unknown_gauntlet_version_names_the_ones_there_are() -> None:
    with pytest.raises(FileNotFoundError, match="gauntlet_v1"):
        resolve_checkpoint("gauntlet_v99")


def test_the_gauntlet_of_a_bot_is_every_opponent_but_itself_however_named(tmp_path) -> None:
    newest = gauntlet_bots()[-1]
    assert gauntlet_opponents("gauntlet_v1") == gauntlet()[1:]
    assert gauntlet_opponents("pretrained") == [o for o in gauntlet() if o != newest]
    assert gauntlet_opponents(str(resolve_checkpoint(newest))) == gauntlet_opponents("pretrained")
    assert gauntlet_opponents("gauntlet_v1", team=True) == [*gauntlet()[1:], "rotation"]
    with pytest.raises(FileNotFoundError, match="nothing.safetensors"):
        gauntlet_opponents(tmp_path / "nothing.safetensors")


def test_eval_gauntlet_plays_every_gauntlet_bot_and_scripted_opponent_but_itself(tmp_path) -> None:
    out = tmp_path / "gauntlet.json"
    args = ["eval", "--checkpoint", "pretrained", "--gauntlet", "--num-games", "2", "--game-seconds", "5",
            "--no-ratings", "--json", str(out)]  # fmt: skip
    assert rocketrl_main(args) == 0
    report = json.loads(out.read_text())
    assert [r["name_b"] for r in report["results"]] == [o for o in gauntlet() if o != gauntlet_bots()[-1]]
    assert all(r["num_games"] == 2 for r in report["results"])


@contextmanager
def run_beside_a_checkpoint(tmp_path: Path, actor: str, critic: str) -> Iterator[tuple[Trainer, Path]]:
    """A small Trainer of the given hidden widths ("64,64") and a 64-64 checkpoint to start it from."""
    checkpoint = make_checkpoint(tmp_path, hidden=(64, 64))
    cfg = load_config(None, [*SMALL, "--model.actor-hidden", actor, "--model.critic-hidden", critic,
                             "--run.logdir", str(tmp_path), "--run.name", "run"])  # fmt: skip
    trainer = Trainer(cfg)
    try:
        yield trainer, checkpoint
    finally:
        trainer.close()


def test_a_run_starts_from_a_checkpoints_network_and_normalizer(tmp_path) -> None:
    with run_beside_a_checkpoint(tmp_path, "64,64", "64,64") as (trainer, checkpoint):
        trainer.init_from(str(checkpoint))
        assert not trainer.init_widened
        state, _ = load_checkpoint(checkpoint)
        for name, value in trainer.model.state_dict().items():
            assert torch.equal(value, state["model"][name]), name
        assert torch.equal(trainer.algorithm.obs_norm.state_dict()["mean"], state["obs_norm"]["mean"])


def test_a_run_with_wider_hidden_layers_starts_playing_as_the_checkpoint(tmp_path) -> None:
    with run_beside_a_checkpoint(tmp_path, "96,128", "128,64") as (trainer, checkpoint):
        trainer.init_from(str(checkpoint))
        assert trainer.init_widened
        bot = load_policy(str(checkpoint), deterministic=True)
        obs = torch.randn(64, 180) * 3.0
        wide = trainer.algorithm.obs_norm.normalize(obs)
        with torch.no_grad():
            assert torch.equal(trainer.model.act(wide, deterministic=True)[0], bot.act(obs, None)[0])


def test_a_network_of_another_shape_is_refused_by_name(tmp_path) -> None:
    with run_beside_a_checkpoint(tmp_path, "32,32", "32,32") as (trainer, checkpoint):
        with pytest.raises(ValueError, match=r"run.init_from=.*actor\.0\.weight.*cannot be widened"):
            trainer.init_from(str(checkpoint))


def test_a_start_that_is_not_there_is_named_before_the_run_folder_is_made(tmp_path) -> None:
    from rocketrl.config import TrainConfig
    from rocketrl.training import train

    cfg = TrainConfig()
    cfg.run.logdir, cfg.run.name, cfg.run.init_from = str(tmp_path / "runs"), "start", str(tmp_path / "none.st")
    with pytest.raises(FileNotFoundError, match=r"run.init_from: checkpoint '.*none\.st' does not exist; give"):
        train(cfg)
    assert not (tmp_path / "runs").exists()


def test_a_community_bot_is_refused_as_a_start_by_name() -> None:
    from rocketrl.ppo.config import RunConfig

    with pytest.raises(ValueError, match=r"run.init_from: .nexto:x/nexto-model.pt. is a community bot.*not a start"):
        RunConfig(init_from="nexto:x/nexto-model.pt")
    with pytest.raises(ValueError, match="community bot"):
        RunConfig(init_from="necto:necto-model.pt")
    assert RunConfig(init_from="gauntlet_v1").init_from == "gauntlet_v1"


def test_the_shipped_1v1_bot_is_the_newest_gauntlet_version_with_its_card() -> None:
    newest = gauntlet_versions()[-1]
    assert resolve_checkpoint("pretrained") == GAUNTLET_DIR / f"v{newest}.safetensors"
    card = json.loads((GAUNTLET_DIR / f"v{newest}.json").read_text())
    assert card["gauntlet_version"] == newest and card["name"] == f"gauntlet_v{newest}"
    assert card["vs_rule_policy"]["games"] >= 100 and card["vs_rule_policy"]["win_rate"] >= 0.97
    assert policy_name("pretrained") == "pretrained"


def test_the_long_preset_runs_on_from_the_shipped_bot_with_its_schedules_held() -> None:
    from rocketrl.config import config_to_dict, preset_config_path
    from rocketrl.ppo.schedules import Schedule

    long = load_config(preset_config_path("league_1v1_long"))
    short = load_config(preset_config_path("league_1v1"))
    # each generation starts from the one before: the newest gauntlet bot, the one `pretrained` names
    assert long.run.init_from == f"gauntlet_v{gauntlet_versions()[-1]}"
    assert long.run.timesteps == 4 * short.run.timesteps
    for kind, start, end in (
        (long.ppo.lr_schedule, long.ppo.learning_rate, long.ppo.resolved_lr_end),
        (long.ppo.entropy_schedule, long.ppo.entropy_coef, long.ppo.resolved_entropy_coef_end),
    ):
        schedule = Schedule(kind=kind, start=start, end=end)
        assert schedule.value(0.0) == schedule.value(1.0) == start
    # the end rates a run reports are the held ones, not league_1v1's decayed ends
    assert (long.ppo.resolved_lr_end, long.ppo.resolved_entropy_coef_end) == (3e-4, 0.003)
    assert (long.ppo.learning_rate, long.ppo.entropy_coef) == (short.ppo.learning_rate, short.ppo.entropy_coef)
    # and nothing else differs from league_1v1
    a, b = config_to_dict(long), config_to_dict(short)
    # (keeping the bots at 16M, 32M, 48M and 64M for good aside)
    assert long.run.keep_every == short.run.timesteps and short.run.keep_every is None
    for section, key in (("run", "init_from"), ("run", "timesteps"), ("ppo", "lr_schedule"), ("ppo", "lr_end"),
                         ("ppo", "entropy_schedule"), ("ppo", "entropy_coef_end"), ("run", "keep_every")):  # fmt: skip
        a[section].pop(key), b[section].pop(key)
    assert a == b


def test_the_next_generation_preset_is_the_long_one_at_a_third_of_the_rate_discount_0995_and_fewer_shots() -> None:
    from rocketrl.config import config_to_dict, preset_config_path

    nxt = load_config(preset_config_path("league_1v1_next"))
    long = load_config(preset_config_path("league_1v1_long"))
    assert nxt.run.init_from == long.run.init_from == f"gauntlet_v{gauntlet_versions()[-1]}"
    assert (nxt.ppo.learning_rate, nxt.ppo.resolved_lr_end) == (1e-4, 1e-4)  # held, the recipe of the last two bots
    assert nxt.run.timesteps == 16_000_000 and nxt.run.keep_every == 2_000_000  # the tail averaged: 10-16M
    assert nxt.ppo.gamma == 0.995 and long.ppo.gamma == 0.99
    # The shot on target at a quarter of league_1v1_long's pay, everything else its rewards (gauntlet_v33's recipe).
    from rocketrl.env.rewards import RewardConfig

    weights = {name: dict(RewardConfig.from_yaml(c.env.rewards).weights) for name, c in (("next", nxt), ("long", long))}
    assert (weights["next"].pop("shot"), weights["long"].pop("shot")) == (0.5, 2.0)
    assert weights["next"] == weights["long"]
    a, b = config_to_dict(nxt), config_to_dict(long)
    for section, key in (("ppo", "learning_rate"), ("ppo", "gamma"), ("run", "timesteps"), ("run", "keep_every"),
                         ("env", "rewards")):  # fmt: skip
        a[section].pop(key), b[section].pop(key)
    assert a == b


def _make_pretrained(monkeypatch, gauntlet_dir):
    """scripts/make_pretrained.py as a module, writing its gauntlet versions into `gauntlet_dir`."""
    import rocketrl.policy.load as load

    spec = importlib.util.spec_from_file_location("make_pretrained", SCRIPTS / "make_pretrained.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(load, "GAUNTLET_DIR", gauntlet_dir)
    monkeypatch.setattr(module, "GAUNTLET_DIR", gauntlet_dir)
    return module


def _result(wins: int, losses: int) -> dict:
    return {
        "num_games": wins + losses,
        "wins": wins,
        "draws": 0,
        "losses": losses,
        "goals_for": 2 * wins,
        "goals_against": losses,
        "win_rate": wins / (wins + losses),
        "win_rate_low": 0.1,
        "win_rate_high": 0.9,
    }


def test_a_league_bot_ships_as_the_next_gauntlet_version_with_its_figures(tmp_path, monkeypatch) -> None:
    gauntlet_dir = tmp_path / "gauntlet"
    gauntlet_dir.mkdir()
    (gauntlet_dir / "v1.safetensors").write_bytes((GAUNTLET_DIR / "v1.safetensors").read_bytes())
    make_pretrained = _make_pretrained(monkeypatch, gauntlet_dir)
    bot = make_checkpoint(tmp_path, hidden=(64, 64))
    record = {
        "bot": str(bot),
        "train": "rocketrl train --preset league_1v1 --seed 3",
        "machine": "test machine",
        "settings": "rocketrl eval --checkpoint BOT --gauntlet --num-games 4",
        "results": {"gauntlet_v1": _result(3, 1), "rule_policy": _result(4, 0), "shadow_goalie": _result(4, 0)},
    }
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    with pytest.raises(SystemExit, match="ball_chaser"):  # a shipped bot has played every scripted opponent
        make_pretrained.league(str(path))
    assert not (gauntlet_dir / "v2.safetensors").exists()
    record["results"]["ball_chaser"] = _result(2, 2)
    path.write_text(json.dumps(record))
    fresh = tmp_path / "fresh.json"  # new games of the same bot, as `rocketrl eval --json` writes them
    fresh.write_text(json.dumps({"results": [{"name_a": "pretrained", "name_b": "rule_policy", **_result(3, 1)}]}))
    make_pretrained.league(str(path), [str(fresh)])
    card = json.loads((gauntlet_dir / "v2.json").read_text())
    assert card["gauntlet_version"] == 2 and card["name"] == "gauntlet_v2" and card["team_size"] == "1v1"
    assert card["preset"] == "league_1v1" and card["train_command"] == record["train"]
    assert card["vs_rule_policy"]["wins"] == 4 and card["vs_rule_policy"]["games"] == 4
    assert set(card["generalization"]) == {"gauntlet_v1", "shadow_goalie", "ball_chaser"}
    assert card["measured_with"].startswith("rocketrl eval --checkpoint CHECKPOINT --gauntlet")
    fresh_figures = {k: v for k, v in _result(3, 1).items() if k != "num_games"}
    assert card["fresh_games"] == {"rule_policy": {"games": 4, **fresh_figures}}
    shipped, meta = load_checkpoint(gauntlet_dir / "v2.safetensors")
    trained, _ = load_checkpoint(bot)
    assert set(shipped) == {"model", "obs_norm"} and meta["pretrained"]["name"] == "gauntlet_v2"
    for name, value in trained["model"].items():
        assert torch.equal(shipped["model"][name], value), name


def _judged(candidate: Path, wins_per_set: list[int]) -> dict:
    """A `rocketrl judge --json` report of `candidate` against gauntlet_v1, one set of 100 games per entry."""
    from rocketrl.eval.judge import judge_sets
    from rocketrl.league.match import MatchResult

    sets = []
    for wins in wins_per_set:
        result = MatchResult(str(candidate), "gauntlet_v1")
        result.wins, result.losses, result.goals_for, result.goals_against = wins, 100 - wins, 2 * wins, 100 - wins
        sets.append(result)
    seeds = [0, 7, 11][: len(sets)]
    return {
        "candidate": str(candidate),
        "parent": "gauntlet_v1",
        "machine": "test machine",
        "settings": {"num_games": 100, "game_seconds": 120.0, "kickoff_jitter": 5.0, "deterministic": True},
        "sets": [{"seed": seed} | r.to_dict() for seed, r in zip(seeds, sets, strict=True)],
        "verdict": judge_sets(sets, seeds).to_dict(),
    }


def test_a_bot_ships_only_with_a_passed_judgement_of_itself_and_its_card_keeps_the_sets(tmp_path, monkeypatch) -> None:
    gauntlet_dir = tmp_path / "gauntlet"
    gauntlet_dir.mkdir()
    (gauntlet_dir / "v1.safetensors").write_bytes((GAUNTLET_DIR / "v1.safetensors").read_bytes())
    make_pretrained = _make_pretrained(monkeypatch, gauntlet_dir)
    bot, other = make_checkpoint(tmp_path / "bot"), make_checkpoint(tmp_path / "other", seed=9)
    results = {name: _result(3, 1) for name in ("gauntlet_v1", "rule_policy", "shadow_goalie", "ball_chaser")}
    record = tmp_path / "record.json"
    train = "rocketrl train --preset league_1v1_next"
    record_data = {"bot": str(bot), "train": train, "machine": "m", "settings": "eval", "results": results}
    record.write_text(json.dumps(record_data))
    judged = tmp_path / "judged.json"
    judged.write_text(json.dumps(_judged(bot, [60, 49, 65])))  # one set lost: the parent stays
    with pytest.raises(SystemExit, match=r"does not replace gauntlet_v1 \(.*judged.json: seed 7 lost: 49W 0D 51L\)"):
        make_pretrained.league(str(record), [str(judged)])
    judged.write_text(json.dumps(_judged(other, [60, 62, 65])))  # another bot's sets say nothing of this one
    with pytest.raises(SystemExit, match="judge the bot being shipped"):
        make_pretrained.league(str(record), [str(judged)])
    assert not (gauntlet_dir / "v2.safetensors").exists()
    # a copy of the judged file elsewhere (a run's candidate kept under docs/) is the bot judged; another is not
    copy = tmp_path / "kept" / "bot.safetensors"
    copy.parent.mkdir()
    copy.write_bytes(bot.read_bytes())
    report = _judged(bot, [60, 62, 65])
    assert make_pretrained.judged_this_bot(report, copy) and make_pretrained.judged_this_bot(report, bot)
    assert not make_pretrained.judged_this_bot(report, other)
    gone = _judged(tmp_path / "gone.safetensors", [60, 62, 65])  # the judged file is gone: only a digest names it
    assert not make_pretrained.judged_this_bot(gone, copy)
    assert make_pretrained.judged_this_bot(gone | {"candidate_sha256": file_sha256(bot)}, copy)
    floor = {"seed": 0, "bots": [{"opponent": "ball_chaser", "wins": 97, "draws": 0, "losses": 3, "num_games": 100,
                                  "required": 0.9, "met": True}]}  # fmt: skip
    judged.write_text(json.dumps(_judged(bot, [60, 62, 65]) | {"floor": floor}))
    runs = tmp_path / "league_runs.jsonl"  # record_league's lines: this bot's, its own earlier games, another bot's
    settings = "100 games each, 120 s, greedy, kickoff jitter 5 uu (docs/{})"
    lines = [
        {"seed": 1, "bot": f"{other} (not shipped)", "gauntlet_settings": settings.format("record.json")},
        {"seed": 2, "bot": f"{bot} (not shipped)", "gauntlet_settings": settings.format("older_gauntlet.json")},
        {"seed": 3, "bot": f"{bot} (not shipped)", "gauntlet_settings": settings.format("record.json")},
    ]
    runs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    make_pretrained.league(str(record), [str(judged)])
    after = [json.loads(text) for text in runs.read_text().splitlines()]
    assert after[:2] == lines[:2]  # another bot, or the same bot's games of another record: left as they were
    assert after[2] == lines[2] | {"bot": f"{bot} (shipped as gauntlet_v2: {gauntlet_dir / 'v2.safetensors'})"}
    card = json.loads((gauntlet_dir / "v2.json").read_text())
    assert "fresh_games" not in card  # a judgement is not an eval file of fresh games
    (judgement,) = card["judged"]
    assert judgement["parent"] == "gauntlet_v1" and judgement["verdict"]["ships"] is True
    assert [s["seed"] for s in judgement["sets"]] == [0, 7, 11] and judgement["verdict"]["wins"] == 187
    assert judgement["floor"] == floor  # the floor's games, whole
    assert judgement["sets"][1] == {"seed": 7, "wins": 62, "draws": 0, "losses": 38, "goals_for": 124,
                                         "goals_against": 38}  # fmt: skip
    (gauntlet_dir / "v2.safetensors").unlink()
    lost = tmp_path / "lost.json"  # a judgement it did not pass stays on the card beside the one it passed
    lost.write_text(json.dumps(_judged(bot, [60, 49, 65])))
    make_pretrained.league(str(record), [str(lost), str(judged)])
    card = json.loads((gauntlet_dir / "v2.json").read_text())
    assert [j["verdict"]["ships"] for j in card["judged"]] == [False, True]
    assert "floor" not in card["judged"][0] and card["judged"][1]["floor"] == floor  # judged without, and with one
    assert card["judged"][0]["path"] == str(lost) and card["judged"][0]["verdict"]["reasons"] == [
        "seed 7 lost: 49W 0D 51L"
    ]


def test_an_averaged_bots_card_names_each_runs_start_by_its_gauntlet_version(tmp_path, monkeypatch) -> None:
    from rocketrl.infra.checkpoint import read_meta, save_checkpoint

    gauntlet_dir = tmp_path / "gauntlet"
    gauntlet_dir.mkdir()
    (gauntlet_dir / "v1.safetensors").write_bytes((GAUNTLET_DIR / "v1.safetensors").read_bytes())
    make_pretrained = _make_pretrained(monkeypatch, gauntlet_dir)
    copy_of_v1 = tmp_path / "kept" / "parent.safetensors"  # a local file holding gauntlet_v1's tensors
    copy_of_v1.parent.mkdir()
    copy_of_v1.write_bytes((GAUNTLET_DIR / "v1.safetensors").read_bytes())
    other = make_checkpoint(tmp_path / "other", seed=9)
    assert gauntlet_name(str(copy_of_v1)) == "gauntlet_v1"
    assert gauntlet_name(str(other)) == str(other)  # another bot's file: as written
    assert gauntlet_name("gauntlet_v1") == "gauntlet_v1"
    assert gauntlet_name(None) is None
    assert run_starts(["gauntlet_v1", str(copy_of_v1)]) == "gauntlet_v1"  # one bot, however named: once
    assert run_starts([str(copy_of_v1), str(other), str(copy_of_v1)]) == ["gauntlet_v1", str(other), "gauntlet_v1"]
    bots = []
    for seed, start in ((2, "gauntlet_v1"), (3, str(copy_of_v1)), (4, str(other))):  # runs of two generations
        path = make_checkpoint(tmp_path / f"bot{seed}", seed=seed)
        state, meta = load_checkpoint(path)
        meta["config"]["run"] = {"seed": seed, "init_from": start}
        bots.append(save_checkpoint(path, state, meta))
    soup = tmp_path / "soup.safetensors"
    assert rocketrl_main(["average", *map(str, bots), "--out", str(soup)]) == 0
    assert len(read_meta(soup)["averaged_from"]) == 3
    results = {name: _result(3, 1) for name in ("gauntlet_v1", "rule_policy", "shadow_goalie", "ball_chaser")}
    record = {
        "bot": str(soup),
        "train": "rocketrl train --preset league_1v1_next --seed S; rocketrl average ...",
        "machine": "test machine",
        "settings": "rocketrl eval --checkpoint BOT --gauntlet",
        "results": results,
    }
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    for bot in bots:  # the runs' checkpoints are gone (another machine): the average's entries still name them
        bot.unlink()
    make_pretrained.league(str(path))
    card = json.loads((gauntlet_dir / "v2.json").read_text())
    assert card["seed"] == [2, 3, 4]
    assert card["init_from"] == ["gauntlet_v1", "gauntlet_v1", str(other)]
