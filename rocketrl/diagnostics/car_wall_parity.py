"""Car parity beyond the flat floor: cars driving up the curved transitions onto the side walls (Bullet
planes), the back walls and corners (collision meshes) and the ceiling, and cars set on walls, run
through RocketSim and the warp engine tick by tick (tick_skip 1, random controls held CONTROL_HOLD ticks
as with the env's tick skip).

The ball rests at the centre spot, out of every case's reach. Nothing is filtered out: a case whose car
touches the arena with its body (scraping a back wall's curved foot, landing on its side or roof) is
measured with the rest, and shows the error of the warp body contact (rocketrl.sim.warp.car_arena_box).
Errors: position (uu) and orientation (degrees, the angle of the rotation taking one car's axes to the
other's) at WALL_TIMES seconds. Used by tests/test_warp_car_wall.py and benchmarks/parity.py.
"""

from __future__ import annotations

import math

import torch

from rocketrl.diagnostics.car_air_parity import (
    CONTROL_HOLD,
    TICKS_PER_SECOND,
    blank_state,
    car_paths,
    driving_controls,
    errors_by_case,
    errors_by_time,
)
from rocketrl.sim.state import ResetState

WALL_TIMES = (0.5, 1.0, 4.0)
"""Seconds after the start at which errors are measured; the last is the window's end."""
REST_GAP = 17.0
"""Distance (uu) of a car origin set on a surface from it (RocketSim's spawn rest height)."""
SIDE_X = 4096.0 - REST_GAP
"""|x| (uu) of a car origin set on a side wall."""
BACK_Y = 5120.0 - REST_GAP
"""|y| (uu) of a car origin set on a back wall."""
BALL_SPOT = (0.0, 0.0, 93.15)
RANDOM_SEQUENCES = 32
WITHIN_UU = 1.0
"""The random measure reports the share of sequences whose car is within this distance at 1 s."""
WITHIN_AT_SECONDS = 1.0

SURFACES: dict[str, tuple[tuple[float, float, float], float, float]] = {
    "floor": ((0.0, 0.0, 1.0), 0.0, 0.0),
    "side_wall_pos_x": ((-1.0, 0.0, 0.0), math.pi / 2, math.pi / 2),
    "side_wall_neg_x": ((1.0, 0.0, 0.0), math.pi / 2, -math.pi / 2),
    "back_wall_pos_y": ((0.0, -1.0, 0.0), 0.0, -math.pi / 2),
    "back_wall_neg_y": ((0.0, 1.0, 0.0), 0.0, math.pi / 2),
    "ceiling": ((0.0, 0.0, -1.0), 0.0, math.pi),
}
"""Surface -> (its normal into the field, yaw and roll (rad) that stand a car on it). On a wall the pitch
angle then turns the car within the wall's plane: forward is (0, cos, sin) on the side walls and (cos, 0,
sin) on the back walls (0 along the wall, pi / 2 straight up)."""

SCRIPTED: dict[str, tuple[str, tuple[float, float, float], float, float, tuple[float, float, float, float, int]]] = {
    "drive_up_side_wall": ("floor", (3000.0, -1500.0, REST_GAP), math.pi / 4, 0.0, (1, 0, 0, 0, 0)),
    "boost_up_side_wall": ("floor", (3000.0, 0.0, REST_GAP), 0.0, 0.0, (1, 0, 1, 0, 0)),
    "drive_up_back_wall": ("floor", (-1800.0, 4000.0, REST_GAP), math.pi / 2, 0.0, (1, 0, 0, 0, 0)),
    "drive_into_corner": ("floor", (2600.0, 3600.0, REST_GAP), math.pi / 4, 500.0, (1, 0, 0, 0, 0)),
    "steer_up_side_wall": ("floor", (2800.0, 0.0, REST_GAP), 0.0, 800.0, (1, 0.3, 0, 0, 0)),
    "side_wall_drive_along": ("side_wall_pos_x", (SIDE_X, -2000.0, 600.0), 0.0, 1000.0, (1, 0, 0, 0, 0)),
    "side_wall_drive_up": ("side_wall_neg_x", (-SIDE_X, 0.0, 400.0), math.pi / 3, 800.0, (1, 0, 0, 0, 0)),
    "side_wall_boost_steer": ("side_wall_pos_x", (SIDE_X, 1000.0, 800.0), -0.3, 1200.0, (1, -0.5, 1, 0, 0)),
    "side_wall_coast": ("side_wall_neg_x", (-SIDE_X, -500.0, 900.0), 0.0, 900.0, (0, 0, 0, 0, 0)),
    "side_wall_powerslide": ("side_wall_pos_x", (SIDE_X, 0.0, 700.0), 0.2, 1200.0, (1, 1, 0, 1, 0)),
    "side_wall_jump": ("side_wall_pos_x", (SIDE_X, 0.0, 700.0), 0.0, 1000.0, (1, 0, 0, 0, 1)),
    "back_wall_drive_across": ("back_wall_pos_y", (-2300.0, BACK_Y, 900.0), 0.2, 900.0, (1, 0, 0, 0, 0)),
    "back_wall_drive_down": ("back_wall_neg_y", (2200.0, -BACK_Y, 1000.0), -math.pi / 2, 300.0, (1, 0, 0, 0, 0)),
    "ceiling_drive": ("ceiling", (0.0, -1000.0, 2048.0 - REST_GAP), math.pi / 2, 1000.0, (1, 0, 0, 0, 0)),
}
"""Scripted cases: name -> (surface, car origin (uu), heading (rad: the yaw on the floor and ceiling, the
pitch on a wall, see SURFACES), start speed along forward (uu/s), (throttle, steer, boost, handbrake,
jump)), controls held for the whole window except jump (1: held from 0.5 s for 8 ticks)."""


def surface_rotation(surface: str, heading: float) -> tuple[float, float, float]:
    """(pitch, yaw, roll) (rad) of a car standing on `surface` (see SURFACES) with the given heading."""
    _, yaw, roll = SURFACES[surface]
    if surface in ("floor", "ceiling"):
        return 0.0, yaw + heading, roll
    return heading, yaw, roll


def forward_of(rotation: tuple[float, float, float]) -> tuple[float, float, float]:
    """Unit forward vector of (pitch, yaw, roll) angles (RocketSim's Angle convention)."""
    pitch, yaw, _ = rotation
    return (math.cos(pitch) * math.cos(yaw), math.cos(pitch) * math.sin(yaw), math.sin(pitch))


def scripted_wall_cases(seconds: float = WALL_TIMES[-1]) -> tuple[list[str], ResetState, torch.Tensor]:
    """The SCRIPTED cases: names, their states and their controls (ticks, cases, 1, 8)."""
    names = list(SCRIPTED)
    k = len(names)
    state = blank_state(k, BALL_SPOT)
    ticks = int(round(seconds * TICKS_PER_SECOND))
    controls = torch.zeros(ticks, k, 1, 8)
    jump_start = int(round(0.5 * TICKS_PER_SECOND))
    for i, name in enumerate(names):
        surface, pos, heading, speed, (throttle, steer, boost, handbrake, jump) = SCRIPTED[name]
        rotation = surface_rotation(surface, heading)
        state.car_pos[i, 0] = torch.tensor(pos)
        state.car_rotation[i, 0] = torch.tensor(rotation)
        state.car_vel[i, 0] = torch.tensor(forward_of(rotation)) * speed
        controls[:, i, 0, 0] = throttle
        controls[:, i, 0, 1] = steer
        controls[:, i, 0, 6] = boost
        controls[:, i, 0, 7] = handbrake
        if jump:
            controls[jump_start : jump_start + CONTROL_HOLD, i, 0, 5] = 1.0
    return names, state, controls


RANDOM_WALLS = ("side_wall_pos_x", "side_wall_neg_x", "back_wall_pos_y", "back_wall_neg_y")


def random_wall_cases(count: int, seconds: float = WALL_TIMES[-1], seed: int = 0) -> tuple[ResetState, torch.Tensor]:
    """`count` cars set on the four walls and their controls (ticks, count, 1, 8), each held CONTROL_HOLD ticks.

    Cars: a wall in turn (side walls, then back walls beside the goal, |x| 1150..2400 where the back walls
    are flat: RocketSim's first tick after a state is set uses the inverse inertia of the car's previous
    orientation, which shows where a wheel starts pressed into a slanted panel), z 350..1400 uu,
    any heading within the wall, 0..1200 uu/s forward, boost 0..100. Controls per hold: throttle mostly
    forward (1 with probability 1/2, else 0, -1 or uniform in [-1, 1]), steer and stick 0, +-1 or uniform,
    boost with probability 1/4, handbrake 1/5; jump held for one hold at most, with probability 1/4 per
    sequence."""
    g = torch.Generator().manual_seed(seed)
    state = blank_state(count, BALL_SPOT)
    for i in range(count):
        surface = RANDOM_WALLS[i % len(RANDOM_WALLS)]
        normal = SURFACES[surface][0]
        z = 350.0 + 1050.0 * float(torch.rand(1, generator=g))
        along = float(torch.rand(1, generator=g)) * 2.0 - 1.0
        if surface.startswith("side"):
            pos = (-normal[0] * SIDE_X, along * 3000.0, z)
        else:
            x = math.copysign(1150.0 + 1250.0 * abs(along), along)
            pos = (x, -normal[1] * BACK_Y, z)
        heading = (float(torch.rand(1, generator=g)) * 2.0 - 1.0) * math.pi
        rotation = surface_rotation(surface, heading)
        speed = 1200.0 * float(torch.rand(1, generator=g))
        state.car_pos[i, 0] = torch.tensor(pos)
        state.car_rotation[i, 0] = torch.tensor(rotation)
        state.car_vel[i, 0] = torch.tensor(forward_of(rotation)) * speed
    state.car_boost[:, 0] = torch.rand(count, generator=g) * 100.0
    return state, driving_controls(g, count, seconds, full_throttle_forward=True, jump_share=0.25)


def random_wall_report(count: int = RANDOM_SEQUENCES, seed: int = 0) -> dict:
    """Errors of `count` random sequences started on walls: per time, median / 90th percentile / max of
    position (uu) and orientation (degrees) errors, and the share within WITHIN_UU at WITHIN_AT_SECONDS."""
    state, controls = random_wall_cases(count, seed=seed)
    paths = car_paths(state, controls)
    report: dict = {"sequences": count, "control_hold_ticks": CONTROL_HOLD}
    return report | errors_by_time(paths, WALL_TIMES, WITHIN_UU, WITHIN_AT_SECONDS)


def scripted_wall_report() -> dict:
    """Per SCRIPTED case and time: position error (uu) and orientation error (degrees)."""
    names, state, controls = scripted_wall_cases()
    paths = car_paths(state, controls)
    return errors_by_case(names, paths, WALL_TIMES)


def car_wall_report() -> dict:
    """Both wall reports: {"random": random_wall_report(), "scripted": scripted_wall_report()}."""
    return {"random": random_wall_report(), "scripted": scripted_wall_report()}
