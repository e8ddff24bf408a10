"""ShadowGoalie and BallChaser: where they go in hand-built situations, and that they play real games."""

from __future__ import annotations

import math

import pytest
import torch
from test_rule_policy import make_obs

from rocketrl.league.match import MatchConfig, play_match
from rocketrl.policy.base import Policy
from rocketrl.policy.load import load_policy, policy_name
from rocketrl.policy.rule import ATTACK, BOOST, DEFEND, choose_target
from rocketrl.policy.scripted import BallChaser, ShadowGoalie, ball_chaser_target, shadow_goalie_target


def test_goalie_shadows_a_third_of_the_way_to_a_far_ball() -> None:
    obs = make_obs(ball=(1000.0, 3000.0, 93.0), car=(0.0, -4500.0, 17.0), boost=100.0, opponents=[(0.0, 2500.0, 17.0)])
    target, mode = shadow_goalie_target(obs)
    # own goal (0, -5120) + 0.3 * ((1000, 3000) - (0, -5120)) = (300, -2684)
    assert int(mode) == DEFEND
    assert target[0, :2].tolist() == pytest.approx([300.0, -2684.0], abs=1e-3)


def test_goalie_refuels_in_its_own_half_when_low_and_the_ball_is_far() -> None:
    obs = make_obs(ball=(0.0, 3000.0, 93.0), car=(-2800.0, -3800.0, 17.0), boost=10.0, opponents=[(0.0, 2500.0, 17.0)])
    target, mode = shadow_goalie_target(obs)
    assert int(mode) == BOOST
    assert target[0, :2].tolist() == pytest.approx([-3072.0, -4096.0])  # the nearest pad: the big corner pad


def test_goalie_challenges_a_ball_in_its_box_and_a_ball_it_reaches_first() -> None:
    in_box = make_obs(ball=(500.0, -4300.0, 93.0), car=(0.0, -5000.0, 17.0), opponents=[(0.0, -3000.0, 17.0)])
    first = make_obs(ball=(0.0, -1000.0, 93.0), car=(0.0, -2000.0, 17.0), opponents=[(0.0, 2000.0, 17.0)])
    for obs in (in_box, first):
        target, mode = shadow_goalie_target(obs)
        rule_target, rule_mode = choose_target(obs)
        assert int(mode) == int(rule_mode) and torch.equal(target, rule_target)
    # The same ball, but the opponent gets there first: the goalie stays home.
    contested = make_obs(ball=(0.0, -1000.0, 93.0), car=(0.0, -2000.0, 17.0), opponents=[(0.0, -800.0, 17.0)])
    assert int(shadow_goalie_target(contested)[1]) == DEFEND


def test_beaten_goalie_races_back_to_its_goal() -> None:
    obs = make_obs(ball=(0.0, -1000.0, 93.0), car=(500.0, 1000.0, 17.0), boost=100.0, opponents=[(0.0, -500.0, 17.0)])
    target, mode = shadow_goalie_target(obs)
    assert int(mode) == DEFEND
    assert target[0, :2].tolist() == pytest.approx([0.0, -4820.0])


def test_chaser_drives_just_behind_the_ball_on_the_line_from_the_opponent_goal() -> None:
    obs = make_obs(ball=(1000.0, 0.0, 93.0), car=(0.0, -2000.0, 17.0), boost=0.0)
    target, mode = ball_chaser_target(obs)
    # aim (600, 5320); away = unit((1000, 0) - aim); offset = min(0.15 * |ball - car|, 250) = 250
    away = torch.tensor([400.0, -5320.0]) / math.hypot(400.0, 5320.0)
    expected = torch.tensor([1000.0, 0.0]) + away * 250.0
    assert int(mode) == ATTACK
    assert target[0, :2].tolist() == pytest.approx(expected.tolist(), abs=1e-2)


@pytest.mark.parametrize("name, cls", [("shadow_goalie", ShadowGoalie), ("ball_chaser", BallChaser)])
def test_scripted_opponents_load_by_name_and_fit_the_policy_contract(name, cls) -> None:
    policy = load_policy(name)
    assert isinstance(policy, cls) and isinstance(policy, Policy) and policy_name(name) == name
    obs = torch.randn(6, 180) * 0.5
    controls, state = policy.act(obs, None)
    assert state is None and controls.shape == (6, 8) and torch.isfinite(controls).all()
    assert torch.equal(controls, policy.act(obs, None)[0])  # deterministic


def test_both_beat_a_random_policy_in_short_games() -> None:
    config = MatchConfig.games(num_games=4, game_seconds=30.0, num_arenas=4, seed=2, stepping="serial", num_workers=1)
    for name in ("shadow_goalie", "ball_chaser"):
        result = play_match(load_policy(name), load_policy("random"), config, name, "random")
        assert result.goals_for > result.goals_against, result.summary()
