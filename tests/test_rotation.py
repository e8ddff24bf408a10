"""The rotation team (rocketrl/policy/rotation.py): roles agreed by teammates, where each role goes, real games."""

from __future__ import annotations

import pytest
import torch
from test_rule_policy import make_obs

from rocketrl.league.match import MatchConfig, play_match
from rocketrl.policy.base import Policy
from rocketrl.policy.load import gauntlet, load_policy, policy_name
from rocketrl.policy.rotation import FIRST, LAST, SECOND, rotation_target, team_roles, without_teammates
from rocketrl.policy.rule import DEFEND, GOALIE, choose_target, rule_controls
from rocketrl.policy.scripted import Rotation

BALL = (500.0, 0.0, 93.0)


def team_obs(cars: list[tuple[float, float, float]], ball=BALL, **kwargs) -> torch.Tensor:
    """[K, 180]: the observation of each of K teammates (the others in its teammate slots)."""
    rows = [make_obs(ball, car, mates=[c for c in cars if c is not car], **kwargs) for car in cars]
    return torch.cat(rows)


def test_teammates_agree_on_one_first_second_and_last_man() -> None:
    cars = [(0.0, -1000.0, 17.0), (-2000.0, -3000.0, 17.0), (1500.0, -4500.0, 17.0)]
    role, alive = team_roles(team_obs(cars))
    assert role.tolist() == [FIRST, SECOND, LAST] and alive.tolist() == [3, 3, 3]
    # Two cars: the nearer goes, the other is the last man back.
    role, alive = team_roles(team_obs(cars[:2]))
    assert role.tolist() == [FIRST, LAST] and alive.tolist() == [2, 2]


def test_a_car_on_the_far_side_of_the_ball_rotates_back_instead_of_challenging() -> None:
    # Car 0 is 600 uu past the ball (up the field), car 1 2000 uu goal-side: car 1 challenges.
    cars = [(1500.0, 600.0, 17.0), (500.0, -2000.0, 17.0)]
    obs = team_obs(cars)
    role, _ = team_roles(obs)
    assert role.tolist() == [LAST, FIRST]
    target, mode = rotation_target(obs)
    # Back by the far post (the ball is at x > 0), a path that passes the ball 670 uu away.
    assert target[0, :2].tolist() == pytest.approx([-900.0, -5120.0 + 300.0]) and int(mode[0]) == DEFEND
    # Straight behind the ball, the way back runs around it, 450 uu beside it.
    target, _ = rotation_target(team_obs([(500.0, 600.0, 17.0), (500.0, -2000.0, 17.0)]))
    assert (target[0, :2] - torch.tensor(BALL[:2])).norm() == pytest.approx(450.0, abs=1.0)


def test_the_first_man_plays_as_a_lone_rule_policy_and_the_last_man_shadows() -> None:
    cars = [(0.0, -1000.0, 17.0), (-2000.0, -3000.0, 17.0), (1500.0, -4500.0, 17.0)]
    obs = team_obs(cars)
    target, mode = rotation_target(obs)
    alone_target, alone_mode = choose_target(without_teammates(obs[:1]))
    assert torch.equal(target[0], alone_target[0]) and int(mode[0]) == int(alone_mode[0])
    # Last of three: a quarter of the way from the own goal (0, -5120) to the ball (500, 0), at rest.
    assert int(mode[2]) == GOALIE
    assert target[2, :2].tolist() == pytest.approx([125.0, -3840.0], abs=1e-3)


def test_a_team_of_one_plays_exactly_as_rule_policy() -> None:
    obs = make_obs(BALL, (0.0, -1000.0, 17.0), opponents=[(0.0, 2000.0, 17.0)])
    policy = load_policy("rotation")
    assert torch.equal(policy.act(obs, None)[0], rule_controls(obs))


def test_rotation_loads_by_name_fits_the_policy_contract_and_joins_team_gauntlets() -> None:
    policy = load_policy("rotation")
    assert isinstance(policy, Rotation) and isinstance(policy, Policy) and policy_name("rotation") == "rotation"
    obs = torch.randn(6, 180) * 0.5
    controls, state = policy.act(obs, None)
    assert state is None and controls.shape == (6, 8) and torch.isfinite(controls).all()
    assert torch.equal(controls, policy.act(obs, None)[0])  # deterministic
    assert "rotation" in gauntlet(team=True) and "rotation" not in gauntlet()


def test_rotation_beats_a_random_team_in_short_2v2_games() -> None:
    config = MatchConfig.games(
        num_games=2, game_seconds=30.0, num_arenas=2, seed=2, stepping="serial", num_workers=1, blue_size=2
    )
    result = play_match(load_policy("rotation"), load_policy("random"), config, "rotation", "random")
    assert result.goals_for > result.goals_against, result.summary()
