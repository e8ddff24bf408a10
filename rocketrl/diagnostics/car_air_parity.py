"""Airborne car parity: the same car states and controls run through RocketSim and the warp engine,
tick by tick (tick_skip 1, controls held for CONTROL_HOLD ticks as with the env's tick skip).

Cars start high in the arena and only sequences that stay inside SAFE_BOX in RocketSim for the whole
window are measured, so neither car touches the arena, the ball or another car: the error is the air
model's alone. Errors: position (uu) and orientation (degrees, the angle of the rotation taking one
car's axes to the other's) at AIR_TIMES seconds. Used by tests/test_warp_car_air.py and
benchmarks/parity.py.
"""

from __future__ import annotations

import math

import torch

from rocketrl.sim.state import BatchState, ResetState

TICKS_PER_SECOND = 120
CONTROL_HOLD = 8
"""Ticks each random control is held (the env's tick skip)."""
AIR_TIMES = (0.25, 0.5, 1.0)
"""Seconds after the start at which errors are measured; the last is the window's end."""
SAFE_BOX = ((-3300.0, 3300.0), (-4300.0, 4300.0), (300.0, 1850.0))
"""(x, y, z) ranges (uu) a car's origin stays in for the whole window: far enough from every arena
surface that its hitbox (at most 80 uu from the origin) cannot touch one."""
BALL_SPOT = (3800.0, 0.0, 93.15)
"""The ball rests on the floor outside SAFE_BOX's x range, out of every car's reach."""
RANDOM_SEQUENCES = 64
WITHIN_UU = 1.0
"""The random measure reports the share of sequences whose car is within this distance at the end."""

SCRIPTED: dict[str, tuple[float, float, float, float, float, float]] = {
    "drop_from_rest": (0, 0, 0, 0, 0, 0),
    "full_boost": (0, 0, 0, 0, 0, 1),
    "boost_to_max_speed": (0, 0, 0, 1, 0, 1),
    "air_roll_and_yaw": (0, 0, 1, -1, 0, 0),
    "flip_forward": (-1, 0, 0, 0, 1, 0),
    "flip_backward": (1, 0, 0, 0, 1, 0),
    "flip_side": (0, 1, 0, 0, 1, 0),
    "flip_diagonal": (-1, -1, 0, 0, 1, 0),
    "flip_cancel": (-1, 0, 0, 0, 1, 0),
    "double_jump": (0, 0, 0, 0, 1, 0),
}
"""Scripted cases: name -> (pitch, yaw, roll, throttle, jump, boost). Every car starts at (0, 0, 1000)
with yaw 90 degrees moving forward at 500 uu/s (or its SCRIPTED_START_SPEED). Jump is held for the
first 8 ticks (a flip or a double jump as the stick is out of or inside the dodge deadzone) and
released; stick, throttle and boost are held for the whole window, except flip_cancel, whose pitch
turns to +0.5 (pulling back: half the flip's pitch torque) after 8 ticks."""
SCRIPTED_START_SPEED = {"drop_from_rest": 0.0, "boost_to_max_speed": 2000.0}
"""Scripted cases that start at another forward speed: name -> speed (uu/s)."""


def blank_state(k: int, ball_spot: tuple[float, float, float] = BALL_SPOT) -> ResetState:
    """k arenas of one car at the origin, at rest, with full boost, and the ball at rest at `ball_spot` (uu); the
    cases set their own fields after."""
    return ResetState(
        ball_pos=torch.tensor([ball_spot] * k),
        ball_vel=torch.zeros(k, 3),
        ball_ang_vel=torch.zeros(k, 3),
        car_pos=torch.zeros(k, 1, 3),
        car_vel=torch.zeros(k, 1, 3),
        car_ang_vel=torch.zeros(k, 1, 3),
        car_rotation=torch.zeros(k, 1, 3),
        car_boost=torch.full((k, 1), 100.0),
    )


def stick_values(g: torch.Generator, holds: int, count: int) -> torch.Tensor:
    """(holds, count) values of one analog control: 0, +1, -1 or uniform in [-1, 1], a quarter each."""
    kind = torch.randint(0, 4, (holds, count), generator=g)
    uniform = torch.rand(holds, count, generator=g) * 2.0 - 1.0
    return torch.where(kind == 0, 0.0, torch.where(kind == 1, 1.0, torch.where(kind == 2, -1.0, uniform)))


def driving_controls(
    g: torch.Generator, count: int, seconds: float, full_throttle_forward: bool, jump_share: float
) -> torch.Tensor:
    """Random controls of cars on a surface (ticks, count, 1, 8), each held CONTROL_HOLD ticks: throttle, steer,
    pitch, yaw and roll each stick_values; with probability 1/2 per hold the throttle leans forward (its absolute
    value, or full throttle when `full_throttle_forward`); boost with probability 1/4, handbrake 1/5; jump held
    for one hold at a random time in `jump_share` of the sequences."""
    holds = math.ceil(seconds * TICKS_PER_SECOND / CONTROL_HOLD)
    controls = torch.zeros(holds, count, 1, 8)
    for axis_index in (0, 1, 2, 3, 4):
        controls[:, :, 0, axis_index] = stick_values(g, holds, count)
    forward = torch.rand(holds, count, generator=g) < 0.5
    leaning = 1.0 if full_throttle_forward else controls[:, :, 0, 0].abs()
    controls[:, :, 0, 0] = torch.where(forward, leaning, controls[:, :, 0, 0])
    controls[:, :, 0, 6] = (torch.rand(holds, count, generator=g) < 0.25).float()
    controls[:, :, 0, 7] = (torch.rand(holds, count, generator=g) < 0.2).float()
    jump_hold = torch.randint(0, holds, (count,), generator=g)
    jumps = torch.rand(count, generator=g) < jump_share
    controls[jump_hold[jumps], jumps.nonzero().flatten(), 0, 5] = 1.0
    ticks = int(round(seconds * TICKS_PER_SECOND))
    return controls.repeat_interleave(CONTROL_HOLD, dim=0)[:ticks]


def random_air_cases(count: int, seconds: float = AIR_TIMES[-1], seed: int = 0) -> tuple[ResetState, torch.Tensor]:
    """`count` random airborne cars and their controls (ticks, count, 1, 8), each held CONTROL_HOLD ticks.

    Cars: x in +-1200, y in +-2000, z in 800..1300 uu; any orientation; velocity up to 600 uu/s (z up to
    300); angular velocity up to 5.5 rad/s; boost 0..100. Controls per hold: throttle, pitch, yaw, roll
    each 0, +-1 or uniform in [-1, 1]; jump with probability 1/4 (a held jump is pressed again only after a
    release), boost with probability 1/2, steer and handbrake random (no effect in the air)."""
    g = torch.Generator().manual_seed(seed)
    state = blank_state(count)
    lo = torch.tensor([-1200.0, -2000.0, 800.0])
    hi = torch.tensor([1200.0, 2000.0, 1300.0])
    state.car_pos[:, 0] = lo + (hi - lo) * torch.rand(count, 3, generator=g)
    direction = torch.nn.functional.normalize(torch.randn(count, 3, generator=g), dim=-1)
    vel = direction * 600.0 * torch.rand(count, 1, generator=g)
    vel[:, 2] = vel[:, 2].clamp(-300.0, 300.0)
    state.car_vel[:, 0] = vel
    axis = torch.nn.functional.normalize(torch.randn(count, 3, generator=g), dim=-1)
    state.car_ang_vel[:, 0] = axis * 5.5 * torch.rand(count, 1, generator=g)
    angles = torch.rand(count, 3, generator=g) * 2.0 - 1.0
    state.car_rotation[:, 0] = angles * torch.tensor([math.pi / 2, math.pi, math.pi])
    state.car_boost[:, 0] = torch.rand(count, generator=g) * 100.0
    holds = math.ceil(seconds * TICKS_PER_SECOND / CONTROL_HOLD)
    controls = torch.zeros(holds, count, 1, 8)
    for axis_index in (0, 2, 3, 4):
        controls[:, :, 0, axis_index] = stick_values(g, holds, count)
    controls[:, :, 0, 1] = torch.rand(holds, count, generator=g) * 2.0 - 1.0
    controls[:, :, 0, 5] = (torch.rand(holds, count, generator=g) < 0.25).float()
    controls[:, :, 0, 6] = (torch.rand(holds, count, generator=g) < 0.5).float()
    controls[:, :, 0, 7] = (torch.rand(holds, count, generator=g) < 0.2).float()
    ticks = int(round(seconds * TICKS_PER_SECOND))
    return state, controls.repeat_interleave(CONTROL_HOLD, dim=0)[:ticks]


def scripted_air_cases(seconds: float = AIR_TIMES[-1]) -> tuple[list[str], ResetState, torch.Tensor]:
    """The SCRIPTED cases: names, their states and their controls (ticks, cases, 1, 8)."""
    names = list(SCRIPTED)
    k = len(names)
    state = blank_state(k)
    state.car_pos[:, 0] = torch.tensor([0.0, 0.0, 1000.0])
    state.car_vel[:, 0, 1] = torch.tensor([SCRIPTED_START_SPEED.get(name, 500.0) for name in names])
    state.car_rotation[:, 0, 1] = math.pi / 2
    ticks = int(round(seconds * TICKS_PER_SECOND))
    controls = torch.zeros(ticks, k, 1, 8)
    for i, name in enumerate(names):
        pitch, yaw, roll, throttle, jump, boost = SCRIPTED[name]
        controls[:, i, 0, 0] = throttle
        controls[:, i, 0, 2] = pitch
        controls[:, i, 0, 3] = yaw
        controls[:, i, 0, 4] = roll
        controls[:CONTROL_HOLD, i, 0, 5] = jump
        controls[:, i, 0, 6] = boost
        if name == "flip_cancel":
            controls[CONTROL_HOLD:, i, 0, 2] = 0.5
    return names, state, controls


def rotation_matrices(state: BatchState) -> torch.Tensor:
    """(A, C, 3, 3) float64 rotation matrices with columns forward, right, up of a state's cars."""
    fwd = state.car_forward.double()
    up = state.car_up.double()
    return torch.stack([fwd, torch.cross(up, fwd, dim=-1), up], dim=-1)


def tick_states(state: ResetState, controls: torch.Tensor, orange_size: int = 0) -> dict[str, list[BatchState]]:
    """Per engine ("rocketsim", "warp"): the ticks + 1 states of 1 v `orange_size` arenas put into `state` and
    stepped one tick at a time under controls (ticks, A, C, 8)."""
    from rocketrl.sim.rocketsim import RocketSimEngine
    from rocketrl.sim.warp.engine import WarpEngine

    k = state.num_arenas
    out = {}
    for name, engine in (
        ("rocketsim", RocketSimEngine(k, 1, orange_size, tick_skip=1, stepping="serial")),
        ("warp", WarpEngine(k, 1, orange_size, tick_skip=1)),
    ):
        try:
            states = [engine.reset(torch.ones(k, dtype=torch.bool), state)]
            for tick_controls in controls:
                states.append(engine.step(tick_controls))
        finally:
            engine.close()
        out[name] = states
    return out


def car_paths(state: ResetState, controls: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Per engine ("rocketsim", "warp"): car positions (ticks + 1, A, 3) float64 and rotation matrices
    (ticks + 1, A, 3, 3) float64 of car 0, from `state` under controls (ticks, A, 1, 8), one tick a step."""
    out = {}
    for name, states in tick_states(state, controls).items():
        pos = torch.stack([s.car_pos[:, 0].double() for s in states])
        rot = torch.stack([rotation_matrices(s)[:, 0] for s in states])
        out[name] = (pos, rot)
    return out


def orientation_error_deg(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Angle (degrees) of the rotation between rotation matrices a and b (..., 3, 3), accurate near 0."""
    chord = (a - b).flatten(-2).norm(dim=-1) / (2.0 * math.sqrt(2.0))
    return torch.rad2deg(2.0 * torch.asin(chord.clamp(max=1.0)))


def inside_safe_box(pos: torch.Tensor) -> torch.Tensor:
    """(A,) whether positions (T, A, 3) stay inside SAFE_BOX at every tick."""
    inside = torch.ones(pos.shape[1], dtype=torch.bool)
    for axis, (lo, hi) in enumerate(SAFE_BOX):
        inside &= ((pos[..., axis] > lo) & (pos[..., axis] < hi)).all(0)
    return inside


def errors_at(paths: dict[str, tuple[torch.Tensor, torch.Tensor]], ticks: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(A,) position errors (uu) and (A,) orientation errors (degrees) after `ticks` ticks."""
    (pos_r, rot_r), (pos_w, rot_w) = paths["rocketsim"], paths["warp"]
    return (pos_r[ticks] - pos_w[ticks]).norm(dim=-1), orientation_error_deg(rot_r[ticks], rot_w[ticks])


def _summary(values: torch.Tensor) -> dict[str, float]:
    return {
        "median": float(values.median()),
        "p90": float(torch.quantile(values, 0.9)),
        "max": float(values.max()),
    }


def errors_by_time(
    paths: dict, times: tuple[float, ...], within_uu: float, within_at: float
) -> dict[str, dict | float]:
    """Random sequences' errors: per time in `times` (s), median / 90th percentile / max of position (uu) and
    orientation (degrees) errors, then the share of sequences within `within_uu` at `within_at` seconds."""
    report: dict[str, dict | float] = {}
    for seconds in times:
        pos_err, rot_err = errors_at(paths, int(round(seconds * TICKS_PER_SECOND)))
        report[f"{seconds}s"] = {"position_uu": _summary(pos_err), "orientation_deg": _summary(rot_err)}
    err, _ = errors_at(paths, int(round(within_at * TICKS_PER_SECOND)))
    report[f"share_within_{within_uu}uu_at_{within_at}s"] = float((err <= within_uu).float().mean())
    return report


def errors_by_case(names: list[str], paths: dict, times: tuple[float, ...]) -> dict[str, dict]:
    """Scripted cases' errors: {name: {"<t>s": {"position_uu", "orientation_deg"}}} for each time in `times`."""
    report: dict[str, dict] = {name: {} for name in names}
    for seconds in times:
        pos_err, rot_err = errors_at(paths, int(round(seconds * TICKS_PER_SECOND)))
        for i, name in enumerate(names):
            report[name][f"{seconds}s"] = {"position_uu": float(pos_err[i]), "orientation_deg": float(rot_err[i])}
    return report


def random_air_report(count: int = RANDOM_SEQUENCES, seed: int = 0) -> dict:
    """Errors of `count` random airborne sequences that stay inside SAFE_BOX (drawn from 2 x count
    candidates, first ones kept): per time, median / 90th percentile / max of position (uu) and
    orientation (degrees) errors, and the share within WITHIN_UU at the end."""
    state, controls = random_air_cases(2 * count, seed=seed)
    paths = car_paths(state, controls)
    clean = inside_safe_box(paths["rocketsim"][0]) & inside_safe_box(paths["warp"][0])
    keep = clean.nonzero().flatten()[:count]
    if len(keep) < count:
        raise RuntimeError(f"only {len(keep)} of {2 * count} random cases stay inside SAFE_BOX")
    paths = {name: (pos[:, keep], rot[:, keep]) for name, (pos, rot) in paths.items()}
    report: dict = {"sequences": count, "candidates": 2 * count, "control_hold_ticks": CONTROL_HOLD}
    return report | errors_by_time(paths, AIR_TIMES, WITHIN_UU, AIR_TIMES[-1])


def scripted_air_report() -> dict:
    """Per SCRIPTED case and time: position error (uu) and orientation error (degrees)."""
    names, state, controls = scripted_air_cases()
    paths = car_paths(state, controls)
    if not bool(inside_safe_box(paths["rocketsim"][0]).all()):
        raise RuntimeError("a scripted case leaves SAFE_BOX")
    return errors_by_case(names, paths, AIR_TIMES)


def car_air_report() -> dict:
    """Both airborne reports: {"random": random_air_report(), "scripted": scripted_air_report()}."""
    return {"random": random_air_report(), "scripted": scripted_air_report()}
