"""The gauntlet (every shipped bot, frozen, and the scripted opponents) and runs that start from a trained bot."""

from __future__ import annotations

import json

import pytest
import torch
from export_helpers import make_checkpoint

from rocketrl.cli import main as rocketrl_main
from rocketrl.config import load_config
from rocketrl.infra.checkpoint import load_checkpoint
from rocketrl.policy.load import (
    GAUNTLET_DIR,
    gauntlet,
    gauntlet_bots,
    load_policy,
    policy_name,
    resolve_checkpoint,
)
from rocketrl.ppo.trainer import Trainer

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


def test_eval_gauntlet_plays_every_gauntlet_bot_and_scripted_opponent(tmp_path, capsys) -> None:
    out = tmp_path / "gauntlet.json"
    args = ["eval", "--checkpoint", "gauntlet_v1", "--gauntlet", "--num-games", "2", "--game-seconds", "5",
            "--no-ratings", "--json", str(out)]  # fmt: skip
    assert rocketrl_main(args) == 0
    report = json.loads(out.read_text())
    met = [r["name_b"] for r in report["results"]]
    assert met == [o for o in gauntlet() if o != "gauntlet_v1"]
    assert all(r["num_games"] == 2 for r in report["results"])


def test_a_run_starts_from_a_checkpoints_network_and_normalizer(tmp_path) -> None:
    checkpoint = make_checkpoint(tmp_path, hidden=(64, 64))
    cfg = load_config(None, [*SMALL, "--model.actor-hidden", "64,64", "--model.critic-hidden", "64,64",
                             "--run.logdir", str(tmp_path), "--run.name", "init"])  # fmt: skip
    trainer = Trainer(cfg)
    try:
        trainer.init_from(str(checkpoint))
        state, _ = load_checkpoint(checkpoint)
        for name, value in trainer.model.state_dict().items():
            assert torch.equal(value, state["model"][name]), name
        assert torch.equal(trainer.algorithm.obs_norm.state_dict()["mean"], state["obs_norm"]["mean"])
    finally:
        trainer.close()


def test_a_network_of_another_shape_is_refused_by_name(tmp_path) -> None:
    checkpoint = make_checkpoint(tmp_path, hidden=(64, 64))
    cfg = load_config(None, [*SMALL, "--model.actor-hidden", "32,32", "--model.critic-hidden", "32,32",
                             "--run.logdir", str(tmp_path), "--run.name", "other"])  # fmt: skip
    trainer = Trainer(cfg)
    try:
        with pytest.raises(ValueError, match=r"run.init_from=.*actor\.0\.weight"):
            trainer.init_from(str(checkpoint))
    finally:
        trainer.close()
