"""Parity scenarios: the same initial states and controls run through RocketSim and the warp engine.

Each measure returns (rocketsim value, warp value); `run_all` lists them with their error, bound and
pass/miss. Used by tests/test_warp_parity.py and benchmarks/parity.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from rocketrl.sim.state import BatchState, ResetState

BALL_SECONDS = 2.0
PARK = (-3500.0, -300.0, 17.0)
"""A spot for the car during ball scenarios, clear of every ball path."""

BALL_SCENARIOS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "free_flight": ((0.0, 0.0, 1000.0), (800.0, 600.0, 900.0)),
    "floor": ((0.0, 0.0, 800.0), (500.0, 300.0, -600.0)),
    "side_wall": ((3000.0, 0.0, 400.0), (2000.0, 300.0, 200.0)),
    "back_wall": ((2500.0, 3500.0, 500.0), (0.0, 2500.0, 300.0)),
    "ceiling": ((0.0, 1000.0, 1500.0), (300.0, 0.0, 1400.0)),
    "curved_transition": ((3500.0, 0.0, 400.0), (1000.0, 0.0, -1000.0)),
    "corner": ((2500.0, 3500.0, 300.0), (1500.0, 1500.0, 0.0)),
    "goal_post": ((1100.0, 4000.0, 200.0), (-300.0, 2000.0, 0.0)),
    "inside_goal": ((600.0, 4000.0, 300.0), (300.0, 2000.0, 100.0)),
}
GOAL_SCENARIOS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "rolls_in_+y": ((0.0, 4500.0, 93.15), (0.0, 1500.0, 0.0)),
    "rolls_in_-y": ((300.0, -4500.0, 93.15), (0.0, -1500.0, 0.0)),
    "lob_in": ((-400.0, 3000.0, 300.0), (0.0, 1800.0, 700.0)),
    "wide_of_post": ((1200.0, 4500.0, 93.15), (0.0, 1500.0, 0.0)),
    "over_bar": ((0.0, 4000.0, 900.0), (0.0, 1500.0, 0.0)),
}


@dataclass
class Measure:
    name: str
    rocketsim: float
    warp: float
    error: float
    bound: float
    unit: str
    passed: bool


def make_engines(num_arenas: int, tick_skip: int, blue: int = 1, orange: int = 0):
    from rocketrl.sim.rocketsim import RocketSimEngine
    from rocketrl.sim.warp.engine import WarpEngine

    rs = RocketSimEngine(num_arenas, blue, orange, tick_skip=tick_skip, stepping="serial")
    wa = WarpEngine(num_arenas, blue, orange, tick_skip=tick_skip)
    return rs, wa


def _reset(engine, state: ResetState) -> BatchState:
    return engine.reset(torch.ones(engine.num_arenas, dtype=torch.bool), state)


def _state(ball_pos, ball_vel, car_pos, car_yaw, car_vel=None, boost: float = 100.0) -> ResetState:
    k = len(ball_pos)
    car_pos_t = torch.tensor(car_pos, dtype=torch.float32).view(k, 1, 3)
    rot = torch.zeros(k, 1, 3)
    rot[:, 0, 1] = torch.tensor(car_yaw, dtype=torch.float32)
    return ResetState(
        ball_pos=torch.tensor(ball_pos, dtype=torch.float32),
        ball_vel=torch.tensor(ball_vel, dtype=torch.float32),
        ball_ang_vel=torch.zeros(k, 3),
        car_pos=car_pos_t,
        car_vel=torch.zeros(k, 1, 3) if car_vel is None else torch.tensor(car_vel, dtype=torch.float32).view(k, 1, 3),
        car_ang_vel=torch.zeros(k, 1, 3),
        car_rotation=rot,
        car_boost=torch.full((k, 1), boost),
    )


def run(engine, state: ResetState, steps: int, controls: Callable[[BatchState], torch.Tensor]) -> list[BatchState]:
    """States after the reset and after each of `steps` steps; controls is a function of the state."""
    states = [_reset(engine, state)]
    for _ in range(steps):
        states.append(engine.step(controls(states[-1])))
    return states


def _idle(state: BatchState) -> torch.Tensor:
    return torch.zeros(state.num_arenas, state.num_cars, 8)


def ball_paths(
    state: ResetState, steps: int, controls: Callable[[BatchState], torch.Tensor] = _idle
) -> tuple[torch.Tensor, torch.Tensor]:
    """Ball positions (steps + 1, A, 3) in RocketSim and in warp from `state`, tick skip 8, one blue car."""
    rs, wa = make_engines(state.num_arenas, 8)
    try:
        traj_rs = torch.stack([s.ball_pos for s in run(rs, state, steps, controls)])
        traj_wa = torch.stack([s.ball_pos for s in run(wa, state, steps, controls)])
    finally:
        rs.close()
        wa.close()
    return traj_rs, traj_wa


def path_and_final_error(traj_rs: torch.Tensor, traj_wa: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Distance (A,) RocketSim's ball travelled along its path, and (A,) the two balls' distance at the end."""
    path = (traj_rs[1:] - traj_rs[:-1]).norm(dim=-1).sum(0)
    return path, (traj_rs[-1] - traj_wa[-1]).norm(dim=-1)


def ball_measures() -> list[Measure]:
    """Ball position error after 2 s over the distance RocketSim's ball travelled, per surface (bound 1%)."""
    names = list(BALL_SCENARIOS)
    pos = [BALL_SCENARIOS[n][0] for n in names]
    vel = [BALL_SCENARIOS[n][1] for n in names]
    state = _state(pos, vel, [PARK] * len(names), [0.0] * len(names))
    path, final_error = path_and_final_error(*ball_paths(state, int(BALL_SECONDS * 15)))
    out = []
    for i, name in enumerate(names):
        err = float(final_error[i] / path[i])
        out.append(
            Measure(
                f"ball_{name}",
                float(path[i]),
                float(final_error[i]),
                err,
                0.01,
                "uu: RocketSim path, warp error",
                err <= 0.01,
            )
        )
    return out


RANDOM_THROWS = 64
RANDOM_THROW_SECONDS = 4.0


def random_throw_measure(throws: int = RANDOM_THROWS, seconds: float = RANDOM_THROW_SECONDS, seed: int = 0) -> Measure:
    """Ball thrown from `throws` random spots (anywhere in the field, 150 to 1850 uu high) at random
    velocities (up to 3000 uu/s across, 1500 up or down): the worst final position error over the distance
    RocketSim's ball travelled in `seconds` (bound 1%, as for the single surfaces)."""
    g = torch.Generator().manual_seed(seed)
    pos = torch.stack(
        [
            torch.rand(throws, generator=g) * 7000.0 - 3500.0,
            torch.rand(throws, generator=g) * 9000.0 - 4500.0,
            torch.rand(throws, generator=g) * 1700.0 + 150.0,
        ],
        dim=1,
    )
    vel = (torch.rand(throws, 3, generator=g) * 2.0 - 1.0) * torch.tensor([3000.0, 3000.0, 1500.0])
    state = _state(pos.tolist(), vel.tolist(), [PARK] * throws, [0.0] * throws)
    path, final_error = path_and_final_error(*ball_paths(state, int(seconds * 15)))
    errors = final_error / path
    worst = int(errors.argmax())
    err = float(errors[worst])
    return Measure(
        f"ball_random_throws_{throws}",
        float(path[worst]),
        float(final_error[worst]),
        err,
        0.01,
        "uu: RocketSim path, warp error (worst throw)",
        err <= 0.01,
    )


CAR_HITS: dict[str, tuple[float, float]] = {
    "centre_500": (500.0, 0.0),
    "centre_1400": (1400.0, 0.0),
    "centre_2000": (2000.0, 0.0),
    "offset_40": (1400.0, 40.0),
    "offset_80": (1400.0, 80.0),
}
"""Car hits on a resting ball: name -> (car speed uu/s, sideways offset of the ball uu)."""


def car_hit_measures() -> list[Measure]:
    """A car driving (full throttle) from 600 uu away into a resting ball: the ball's position 1 s after the
    start, error over the distance RocketSim's ball travelled (bound 5%, as for the car measures)."""
    names = list(CAR_HITS)
    k = len(names)
    state = _state(
        [(CAR_HITS[n][1], 0.0, 93.15) for n in names],
        [(0.0, 0.0, 0.0)] * k,
        [(0.0, -600.0, 17.01)] * k,
        [math.pi / 2] * k,
        car_vel=[(0.0, CAR_HITS[n][0], 0.0) for n in names],
    )

    def throttle(s: BatchState) -> torch.Tensor:
        c = torch.zeros(s.num_arenas, s.num_cars, 8)
        c[..., 0] = 1.0
        return c

    path, error = path_and_final_error(*ball_paths(state, 15, throttle))
    out = []
    for i, name in enumerate(names):
        err = float(error[i] / path[i])
        out.append(
            Measure(
                f"car_hit_{name}", float(path[i]), float(error[i]), err, 0.05, "uu: ball path, warp error", err <= 0.05
            )
        )
    return out


def goal_measures() -> list[Measure]:
    """Goal events: the step of the goal (or -1) must be identical."""
    names = list(GOAL_SCENARIOS)
    pos = [GOAL_SCENARIOS[n][0] for n in names]
    vel = [GOAL_SCENARIOS[n][1] for n in names]
    state = _state(pos, vel, [PARK] * len(names), [0.0] * len(names))
    rs, wa = make_engines(len(names), 8)
    try:
        first = []
        for engine in (rs, wa):
            steps = run(engine, state, 45, _idle)
            goal_step = torch.full((len(names),), -1)
            team = torch.full((len(names),), -1)
            for i, s in enumerate(steps):
                hit = (s.goal_scored >= 0) & (goal_step < 0)
                goal_step[hit] = i
                team[hit] = s.goal_scored[hit]
            first.append((goal_step, team))
    finally:
        rs.close()
        wa.close()
    out = []
    for i, name in enumerate(names):
        r, w = int(first[0][0][i]), int(first[1][0][i])
        same = r == w and int(first[0][1][i]) == int(first[1][1][i])
        out.append(Measure(f"goal_{name}", r, w, 0.0 if same else 1.0, 0.0, "goal step (-1 none)", same))
    return out


def _rel(name: str, r: float, w: float, bound: float, unit: str) -> Measure:
    err = abs(w - r) / max(abs(r), 1e-9)
    return Measure(name, r, w, err, bound, unit, err <= bound)


def car_measures() -> list[Measure]:
    """Top speeds, acceleration, jump and turning of one car, at 120 steps per second (tick_skip 1)."""
    out = []
    # Arena 0: throttle only; 1: boost; 2: full jump; 3-5: turning from 500, 1000, 1500 uu/s.
    turn_speeds = (500.0, 1000.0, 1500.0)
    cars = [(-2000.0, -4500.0, 17.0), (-2000.0, -4500.0, 17.0), (0.0, -2000.0, 17.0)]
    cars += [(-1500.0, -1500.0 + 1500.0 * k, 17.0) for k in range(3)]
    yaws = [math.pi / 2] * 3 + [0.0] * 3
    car_vel = [(0.0, 0.0, 0.0)] * 3 + [(v, 0.0, 0.0) for v in turn_speeds]
    ball = [(3500.0, 4000.0, 93.15)] * 6
    state = _state(ball, [(0.0, 0.0, 0.0)] * 6, cars, yaws, car_vel=car_vel)
    seconds = 4.0

    def controls(s: BatchState) -> torch.Tensor:
        c = torch.zeros(6, 1, 8)
        c[0, 0, 0] = 1.0
        c[1, 0, 0] = 1.0
        c[1, 0, 6] = 1.0
        c[2, 0, 5] = 1.0
        c[3:, 0, 1] = 1.0
        return c

    results = []
    rs, wa = make_engines(6, 1)
    try:
        for engine in (rs, wa):
            states = run(engine, state, int(seconds * 120), controls)
            speed = torch.stack([s.car_vel[:, 0].norm(dim=-1) for s in states])  # (T, 6)
            z = torch.stack([s.car_pos[:, 0, 2] for s in states])
            ground = torch.stack([s.car_on_ground[:, 0] for s in states])
            t_1000 = int((speed[:, 0] >= 1000).nonzero()[0]) / 120.0
            apex = float(z[:, 2].max() - 17.0)
            airborne = (~ground[:, 2]).nonzero()
            first_air = int(airborne[0])
            landed = (ground[first_air:, 2]).nonzero()
            air_time = (int(landed[0]) if len(landed) else len(states) - first_air) / 120.0
            radii = []
            for k in range(3):
                window = slice(10, 40)
                v = torch.stack([s.car_vel[3 + k, 0, :2].norm() for s in states[window]]).mean()
                w = torch.stack([s.car_ang_vel[3 + k, 0, 2].abs() for s in states[window]]).mean()
                radii.append(float(v / w))
            results.append((float(speed[:, 0].max()), float(speed[:, 1].max()), t_1000, apex, air_time, radii))
    finally:
        rs.close()
        wa.close()
    (r, w) = results
    out.append(_rel("car_top_speed_throttle", r[0], w[0], 0.05, "uu/s"))
    out.append(_rel("car_top_speed_boost", r[1], w[1], 0.05, "uu/s"))
    out.append(_rel("car_time_to_1000", r[2], w[2], 0.05, "s"))
    out.append(_rel("car_jump_apex", r[3], w[3], 0.05, "uu above rest"))
    out.append(_rel("car_jump_air_time", r[4], w[4], 0.05, "s"))
    for k, v in enumerate(turn_speeds):
        out.append(_rel(f"car_turn_radius_{int(v)}", r[5][k], w[5][k], 0.05, "uu"))
    return out


def kickoff_measures() -> list[Measure]:
    """Time from a kickoff spawn to the first touch, driving at the ball with boost (bound 10%)."""
    spawns = [(-2048.0, -2560.0, math.pi / 4), (0.0, -4608.0, math.pi / 2), (256.0, -3840.0, math.pi / 2)]
    k = len(spawns)
    state = _state(
        [(0.0, 0.0, 93.15)] * k,
        [(0.0, 0.0, 0.0)] * k,
        [(x, y, 17.0) for x, y, _ in spawns],
        [yw for *_, yw in spawns],
        boost=100.0 / 3.0,
    )

    def controls(s: BatchState) -> torch.Tensor:
        c = torch.zeros(k, 1, 8)
        to_ball = s.ball_pos - s.car_pos[:, 0]
        fwd = s.car_forward[:, 0]
        angle = torch.atan2(to_ball[:, 1], to_ball[:, 0]) - torch.atan2(fwd[:, 1], fwd[:, 0])
        angle = torch.atan2(angle.sin(), angle.cos())
        c[:, 0, 0] = 1.0
        c[:, 0, 1] = (angle * 3.0).clamp(-1, 1)
        c[:, 0, 6] = 1.0
        return c

    times = []
    rs, wa = make_engines(k, 1)
    try:
        for engine in (rs, wa):
            states = run(engine, state, 480, controls)
            touched = torch.stack([s.car_touched_ball[:, 0] for s in states])
            times.append(
                [int(touched[:, i].nonzero()[0]) / 120.0 if touched[:, i].any() else float("inf") for i in range(k)]
            )
    finally:
        rs.close()
        wa.close()
    names = ["diagonal", "back_centre", "off_centre"]
    return [_rel(f"kickoff_time_to_ball_{names[i]}", times[0][i], times[1][i], 0.10, "s") for i in range(k)]


def run_all() -> list[dict]:
    """Every measure as a dict: name, rocketsim, warp, error, bound, unit, passed."""
    measures = ball_measures() + [random_throw_measure()] + goal_measures() + car_measures() + car_hit_measures()
    measures += kickoff_measures()
    return [asdict(m) for m in measures]
