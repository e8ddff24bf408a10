"""Ground car parity on the flat floor: the same car states and controls run through RocketSim and the
warp engine, tick by tick (tick_skip 1, random controls held CONTROL_HOLD ticks as with the env's tick
skip).

Cars start at rest on the floor (origin at RocketSim's spawn rest height, 17 uu) in the middle of the
field, or moving along it for the scripted braking, coasting and powerslide cases. Only the floor may
matter: a random sequence is kept only if RocketSim's car stays at least WALL_MARGIN uu from every wall,
never comes within BALL_MARGIN uu of the resting ball, and keeps its hitbox HITBOX_CLEARANCE uu off the
floor (a car landing on its nose, side or roof touches the floor with its hitbox, which the wheel model
leaves to the arena contact); each sequence presses jump at most once, so a car leaves the floor for one
jump at most. Errors: position (uu) and
orientation (degrees, the angle of the rotation taking one car's axes to the other's) at GROUND_TIMES
seconds. Used by tests/test_warp_car_ground.py and benchmarks/parity.py.
"""

from __future__ import annotations

import math

import torch

from rocketrl.diagnostics.car_air_parity import (
    CONTROL_HOLD,
    TICKS_PER_SECOND,
    car_paths,
    driving_controls,
    errors_by_case,
    errors_by_time,
)
from rocketrl.sim.state import ResetState

GROUND_TIMES = (0.5, 1.0, 2.0)
"""Seconds after the start at which errors are measured; the last is the window's end."""
REST_Z = 17.0
"""Height (uu) of a car origin set down on the floor (RocketSim's CAR_SPAWN_REST_Z)."""
WALL_MARGIN = 400.0
"""A kept sequence's car origin stays this far (uu) from the side and back walls and the corner planes."""
BALL_SPOT = (3800.0, 0.0, 93.15)
"""The ball rests on the flat floor beside the side wall, outside every kept car's reach."""
BALL_MARGIN = 500.0
HITBOX_CLEARANCE = 5.0
"""Lowest height (uu) of a kept car's hitbox corners (Bullet makes contacts within about 3 uu)."""
HITBOX_HALF = (60.2535, 43.3497, 19.32955)
HITBOX_OFFSET = (13.8757, 0.0, 20.755)
RANDOM_SEQUENCES = 32
WITHIN_UU = 1.0
"""The random measure reports the share of sequences whose car is within this distance at 1 s."""
WITHIN_AT_SECONDS = 1.0

SCRIPTED: dict[str, tuple[float, float, float, float, float, float]] = {
    "rest_settle": (0, 0, 0, 0, 0, 0),
    "full_throttle": (0, 1, 0, 0, 0, 0),
    "throttle_boost": (0, 1, 0, 1, 0, 0),
    "steer_full": (0, 1, 1, 0, 0, 0),
    "steer_half": (0, 1, -0.5, 0, 0, 0),
    "steer_quarter": (0, 1, 0.25, 0, 0, 0),
    "steer_boost": (0, 1, -1, 1, 0, 0),
    "coast": (1000, 0, 0, 0, 0, 0),
    "brake_and_reverse": (1000, -1, 0, 0, 0, 0),
    "reverse_from_rest": (0, -1, 0.5, 0, 0, 0),
    "powerslide": (1200, 1, 1, 0, 1, 0),
    "powerslide_no_throttle": (1200, 0, -1, 0, 1, 0),
    "jump_from_rest": (0, 0, 0, 0, 0, 1),
    "full_jump_while_driving": (800, 1, 0, 0, 0, 2),
}
"""Scripted cases: name -> (start speed uu/s, throttle, steer, boost, handbrake, jump). Every car starts on
the floor at (0, -1500) facing +y at the start speed; controls are held for the whole window, except jump:
1 holds it for the first 8 ticks (a short hop), 2 for the first 24 ticks (past the 0.2 s jump)."""


def _floor_state(k: int) -> ResetState:
    return ResetState(
        ball_pos=torch.tensor([BALL_SPOT] * k),
        ball_vel=torch.zeros(k, 3),
        ball_ang_vel=torch.zeros(k, 3),
        car_pos=torch.tensor([0.0, 0.0, REST_Z]).repeat(k, 1, 1),
        car_vel=torch.zeros(k, 1, 3),
        car_ang_vel=torch.zeros(k, 1, 3),
        car_rotation=torch.zeros(k, 1, 3),
        car_boost=torch.full((k, 1), 100.0),
    )


def select_cases(state: ResetState, cases: list[int]) -> ResetState:
    """The arenas `cases` of a one-car ResetState."""
    fields = ("ball_pos", "ball_vel", "ball_ang_vel", "car_pos", "car_vel", "car_ang_vel", "car_rotation", "car_boost")
    return ResetState(**{name: getattr(state, name)[cases] for name in fields})


def random_ground_cases(
    count: int, seconds: float = GROUND_TIMES[-1], seed: int = 0
) -> tuple[ResetState, torch.Tensor]:
    """`count` cars at rest on the floor and their controls (ticks, count, 1, 8), each held CONTROL_HOLD ticks.

    Cars: x in +-1500, y in +-2500, any yaw, boost 0..100. Controls per hold: throttle and steer each 0, +-1
    or uniform in [-1, 1] (throttle leaning forward), pitch / yaw / roll the same (they act in the air),
    boost with probability 1/4, handbrake 1/5; jump is held for one hold at most, started at a random hold
    with probability 1/2 per sequence."""
    g = torch.Generator().manual_seed(seed)
    state = _floor_state(count)
    state.car_pos[:, 0, 0] = (torch.rand(count, generator=g) * 2.0 - 1.0) * 1500.0
    state.car_pos[:, 0, 1] = (torch.rand(count, generator=g) * 2.0 - 1.0) * 2500.0
    state.car_rotation[:, 0, 1] = (torch.rand(count, generator=g) * 2.0 - 1.0) * math.pi
    state.car_boost[:, 0] = torch.rand(count, generator=g) * 100.0
    return state, driving_controls(g, count, seconds, full_throttle_forward=False, jump_share=0.5)


def scripted_ground_cases(seconds: float = GROUND_TIMES[-1]) -> tuple[list[str], ResetState, torch.Tensor]:
    """The SCRIPTED cases: names, their states and their controls (ticks, cases, 1, 8)."""
    names = list(SCRIPTED)
    k = len(names)
    state = _floor_state(k)
    state.car_pos[:, 0, 1] = -1500.0
    state.car_rotation[:, 0, 1] = math.pi / 2
    ticks = int(round(seconds * TICKS_PER_SECOND))
    controls = torch.zeros(ticks, k, 1, 8)
    for i, name in enumerate(names):
        speed, throttle, steer, boost, handbrake, jump = SCRIPTED[name]
        state.car_vel[i, 0, 1] = speed
        controls[:, i, 0, 0] = throttle
        controls[:, i, 0, 1] = steer
        controls[:, i, 0, 6] = boost
        controls[:, i, 0, 7] = handbrake
        if jump:
            controls[: CONTROL_HOLD * (1 if jump == 1 else 3), i, 0, 5] = 1.0
    return names, state, controls


def hitbox_lowest_z(pos: torch.Tensor, rot: torch.Tensor) -> torch.Tensor:
    """(T, A) height (uu) of the lowest hitbox corner of cars with positions (T, A, 3) and rotation
    matrices (T, A, 3, 3) (columns forward, right, up)."""
    signs = torch.tensor([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=pos.dtype)
    corners = torch.tensor(HITBOX_OFFSET, dtype=pos.dtype) + signs * torch.tensor(HITBOX_HALF, dtype=pos.dtype)
    return pos[..., 2] + (corners @ rot[..., 2, :].unsqueeze(-1)).squeeze(-1).min(dim=-1).values


def on_floor_only(pos: torch.Tensor, rot: torch.Tensor) -> torch.Tensor:
    """(A,) whether cars with positions (T, A, 3) and rotation matrices (T, A, 3, 3) stay WALL_MARGIN from the
    walls and BALL_MARGIN from the ball, with their hitbox HITBOX_CLEARANCE off the floor."""
    x, y = pos[..., 0].abs(), pos[..., 1].abs()
    inside = (x < 4096.0 - WALL_MARGIN) & (y < 5120.0 - WALL_MARGIN) & (x + y < 8064.0 - WALL_MARGIN * math.sqrt(2.0))
    ball = torch.tensor(BALL_SPOT, dtype=pos.dtype)
    far_from_ball = (pos - ball).norm(dim=-1) > BALL_MARGIN
    clear = hitbox_lowest_z(pos, rot) > HITBOX_CLEARANCE
    return (inside & far_from_ball & clear).all(0)


def random_ground_report(count: int = RANDOM_SEQUENCES, seed: int = 0) -> dict:
    """Errors of `count` random floor sequences kept by on_floor_only (drawn from 2 x count candidates, first
    ones kept): per time, median / 90th percentile / max of position (uu) and orientation (degrees) errors,
    and the share within WITHIN_UU at WITHIN_AT_SECONDS."""
    state, controls = random_ground_cases(2 * count, seed=seed)
    paths = car_paths(state, controls)
    keep = on_floor_only(*paths["rocketsim"]).nonzero().flatten()[:count]
    if len(keep) < count:
        raise RuntimeError(f"only {len(keep)} of {2 * count} random cases stay on the floor away from walls")
    paths = {name: (pos[:, keep], rot[:, keep]) for name, (pos, rot) in paths.items()}
    report: dict = {"sequences": count, "candidates": 2 * count, "control_hold_ticks": CONTROL_HOLD}
    return report | errors_by_time(paths, GROUND_TIMES, WITHIN_UU, WITHIN_AT_SECONDS)


def scripted_ground_report() -> dict:
    """Per SCRIPTED case and time: position error (uu) and orientation error (degrees)."""
    names, state, controls = scripted_ground_cases()
    paths = car_paths(state, controls)
    if not bool(on_floor_only(*paths["rocketsim"]).all()):
        raise RuntimeError("a scripted case leaves the floor's middle")
    return errors_by_case(names, paths, GROUND_TIMES)


def car_ground_report() -> dict:
    """Both floor reports: {"random": random_ground_report(), "scripted": scripted_ground_report()}."""
    return {"random": random_ground_report(), "scripted": scripted_ground_report()}
