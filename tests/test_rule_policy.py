"""Tests of RulePolicy, the scripted soccar bot: scoring, winning, determinism, jumps, defence, roles.

Game tests run RocketSim arenas serially with fixed seeds (the policy is deterministic, so each run
gives the same result); targeting tests use hand-made observations in the blue-side frame.
"""

from __future__ import annotations

import pytest
import torch

from rocketrl.env.batched import BatchedEnv
from rocketrl.env.config import EnvConfig
from rocketrl.policy.base import Policy, to_controls
from rocketrl.policy.rule import ATTACK, DEFEND, GOALIE, SUPPORT, RulePolicy, choose_target
from rocketrl.sim.state import ResetState

S = 2300.0
STEPS_PER_SECOND = 15  # tick_skip 8 at 120 ticks per second


def make_obs(
    ball: tuple[float, float, float],
    car: tuple[float, float, float],
    forward: tuple[float, float, float] = (0.0, 1.0, 0.0),
    car_vel: tuple[float, float, float] = (0.0, 0.0, 0.0),
    on_ground: bool = True,
    has_flip: bool = True,
    prev_jump: bool = False,
    boost: float = 50.0,
    mates: list[tuple[float, float, float]] = (),
    opponents: list[tuple[float, float, float]] = (),
) -> torch.Tensor:
    """One observation [1, 180] in the blue-side frame (positions in uu), upright car, ball at rest."""
    obs = torch.zeros(180)
    ball_t, car_t = torch.tensor(ball), torch.tensor(car)
    fwd, up = torch.tensor(forward), torch.tensor([0.0, 0.0, 1.0])
    left = torch.cross(up, fwd, dim=0)
    vel = torch.tensor(car_vel)
    obs[0:3] = ball_t / S
    obs[14] = float(prev_jump)
    obs[17:51] = 1.0
    obs[51:54] = car_t / S
    obs[54:57] = vel / S
    obs[60:63], obs[63:66] = fwd, up
    obs[66] = boost / 100.0
    obs[67], obs[68], obs[69] = float(on_ground), float(on_ground), float(has_flip)
    rel = ball_t - car_t
    obs[71:74] = torch.stack([rel @ fwd, rel @ left, rel @ up]) / S
    obs[74:77] = torch.stack([-vel @ fwd, -vel @ left, -vel @ up]) / S
    obs[77:80] = (torch.tensor([0.0, 5120.0, 321.0]) - car_t) / S
    for slot, pos in [(i, p) for i, p in enumerate(mates)] + [(2 + i, p) for i, p in enumerate(opponents)]:
        base = 80 + 20 * slot
        obs[base : base + 3] = (torch.tensor(pos) - car_t) / S
        obs[base + 9 : base + 12] = torch.tensor([0.0, 1.0, 0.0])
        obs[base + 12 : base + 15] = up
        obs[base + 16], obs[base + 17], obs[base + 19] = 1.0, 1.0, 1.0
    return obs.unsqueeze(0)


def park_idle_cars(setter, rule_car: torch.Tensor):
    """Wrap a state setter: at the first reset of all arenas, the idle car of each arena (the one that
    `rule_car` [A] does not name) starts parked in a corner of its own half, out of the way."""

    def wrapped(k: int, generator: torch.Generator) -> ResetState:
        state = setter(k, generator)
        if k == rule_car.shape[0]:
            rows = torch.arange(k)
            idle = 1 - rule_car
            corner = torch.tensor([[-3800.0, -4800.0, 17.0], [3800.0, 4800.0, 17.0]])  # blue's, orange's own corner
            state.car_pos[rows, idle] = corner[idle]
            state.car_vel[rows, idle] = 0.0
        return state

    return wrapped


def test_scores_on_an_empty_net_from_random_states_on_either_side() -> None:
    """1v1 arenas where one car idles in a corner: RulePolicy plays blue in half of them (attacking +y)
    and orange in the other half (attacking -y), from random states; count who scores first within 45 s of game time."""
    arenas, seconds = 48, 45.0
    config = EnvConfig(
        num_arenas=arenas, blue_size=1, orange_size=1, stepping="serial", num_workers=1,
        state_setter={"random": 1.0}, episode_seconds=seconds, seed=0,
    )  # fmt: skip
    rule_car = torch.tensor([0] * (arenas // 2) + [1] * (arenas // 2))
    rows = torch.arange(arenas)
    policy = RulePolicy()
    first = torch.full((arenas,), -1, dtype=torch.long)  # team that scored first, -1 none
    finished = torch.zeros(arenas, dtype=torch.bool)
    with BatchedEnv(config) as env:
        env.setter = park_idle_cars(env.setter, rule_car)
        obs = env.reset()
        for _ in range(int(seconds * STEPS_PER_SECOND)):
            controls = torch.zeros(arenas, 2, 8)
            controls[rows, rule_car] = policy.act(obs[rows, rule_car], None)[0]
            step = env.step_controls(controls)
            if step.episodes:
                ended = step.episodes["arena"]
                blue, orange = step.episodes["goals_blue"] > 0, step.episodes["goals_orange"] > 0
                scored = torch.where(blue, 0, torch.where(orange, 1, -1))
                fresh = ~finished[ended]
                first[ended[fresh]] = scored[fresh]
                finished[ended] = True
            obs = step.obs
    for team in (0, 1):
        mine = rule_car == team
        rate = (first[mine] == team).float().mean().item()
        assert rate >= 0.6, f"team {team}: scored first in {rate:.0%} of arenas within {seconds} s"
        assert (first[mine] == 1 - team).sum() <= 3, f"team {team}: own goals"


def test_beats_a_random_policy_in_1v1_on_either_side() -> None:
    arenas, seconds = 8, 30.0
    config = EnvConfig(
        num_arenas=arenas, blue_size=1, orange_size=1, stepping="serial", num_workers=1,
        state_setter={"kickoff": 0.5, "random": 0.5}, episode_seconds=seconds, seed=1,
    )  # fmt: skip
    rule_car = torch.tensor([0] * (arenas // 2) + [1] * (arenas // 2))  # blue in half the arenas, orange in the rest
    rows = torch.arange(arenas)
    policy, generator = RulePolicy(), torch.Generator().manual_seed(0)
    goals_for = goals_against = 0
    with BatchedEnv(config) as env:
        obs = env.reset()
        for _ in range(int(seconds * STEPS_PER_SECOND)):
            random_actions = torch.randint(0, 90, (arenas, 2), generator=generator)
            controls = to_controls("discrete", random_actions.flatten()).view(arenas, 2, 8)
            controls[rows, rule_car] = policy.act(obs[rows, rule_car], None)[0]
            step = env.step_controls(controls)
            if step.episodes:
                side = rule_car[step.episodes["arena"]]
                blue, orange = step.episodes["goals_blue"], step.episodes["goals_orange"]
                goals_for += int(torch.where(side == 0, blue, orange).sum())
                goals_against += int(torch.where(side == 0, orange, blue).sum())
            obs = step.obs
    assert goals_for >= 4 * goals_against + 8, f"goals for {goals_for}, against {goals_against}"


def test_controls_are_valid_and_deterministic_for_every_team_size() -> None:
    policy = RulePolicy(seed=3)
    assert isinstance(policy, Policy) and policy.action_kind == "controls"
    assert policy.initial_state(4, "cpu") is None
    for blue, orange in [(1, 1), (2, 2), (3, 3), (2, 1), (1, 3)]:
        config = EnvConfig(
            num_arenas=4, blue_size=blue, orange_size=orange, stepping="serial", num_workers=1,
            state_setter={"random": 1.0}, seed=blue * 10 + orange,
        )  # fmt: skip
        with BatchedEnv(config) as env:
            obs = env.reset()
            for _ in range(20):
                flat = obs.reshape(-1, 180)
                controls, state = policy.act(flat, None)
                assert state is None
                assert controls.shape == (flat.shape[0], 8) and controls.dtype == torch.float32
                assert torch.isfinite(controls).all()
                assert (controls[:, :5].abs() <= 1.0).all()
                assert ((controls[:, 5:] == 0.0) | (controls[:, 5:] == 1.0)).all()
                again, _ = RulePolicy(seed=3).act(flat.clone(), None)
                assert torch.equal(controls, again)
                obs = env.step_controls(controls.view(obs.shape[0], obs.shape[1], 8)).obs


def test_steers_toward_a_target_on_its_left_and_drives_straight_at_a_lined_up_ball() -> None:
    policy = RulePolicy()
    # Facing +y, the ball far ahead and to -x: -x is the car's left (up x forward), steer > 0 turns left.
    controls, _ = policy.act(make_obs(ball=(-2000.0, 2000.0, 93.0), car=(0.0, -2000.0, 17.0)), None)
    assert controls[0, 1] > 0.3 and controls[0, 0] > 0
    straight, _ = policy.act(make_obs(ball=(0.0, -1400.0, 93.0), car=(0.0, -2000.0, 17.0)), None)
    assert straight[0, 1].abs() < 0.05 and straight[0, 6] == 1.0  # no steering, boost on


def test_jumps_then_dodges_forward_into_a_ball_in_reach() -> None:
    policy = RulePolicy()
    # A ball in the air just ahead of a car driving at it: press jump.
    rising = make_obs(ball=(0.0, -750.0, 260.0), car=(0.0, -1000.0, 17.0), car_vel=(0.0, 1200.0, 0.0))
    assert policy.act(rising, None)[0][0, 5] == 1.0
    # A ball on the ground just ahead, lined up with the opponent goal: jump for a dodge.
    shot = make_obs(ball=(0.0, -800.0, 93.0), car=(0.0, -1000.0, 17.0), car_vel=(0.0, 1500.0, 0.0))
    assert policy.act(shot, None)[0][0, 5] == 1.0
    # Airborne right after that jump (jump still held, ball below the roof): release it.
    held = make_obs(ball=(0.0, -800.0, 93.0), car=(0.0, -950.0, 60.0), on_ground=False, prev_jump=True)
    assert policy.act(held, None)[0][0, 5] == 0.0
    # Airborne, jump released, flip available, ball close in front: forward dodge (jump, pitch -1).
    dodge = make_obs(ball=(0.0, -800.0, 93.0), car=(0.0, -950.0, 70.0), on_ground=False, prev_jump=False)
    controls = policy.act(dodge, None)[0][0]
    assert controls[5] == 1.0 and controls[2] < -0.9
    # Nothing within reach: no jump.
    far = make_obs(ball=(0.0, 1500.0, 400.0), car=(0.0, -1000.0, 17.0))
    assert policy.act(far, None)[0][0, 5] == 0.0


def test_falls_back_toward_its_own_goal_when_the_ball_is_behind_it() -> None:
    # The ball between the car and its own goal (-y): defend near the own goal.
    target, mode = choose_target(make_obs(ball=(0.0, -1000.0, 93.0), car=(1500.0, 1500.0, 17.0), boost=80.0))
    assert mode.item() == DEFEND
    assert target[0, 1] < -3000.0 and target[0, 0].abs() < 900.0
    # Straight behind the ball on the way back: go around it rather than push it into the own goal.
    target, mode = choose_target(make_obs(ball=(0.0, -1000.0, 93.0), car=(0.0, 1500.0, 17.0), boost=80.0))
    assert mode.item() == DEFEND
    assert 300.0 < (target[0, :2] - torch.tensor([0.0, -1000.0])).norm() < 600.0
    # An opponent much closer to the ball: defend as well, even from behind the ball.
    target, mode = choose_target(
        make_obs(ball=(0.0, 2000.0, 93.0), car=(0.0, -2500.0, 17.0), opponents=[(0.0, 2400.0, 17.0)], boost=80.0)
    )
    assert mode.item() == DEFEND and target[0, 1] < -3000.0
    # Behind the ball on the shot line: attack, aiming at a point behind the ball toward the own goal.
    target, mode = choose_target(make_obs(ball=(1000.0, 0.0, 93.0), car=(2500.0, -2000.0, 17.0), boost=80.0))
    assert mode.item() == ATTACK
    assert target[0, 1] < 0.0 and target[0, 0] > 1000.0  # on the far side of the ball from the goal at (0, 5120)


def test_only_the_teammate_closest_to_the_ball_attacks() -> None:
    ball = (0.0, 0.0, 93.0)
    cars = [(0.0, -800.0, 17.0), (1500.0, -2500.0, 17.0), (-500.0, -4000.0, 17.0)]
    modes = []
    for i, car in enumerate(cars):
        mates = [c for j, c in enumerate(cars) if j != i]
        modes.append(choose_target(make_obs(ball=ball, car=car, mates=mates, boost=80.0))[1].item())
    assert modes == [ATTACK, SUPPORT, GOALIE]
    # Two cars at exactly the same distance (mirror kickoff spawns): exactly one of them attacks.
    pair = [(-2048.0, -2560.0, 17.0), (2048.0, -2560.0, 17.0)]
    modes = [choose_target(make_obs(ball=ball, car=pair[i], mates=[pair[1 - i]]))[1].item() for i in range(2)]
    assert sorted(modes) == [ATTACK, SUPPORT]


def test_compiled_rules_give_the_eager_controls() -> None:
    config = EnvConfig(num_arenas=16, stepping="serial", num_workers=1, state_setter={"random": 1.0}, seed=5)
    eager, compiled = RulePolicy(), RulePolicy(compiled=True)
    with BatchedEnv(config) as env:
        obs = env.reset()
        for _ in range(15):
            flat = obs.reshape(-1, 180)
            want, _ = eager.act(flat, None)
            got, _ = compiled.act(flat, None)
            # Fused kernels round differently in the last bits; every decision (jump, boost, handbrake) agrees.
            torch.testing.assert_close(got, want, rtol=0, atol=1e-4)
            assert torch.equal(got[:, 5:], want[:, 5:])
            obs = env.step_controls(want.view(obs.shape[0], obs.shape[1], 8)).obs
    assert compiled.compiled and compiled._controls.compiled_ran


def test_a_rule_compile_failure_warns_and_stays_eager(monkeypatch) -> None:
    def broken(fn, *args, **kwargs):
        def fail(*a, **k):
            raise RuntimeError("no compiler here")

        return fail

    monkeypatch.setattr(torch, "compile", broken)
    policy = RulePolicy(compiled=True)
    obs = torch.zeros(4, 180)
    with pytest.warns(UserWarning, match="RulePolicy: torch.compile failed"):
        controls, _ = policy.act(obs, None)
    assert torch.equal(controls, RulePolicy().act(obs, None)[0]) and not policy.compiled


def test_compiled_rule_policy_is_reachable_from_eval_and_the_league(tmp_path) -> None:
    from rocketrl.league.config import LeagueConfig
    from rocketrl.league.league import League
    from rocketrl.policy.load import load_policy

    assert load_policy("rule_policy", compile_rule=True).compiled
    assert not load_policy("rule_policy").compiled
    assert League(LeagueConfig(), tmp_path, torch.device("cpu"), compile_rule=True).rule.compiled
    assert not League(LeagueConfig(), tmp_path, torch.device("cpu")).rule.compiled
