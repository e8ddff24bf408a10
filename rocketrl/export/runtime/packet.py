"""RLBot v5 game packets -> `GameArrays`, in the conventions the bot was trained with (RocketSim's).

Copied into exported bot folders; needs numpy and the `rlbot` package (v5, `rlbot.flat`). RocketSim uses the
game's own frame (uu, blue goal at -y), so locations and velocities pass through unchanged; a car's
rotation (pitch, yaw, roll, rad) becomes its forward and up vectors with the game's Euler convention (the
same matrix RocketSim's `Angle.as_rot_mat` builds). Flags, read as RocketSim sets them in training:

- on ground: RocketSim's wheels touching. The game reports `AirState.OnGround`, except that it reports Jumping
  from a jump's first tick, while the wheels still touch for JUMP_TICKS_ON_WHEELS ticks (`JumpTracker`).
- has jump: on the ground and not jumped.
- has flip (dodge or double jump): in the air, neither double jumped nor dodged, and either never jumped (drove
  off a surface: a flip reset) or still inside the dodge window. The schema (rlbot_flatbuffers, PlayerInfo):
  `dodge_timeout` "How long until the player cannot dodge/double jump anymore. The value is -1 while on ground or
  when airborne for too long after jumping"; so time is left only where it is positive.
- demolished: `demolished_timeout` "How long until the player is not demolished anymore. The value is -1 if
  while not demolished", so positive while demolished.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .obs import GameArrays

F32 = np.float32
PAD_MATCH_UU = 100.0
"""Largest distance between a field's boost pad and the training pad it is matched with."""
JUMP_TICKS_ON_WHEELS = 5
"""Ticks of a jump during which the car's wheels still touch the ground (RocketSim, measured from rest on the
floor: `is_on_ground` for the first 5 ticks of `is_jumping`)."""


class JumpTracker:
    """Remembers the frame at which each car's jump began, to tell a jumping car whose wheels still touch."""

    def __init__(self) -> None:
        self.jump_frame: dict[int, int] = {}

    def on_ground(self, packet: Any, order: list[int], on_ground_state: Any, jumping_state: Any) -> np.ndarray:
        """(cars,) on ground, in `order`: OnGround, or Jumping for fewer than JUMP_TICKS_ON_WHEELS frames. Call it
        on every packet (a dropped packet makes the jump look later than it began, never earlier)."""
        frame = packet.match_info.frame_num
        out = np.zeros(len(order), dtype=bool)
        for c, i in enumerate(order):
            state = packet.players[i].air_state
            if state == jumping_state:
                start = self.jump_frame.setdefault(i, frame)
                out[c] = 0 <= frame - start < JUMP_TICKS_ON_WHEELS
            else:
                self.jump_frame.pop(i, None)
                out[c] = state == on_ground_state
        return out


def rotator_to_forward_up(pitch: float, yaw: float, roll: float) -> tuple[np.ndarray, np.ndarray]:
    """The car's forward and up unit vectors (3,) from the game's Euler angles (rad)."""
    cp, cy, cr = np.cos(pitch), np.cos(yaw), np.cos(roll)
    sp, sy, sr = np.sin(pitch), np.sin(yaw), np.sin(roll)
    forward = np.array([cp * cy, cp * sy, sp], dtype=np.float64)
    up = np.array([-cr * cy * sp - sr * sy, -cr * sy * sp + sr * cy, cp * cr], dtype=np.float64)
    return forward.astype(F32), up.astype(F32)


def pad_map(field_pads: list[Any], training_pads: list[list[float]]) -> np.ndarray:
    """index[i] = the field's boost pad (position in the packet's list) that is training pad i.

    field_pads: FieldInfo.boost_pads (objects with .location.x/.y); training_pads: [[x, y, z, is_big], ...].
    Raises ValueError when the field's pads are not the soccar pads the bot trained with.
    """
    if len(field_pads) != len(training_pads):
        raise ValueError(
            f"the field has {len(field_pads)} boost pads, the bot trained with {len(training_pads)}: "
            "play it on a standard soccar map"
        )
    field_xy = np.array([[p.location.x, p.location.y] for p in field_pads], dtype=np.float64)
    index = np.empty(len(training_pads), dtype=np.int64)
    for i, (x, y, _, _) in enumerate(training_pads):
        distance = np.hypot(field_xy[:, 0] - x, field_xy[:, 1] - y)
        j = int(distance.argmin())
        if distance[j] > PAD_MATCH_UU:
            raise ValueError(f"no boost pad of the field lies near ({x:g}, {y:g}): play it on a standard soccar map")
        index[i] = j
    if len(set(index.tolist())) != len(index):
        raise ValueError("two training boost pads matched one pad of the field: play it on a standard soccar map")
    return index


def car_order(packet: Any) -> list[int]:
    """Packet player indices in the bot's car order: blue players, then orange, each by index."""
    players = packet.players
    blue = [i for i, p in enumerate(players) if p.team == 0]
    orange = [i for i, p in enumerate(players) if p.team == 1]
    return blue + orange


def _vec(v: Any) -> list[float]:
    return [v.x, v.y, v.z]


def read_packet(
    packet: Any, order: list[int], pads: np.ndarray, on_ground_state: Any, on_ground: np.ndarray | None = None
) -> GameArrays:
    """The arrays of a GamePacket: cars in `order` (see `car_order`), pads through `pads` (see `pad_map`).

    on_ground_state: `rlbot.flat.AirState.OnGround` (passed in so this function needs no rlbot import);
    on_ground: (cars,) from a `JumpTracker`, else air_state == OnGround.
    """
    players = [packet.players[i] for i in order]
    n = len(players)
    forward = np.zeros((n, 3), F32)
    up = np.zeros((n, 3), F32)
    for c, p in enumerate(players):
        r = p.physics.rotation
        forward[c], up[c] = rotator_to_forward_up(r.pitch, r.yaw, r.roll)
    if on_ground is None:
        on_ground = np.array([p.air_state == on_ground_state for p in players], dtype=bool)
    has_jumped = np.array([p.has_jumped for p in players], dtype=bool)
    double_jumped = np.array([p.has_double_jumped for p in players], dtype=bool)
    dodged = np.array([p.has_dodged for p in players], dtype=bool)
    # dodge_timeout: seconds of dodge time left after a jump; -1 on the ground, after the window, or without a jump.
    dodge_time_left = np.array([p.dodge_timeout > 0.0 for p in players], dtype=bool)
    if packet.balls:
        ball = packet.balls[0].physics
        ball_pos, ball_vel, ball_ang = _vec(ball.location), _vec(ball.velocity), _vec(ball.angular_velocity)
    else:  # between goals the game may list no ball
        ball_pos, ball_vel, ball_ang = [0.0, 0.0, 93.15], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]
    pad_states = packet.boost_pads
    active = (
        np.array([pad_states[j].is_active for j in pads], dtype=bool)
        if len(pad_states) > int(pads.max(initial=-1))
        else np.ones(len(pads), dtype=bool)
    )
    return GameArrays(
        ball_pos=np.array(ball_pos, F32),
        ball_vel=np.array(ball_vel, F32),
        ball_ang_vel=np.array(ball_ang, F32),
        car_pos=np.array([_vec(p.physics.location) for p in players], F32).reshape(n, 3),
        car_vel=np.array([_vec(p.physics.velocity) for p in players], F32).reshape(n, 3),
        car_ang_vel=np.array([_vec(p.physics.angular_velocity) for p in players], F32).reshape(n, 3),
        car_forward=forward,
        car_up=up,
        car_boost=np.array([p.boost for p in players], F32),
        car_on_ground=on_ground,
        car_has_jump=on_ground & ~has_jumped,
        car_has_flip=~on_ground & ~double_jumped & ~dodged & (~has_jumped | dodge_time_left),
        car_demolished=np.array([p.demolished_timeout > 0.0 for p in players], dtype=bool),
        car_team=np.array([p.team for p in players], dtype=np.int64),
        pad_active=active,
    )
