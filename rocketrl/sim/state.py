"""Batched game state: what every engine hands to the game layer, and what a reset asks of it.

Shapes use A = arenas, C = cars per arena (blue cars first, then orange), P = 34 boost pads.
Units are Rocket League units: positions in uu, velocities in uu/s, angular velocities in rad/s,
boost in [0, 100], timers in seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch

from rocketrl.sim.arena import (
    BALL_REST_Z,
    CAR_SPAWN_REST_Z,
    KICKOFF_BOOST,
    KICKOFF_SPAWNS_BLUE,
    ORANGE_TEAM,
)


@dataclass
class BatchState:
    """The state of A arenas after a step, as tensors on one device.

    Physics fields are float32. Flags are bool. Events describe what happened during the last
    step (all `tick_skip` ticks of it) and are all-false right after a reset.
    """

    ball_pos: torch.Tensor
    """(A, 3) ball centre, uu."""
    ball_vel: torch.Tensor
    """(A, 3) uu/s."""
    ball_ang_vel: torch.Tensor
    """(A, 3) rad/s."""
    car_pos: torch.Tensor
    """(A, C, 3) uu."""
    car_vel: torch.Tensor
    """(A, C, 3) uu/s."""
    car_ang_vel: torch.Tensor
    """(A, C, 3) rad/s."""
    car_forward: torch.Tensor
    """(A, C, 3) unit vector the car's nose points along."""
    car_up: torch.Tensor
    """(A, C, 3) unit vector out of the car's roof."""
    car_boost: torch.Tensor
    """(A, C) boost amount in [0, 100]."""
    car_on_ground: torch.Tensor
    """(A, C) bool: wheels touching a surface."""
    car_has_jump: torch.Tensor
    """(A, C) bool: the first jump is available."""
    car_has_flip: torch.Tensor
    """(A, C) bool: a dodge or double jump is available (they share one charge in Rocket League)."""
    car_demolished: torch.Tensor
    """(A, C) bool: the car is demolished and waiting to respawn."""
    car_team: torch.Tensor
    """(A, C) int64: 0 blue, 1 orange."""
    pad_active: torch.Tensor
    """(A, P) bool: the boost pad can be picked up."""
    pad_timer: torch.Tensor
    """(A, P) seconds until an inactive pad comes back; 0 when active."""
    blue_score: torch.Tensor
    """(A,) int64 goals blue has scored since the arena was built."""
    orange_score: torch.Tensor
    """(A,) int64."""
    goal_scored: torch.Tensor
    """(A,) int64 event: -1 no goal this step, 0 blue scored, 1 orange scored."""
    car_touched_ball: torch.Tensor
    """(A, C) bool event: the car hit the ball this step."""
    car_was_demolished: torch.Tensor
    """(A, C) bool event: the car was demolished this step."""
    car_demolitions: torch.Tensor
    """(A, C) int64 event: demolitions the car made this step."""
    car_boost_pickups: torch.Tensor
    """(A, C) int64 event: boost pads the car picked up this step."""
    ball_last_touch: torch.Tensor
    """(A,) int64 index of the car that touched the ball last, -1 if none since the reset."""

    @property
    def num_arenas(self) -> int:
        return self.ball_pos.shape[0]

    @property
    def num_cars(self) -> int:
        return self.car_pos.shape[1]

    @property
    def device(self) -> torch.device:
        return self.ball_pos.device

    def car_is_orange(self) -> torch.Tensor:
        """(A, C) bool."""
        return self.car_team == ORANGE_TEAM

    def index(self, arenas: torch.Tensor) -> BatchState:
        """The state of a subset of arenas (a bool mask or an index tensor), as new tensors."""
        return BatchState(**{f.name: getattr(self, f.name)[arenas] for f in fields(self)})

    def clone(self) -> BatchState:
        return BatchState(**{f.name: getattr(self, f.name).clone() for f in fields(self)})


@dataclass
class ResetState:
    """A state to put K arenas into. Engines also fill pads active, jumps available, scores kept.

    car_rotation holds Euler angles (pitch, yaw, roll) in radians, applied yaw, then pitch, then roll.
    """

    ball_pos: torch.Tensor
    """(K, 3) uu."""
    ball_vel: torch.Tensor
    """(K, 3) uu/s."""
    ball_ang_vel: torch.Tensor
    """(K, 3) rad/s."""
    car_pos: torch.Tensor
    """(K, C, 3) uu."""
    car_vel: torch.Tensor
    """(K, C, 3) uu/s."""
    car_ang_vel: torch.Tensor
    """(K, C, 3) rad/s."""
    car_rotation: torch.Tensor
    """(K, C, 3) pitch, yaw, roll in radians."""
    car_boost: torch.Tensor
    """(K, C) in [0, 100]."""
    blue_first: torch.Tensor | None = None
    """(K,) bool: add the blue cars to the arena before the orange ones. RocketSim resolves car-car
    contacts in the order cars were added, which favours one car in a head-on meeting, so BatchedEnv
    draws this at random for every reset. None: blue first. Engines without that bias ignore it."""

    @property
    def num_arenas(self) -> int:
        return self.ball_pos.shape[0]

    def index(self, arenas: torch.Tensor | list[int]) -> ResetState:
        """The state of a subset of arenas (a bool mask, an index tensor or a list; repeats allowed)."""
        return ResetState(
            **{f.name: None if getattr(self, f.name) is None else getattr(self, f.name)[arenas] for f in fields(self)}
        )

    def validate(self, num_cars: int) -> None:
        """Raise ValueError naming the field when a shape is wrong or a value is not finite."""
        k = self.num_arenas
        expected = {
            "ball_pos": (k, 3),
            "ball_vel": (k, 3),
            "ball_ang_vel": (k, 3),
            "car_pos": (k, num_cars, 3),
            "car_vel": (k, num_cars, 3),
            "car_ang_vel": (k, num_cars, 3),
            "car_rotation": (k, num_cars, 3),
            "car_boost": (k, num_cars),
        }
        for name, shape in expected.items():
            value = getattr(self, name)
            if tuple(value.shape) != shape:
                raise ValueError(f"ResetState.{name} has shape {tuple(value.shape)}, expected {shape}")
            if not torch.isfinite(value).all():
                raise ValueError(f"ResetState.{name} holds NaN or inf; every value must be finite")
        if ((self.car_boost < 0) | (self.car_boost > 100)).any():
            raise ValueError("ResetState.car_boost must lie in [0, 100]")
        if self.blue_first is not None and tuple(self.blue_first.shape) != (k,):
            raise ValueError(f"ResetState.blue_first has shape {tuple(self.blue_first.shape)}, expected ({k},)")


def euler_to_forward_up(rotation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward and up unit vectors (..., 3) of Euler angles (..., 3) = (pitch, yaw, roll), radians.

    Matches RocketSim's Angle convention: forward = (cos p cos y, cos p sin y, sin p).
    """
    pitch, yaw, roll = rotation.unbind(-1)
    cp, sp = torch.cos(pitch), torch.sin(pitch)
    cy, sy = torch.cos(yaw), torch.sin(yaw)
    cr, sr = torch.cos(roll), torch.sin(roll)
    forward = torch.stack([cp * cy, cp * sy, sp], dim=-1)
    up = torch.stack([-cr * cy * sp - sr * sy, -cr * sy * sp + sr * cy, cp * cr], dim=-1)
    return forward, up


def kickoff_reset_state(order: torch.Tensor, blue_size: int, orange_size: int) -> ResetState:
    """Kickoff states of K arenas from spawn orders (K, 5), each a permutation of the five spawns.

    Blue car i takes spawn order[i] and orange car i the same spawn rotated by pi about z, as in
    Rocket League; ball at rest on the centre spot; boost 33.3.
    """
    k, n = order.shape[0], blue_size + orange_size
    spawns = torch.tensor(KICKOFF_SPAWNS_BLUE, dtype=torch.float32)  # (5, 3): x, y, yaw
    blue = spawns[order[:, :blue_size]]  # (K, blue, 3)
    orange = spawns[order[:, :orange_size]].clone()  # (K, orange, 3)
    orange[..., 0:2] = -orange[..., 0:2]
    orange[..., 2] = orange[..., 2] + math.pi
    spawn = torch.cat([blue, orange], dim=1)
    car_pos = torch.cat([spawn[..., 0:2], torch.full((k, n, 1), CAR_SPAWN_REST_Z)], dim=-1)
    rotation = torch.zeros(k, n, 3)
    rotation[..., 1] = torch.remainder(spawn[..., 2] + math.pi, 2 * math.pi) - math.pi
    return ResetState(
        ball_pos=torch.tensor([0.0, 0.0, BALL_REST_Z]).expand(k, 3).clone(),
        ball_vel=torch.zeros(k, 3),
        ball_ang_vel=torch.zeros(k, 3),
        car_pos=car_pos,
        car_vel=torch.zeros(k, n, 3),
        car_ang_vel=torch.zeros(k, n, 3),
        car_rotation=rotation,
        car_boost=torch.full((k, n), KICKOFF_BOOST),
    )
