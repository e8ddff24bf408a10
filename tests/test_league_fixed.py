"""Fixed opponents of the league (`league.fixed_opponents`): shipped bots join the pool at the start, are copied
into the run, stay pickable whatever `pool_size`, play with their own network, and survive a resume."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from rocketrl.config import load_config
from rocketrl.infra.checkpoint import load_checkpoint
from rocketrl.league.config import LeagueConfig
from rocketrl.league.league import LEARNER, SNAPSHOT_NETWORKS_KEPT, League
from rocketrl.policy.actor_critic import weights_obs_size
from rocketrl.policy.load import gauntlet_bots, load_policy, resolve_checkpoint
from rocketrl.ppo.trainer import Trainer


def _obs_size(spec: str) -> int:
    state, _ = load_checkpoint(resolve_checkpoint(spec))
    return weights_obs_size(state["model"])


def test_gauntlet_bots_join_the_pool_except_the_start_and_are_never_pushed_out(tmp_path: Path) -> None:
    fixed = ["gauntlet", "pretrained", "gauntlet_v1"]  # pretrained is the newest gauntlet bot: each file once
    league = League(LeagueConfig(fixed_opponents=fixed, pool_size=1), tmp_path, torch.device("cpu"))
    league.table[LEARNER].elo = 1612.0
    names = league.add_fixed_opponents(_obs_size("gauntlet_v1"), start_file=resolve_checkpoint("pretrained"))
    # The newest gauntlet bot (pretrained) is where the learner starts: its first snapshot.
    assert names == [f"fixed_{bot}" for bot in gauntlet_bots()[:-1]] and names[0] == "fixed_gauntlet_v1"
    assert league.table["fixed_gauntlet_v1"].elo == 1612.0
    for step in (0, 4, 8):
        name = f"snapshot_{step}"
        league.snapshots.append({"name": name, "step": step, "path": f"{name}.safetensors"})
        league.table.add(name)
    assert league.pool_names() == [*names, "snapshot_8"]
    pool, probs = league.pick_probabilities()
    assert pool == [*names, "snapshot_8"] and probs.sum() == pytest.approx(1.0)

    # The run keeps its own copy, with the same weights and normalizer as the shipped file.
    copied, _ = load_checkpoint(tmp_path / "league" / "snapshots" / "fixed_gauntlet_v1.safetensors")
    shipped, _ = load_checkpoint(resolve_checkpoint("gauntlet_v1"))
    for part in ("model", "obs_norm"):
        assert copied[part].keys() == shipped[part].keys()
        for key in shipped[part]:
            assert torch.equal(copied[part][key], shipped[part][key]), (part, key)
    # ... and the pool plays it with its own network: the same actions as the shipped bot.
    obs = torch.randn(64, _obs_size("gauntlet_v1"))
    ours, theirs = league.snapshot_policy("fixed_gauntlet_v1"), load_policy("gauntlet_v1", deterministic=True)
    ours.deterministic = True
    assert torch.equal(ours.act(obs)[0], theirs.act(obs)[0])

    resumed = League(LeagueConfig(fixed_opponents=["gauntlet"], pool_size=1), tmp_path, torch.device("cpu"))
    resumed.load_state_dict(league.state_dict())
    assert resumed.pool_names() == league.pool_names()


def test_a_bot_that_sees_another_observation_is_refused_by_name(tmp_path: Path) -> None:
    league = League(LeagueConfig(fixed_opponents=["gauntlet_v1"]), tmp_path, torch.device("cpu"))
    with pytest.raises(ValueError, match=r"league.fixed_opponents: 'gauntlet_v1' sees \d+ observation floats"):
        league.add_fixed_opponents(_obs_size("gauntlet_v1") + 1)
    with pytest.raises(FileNotFoundError, match="gauntlet_v99"):
        League(LeagueConfig(fixed_opponents=["gauntlet_v99"]), tmp_path, torch.device("cpu")).add_fixed_opponents(1)


def test_fixed_opponents_setting_is_checked_and_read_from_the_command_line() -> None:
    with pytest.raises(ValueError, match="league.fixed_opponents"):
        LeagueConfig(fixed_opponents="gauntlet_v1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="league.fixed_opponents"):
        LeagueConfig(fixed_opponents=[""])
    cfg = load_config(None, ["--league.fixed-opponents", "gauntlet_v1,gauntlet_v2"])
    assert cfg.league.fixed_opponents == ["gauntlet_v1", "gauntlet_v2"]


@contextmanager
def trained_against_the_pool(tmp_path: Path, name: str, *overrides: str) -> Iterator[Trainer]:
    """A 512-step run of 4 arenas, every one against the pool (`overrides` add to or replace these settings),
    trained and open; closed after the block."""
    base = [
        "--env.num-arenas", "4", "--env.stepping", "serial", "--ppo.rollout-steps", "32", "--ppo.minibatches", "2",
        "--ppo.epochs", "1", "--run.timesteps", "512", "--run.checkpoint-interval", "10000",
        "--run.logdir", str(tmp_path), "--run.name", name, "--league.opponents", "checkpoint=1.0",
    ]  # fmt: skip
    trainer = Trainer(load_config(None, [*base, *overrides]))
    try:
        trainer.verify()
        trainer.learn()
        yield trainer
    finally:
        trainer.close()


def test_a_run_trains_against_a_fixed_bot_with_a_network_unlike_its_own(tmp_path: Path) -> None:
    """A tiny learner (32 units) meets gauntlet_v1 (its own, larger network) in its checkpoint arenas."""
    with trained_against_the_pool(
        tmp_path, "fixed", "--model.actor-hidden", "[32]", "--model.critic-hidden", "[32]",
        "--league.fixed-opponents", "gauntlet_v1", "--league.snapshot-interval", "1000000", "--league.old-floor", "1.0",
    ) as trainer:  # fmt: skip
        league = trainer.league
        assert league is not None
        assert [s["name"] for s in league.snapshots] == ["snapshot_000000000000", "fixed_gauntlet_v1"]
        assert "fixed_gauntlet_v1" in league._snapshot_policies  # picked and played
        assert (trainer.run_dir / "league" / "snapshots" / "fixed_gauntlet_v1.safetensors").is_file()


def test_an_exploiter_plays_only_its_fixed_bots_even_the_one_it_starts_from(tmp_path: Path) -> None:
    """snapshot_interval 0: the learner never joins the pool, so a run that starts from gauntlet_v1 and names it
    in fixed_opponents trains against gauntlet_v1 alone (the bot is kept, not left out as the first snapshot)."""
    with trained_against_the_pool(
        tmp_path, "exploiter", "--run.init-from", "gauntlet_v1", "--league.fixed-opponents", "gauntlet_v1",
        "--league.snapshot-interval", "0",
    ) as trainer:  # fmt: skip
        league = trainer.league
        assert league is not None and trainer.counters.global_step >= 512
        assert [s["name"] for s in league.snapshots] == ["fixed_gauntlet_v1"]
        assert league.pool_names() == ["fixed_gauntlet_v1"]
        assert set(league._snapshot_policies) == {"fixed_gauntlet_v1"}  # the only bot picked and played


def test_an_empty_pool_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"league.snapshot_interval=0 leaves the pool empty.*fixed_opponents"):
        LeagueConfig(opponents={"checkpoint": 1.0}, snapshot_interval=0)
    with pytest.raises(ValueError, match=r"league.snapshot_interval=-1: must be 0"):
        LeagueConfig(snapshot_interval=-1)
    LeagueConfig(opponents={"selfplay": 0.5, "rule": 0.5}, snapshot_interval=0)  # no checkpoint arenas: no pool needed


def test_a_curriculum_stage_with_checkpoint_arenas_and_an_empty_pool_is_refused_before_training(
    tmp_path: Path,
) -> None:
    """A curriculum stage can ask for checkpoint arenas the config's own shares do not have: refused when the league
    is built, not when the stage begins."""
    path = tmp_path / "cur.yaml"
    path.write_text(
        "stages:\n"
        "  - {name: warmup, opponents: {rule: 1.0}, until_steps: 512}\n"
        "  - {name: pool, opponents: {checkpoint: 1.0}}\n"
    )
    config = LeagueConfig(opponents={"rule": 1.0}, snapshot_interval=0, curriculum=str(path))
    with pytest.raises(ValueError, match=r"pool empty but curriculum stage 'pool'.*league.fixed_opponents"):
        League(config, tmp_path, torch.device("cpu"))
    League(LeagueConfig(**{**vars(config), "fixed_opponents": ["gauntlet_v1"]}), tmp_path, torch.device("cpu"))


def test_the_exploiter_preset_plays_the_shipped_bot_alone_from_the_shipped_bot() -> None:
    from rocketrl.config import config_to_dict, preset_config_path

    exploiter = load_config(preset_config_path("exploiter_1v1"))
    long = load_config(preset_config_path("league_1v1_long"))
    assert exploiter.league.opponents == {"checkpoint": 1.0} and exploiter.league.snapshot_interval == 0
    assert exploiter.league.fixed_opponents == ["pretrained"] and exploiter.run.init_from == "pretrained"
    assert resolve_checkpoint(exploiter.run.init_from) == resolve_checkpoint(long.run.init_from)  # the newest bot
    # everything else is the long league preset's
    a, b = config_to_dict(exploiter), config_to_dict(long)
    for section, key in (("league", "opponents"), ("league", "snapshot_interval"), ("league", "fixed_opponents"),
                         ("run", "init_from"), ("run", "timesteps")):  # fmt: skip
        a[section].pop(key), b[section].pop(key)
    assert a == b


def test_the_league_holds_a_bounded_number_of_snapshot_networks(tmp_path: Path) -> None:
    """A long run's live memory stops growing: at most SNAPSHOT_NETWORKS_KEPT networks are held, the first loaded
    goes first, and one loaded again plays as before."""
    league = League(LeagueConfig(fixed_opponents=["gauntlet"], pool_size=1), tmp_path, torch.device("cpu"))
    names = league.add_fixed_opponents(_obs_size("gauntlet_v1"), start_file=resolve_checkpoint("pretrained"))
    assert len(names) > SNAPSHOT_NETWORKS_KEPT + 2
    obs = torch.randn(16, _obs_size("gauntlet_v1"))
    first = league.snapshot_policy(names[0])
    first.deterministic = True
    before = first.act(obs)[0]
    for name in names[1 : SNAPSHOT_NETWORKS_KEPT + 3]:
        league.snapshot_policy(name)
        assert len(league._snapshot_policies) <= SNAPSHOT_NETWORKS_KEPT
    assert list(league._snapshot_policies) == names[3 : SNAPSHOT_NETWORKS_KEPT + 3]  # the first three loaded went
    again = league.snapshot_policy(names[0])
    again.deterministic = True
    assert again is not first and torch.equal(again.act(obs)[0], before)
    assert len(league._snapshot_policies) == SNAPSHOT_NETWORKS_KEPT and names[3] not in league._snapshot_policies
