"""RLBot v5 GamePackets written from RocketSim arenas the way the game writes them, for tests and packet_loop.

The conventions follow the schema's field docs (`rlbot_flatbuffers/__init__.pyi` of rlbot-flatbuffers 0.19, the
package rlbot 2.0.0b56 installs; quoted below) and the Python interface (`rlbot/managers/bot.py`):

- `PlayerInfo.air_state` (AirState): "Jumping: the car is currently affected by jumping forces of an initial
  jump" (RocketSim's `is_jumping`, which starts while the wheels still touch: the game reports Jumping before the
  car leaves the ground); "DoubleJumping ... lasts for 13 ticks"; "Dodging: ... forces and torque of a dodge"
  (RocketSim's `is_flipping`); "OnGround: all wheels are on the ground"; else InAir.
- `PlayerInfo.dodge_timeout`: "How long until the player cannot dodge/double jump anymore. The value is -1 while
  on ground or when airborne for too long after jumping ... falling off a surface instead of jumping does not
  activate the dodge timeout" (so -1 too). In the air after a jump: 1.25 s less RocketSim's air time since the
  jump's end (RocketSim counts the window from the end of the jump, the schema's "plus up to an additional 0.2
  seconds depending how long the jump button was pressed").
- `has_jumped`, `has_double_jumped`, `has_dodged`: RocketSim's flags (a flip reset clears them in both).
- `PlayerInfo.demolished_timeout`: "How long until the player is not demolished anymore. The value is -1 if
  while not demolished." RocketSim's respawn timer while demolished; the car's physics as RocketSim keeps it.
- `GamePacket.boost_pads` in FieldInfo's order (`field_pad_order`: by y, then x), `BoostPadState.timer`: "The
  number of seconds since the boost has been picked up, or 0 if the boost is active."
- `MatchInfo.frame_num` counts every frame, in every phase; `match_phase` Countdown, Kickoff (until the ball is
  touched), Active, GoalScored, Replay, Ended (GamePacket MatchPhase docs).
- Orange is not mirrored in the packet: every location is in the game's frame, blue goal at -y; a bot mirrors
  for itself.
- The interface hands a bot only the latest packet (`Bot._run`: "process the latest packet" once no more
  messages wait), so a slow bot skips frames, and its last ControllerState stays in force until it sends another.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rocketrl.sim.arena import BOOST_PAD_COOLDOWN_BIG, BOOST_PAD_COOLDOWN_SMALL, BOOST_PADS, TICK_TIME
from rocketrl.sim.rocketsim import DOUBLE_JUMP_MAX_DELAY

DOUBLE_JUMP_TICKS = 13
"""Ticks the game reports DoubleJumping after a double jump (AirState docs)."""
WORLD_GRAVITY_Z = -650.0


def field_pad_order() -> list[int]:
    """RocketSim pad indices in the order the game's FieldInfo lists them (by y, then x)."""
    return sorted(range(len(BOOST_PADS)), key=lambda i: (BOOST_PADS[i][1], BOOST_PADS[i][0]))


def field_info() -> Any:
    """The soccar FieldInfo: boost pads in field_pad_order, goals left empty (the bot does not read them)."""
    from rlbot import flat

    return flat.FieldInfo(
        boost_pads=[
            flat.BoostPad(location=flat.Vector3(*BOOST_PADS[i][:3]), is_full_boost=bool(BOOST_PADS[i][3]))
            for i in field_pad_order()
        ]
    )


def euler_of(rot_mat: Any) -> tuple[float, float, float]:
    """(pitch, yaw, roll) in float64 of a RocketSim RotMat in the game's convention (RocketSim's Angle)."""
    forward = np.array(rot_mat.forward.as_tuple(), dtype=np.float64)
    right = np.array(rot_mat.right.as_tuple(), dtype=np.float64)
    up = np.array(rot_mat.up.as_tuple(), dtype=np.float64)
    pitch = float(np.arcsin(np.clip(forward[2], -1.0, 1.0)))
    return pitch, float(np.arctan2(forward[1], forward[0])), float(np.arctan2(-right[2], up[2]))


class PacketWriter:
    """Writes the GamePackets of one RocketSim arena tick after tick; remembers what the game's packet needs from
    earlier ticks (when each car double jumped)."""

    def __init__(self, num_cars: int) -> None:
        self.double_jump_tick: list[int | None] = [None] * num_cars
        self.had_double_jumped = [False] * num_cars

    def air_state(self, c: int, s: Any, tick: int) -> Any:
        """The game's AirState of car c with RocketSim CarState s at `tick`."""
        from rlbot import flat

        if s.has_double_jumped and not self.had_double_jumped[c]:
            self.double_jump_tick[c] = tick
        self.had_double_jumped[c] = s.has_double_jumped
        if s.is_jumping:
            return flat.AirState.Jumping
        if s.is_on_ground:
            return flat.AirState.OnGround
        start = self.double_jump_tick[c]
        if s.has_double_jumped and start is not None and tick - start < DOUBLE_JUMP_TICKS:
            return flat.AirState.DoubleJumping
        if s.is_flipping:
            return flat.AirState.Dodging
        return flat.AirState.InAir

    @staticmethod
    def dodge_timeout(s: Any) -> float:
        """Seconds of dodge / double jump left, -1 on the ground, after the window, or without a jump."""
        if s.is_jumping:
            return DOUBLE_JUMP_MAX_DELAY
        if s.is_on_ground or not s.has_jumped or s.air_time_since_jump >= DOUBLE_JUMP_MAX_DELAY:
            return -1.0
        return DOUBLE_JUMP_MAX_DELAY - s.air_time_since_jump

    def player(self, c: int, car: Any, team: int, tick: int) -> Any:
        """PlayerInfo of RocketSim car c."""
        from rlbot import flat

        s = car.get_state()
        pitch, yaw, roll = euler_of(s.rot_mat)
        return flat.PlayerInfo(
            physics=flat.Physics(
                location=flat.Vector3(*s.pos.as_tuple()),
                rotation=flat.Rotator(pitch, yaw, roll),
                velocity=flat.Vector3(*s.vel.as_tuple()),
                angular_velocity=flat.Vector3(*s.ang_vel.as_tuple()),
            ),
            air_state=self.air_state(c, s, tick),
            dodge_timeout=self.dodge_timeout(s),
            demolished_timeout=max(float(s.demo_respawn_timer), TICK_TIME) if s.is_demoed else -1.0,
            is_supersonic=bool(s.is_supersonic),
            is_bot=True,
            team=team,
            boost=float(s.boost),
            has_jumped=bool(s.has_jumped),
            has_double_jumped=bool(s.has_double_jumped),
            has_dodged=bool(s.has_flipped),
        )

    def packet(
        self, arena: Any, cars: list[Any], teams: list[int], pads: list[Any], tick: int, frame: int, phase: Any,
        player_order: list[int] | None = None, seconds_remaining: float = 300.0,
    ) -> Any:  # fmt: skip
        """The GamePacket of `arena` at physics `tick` and game `frame` in match `phase`.

        cars: RocketSim Car objects in rocketrl's car order (blue, then orange), teams: their teams, pads: the
        arena's BoostPads in RocketSim's order; player_order[j] = the car listed as packet player j (rocketrl's
        order when None)."""
        from rlbot import flat

        order = player_order if player_order is not None else list(range(len(cars)))
        players = [self.player(c, cars[c], teams[c], tick) for c in order]
        ball = arena.ball.get_state()
        pad_states = []
        for i in field_pad_order():
            state = pads[i].get_state()
            cooldown = BOOST_PAD_COOLDOWN_BIG if BOOST_PADS[i][3] else BOOST_PAD_COOLDOWN_SMALL
            timer = 0.0 if state.is_active else max(cooldown - float(state.cooldown), 0.0)
            pad_states.append(flat.BoostPadState(is_active=bool(state.is_active), timer=timer))
        return flat.GamePacket(
            players=players,
            boost_pads=pad_states,
            balls=[
                flat.BallInfo(
                    physics=flat.Physics(
                        location=flat.Vector3(*ball.pos.as_tuple()),
                        rotation=flat.Rotator(),
                        velocity=flat.Vector3(*ball.vel.as_tuple()),
                        angular_velocity=flat.Vector3(*ball.ang_vel.as_tuple()),
                    )
                )
            ],
            match_info=flat.MatchInfo(
                seconds_elapsed=frame * TICK_TIME,
                game_time_remaining=seconds_remaining,
                match_phase=phase,
                world_gravity_z=WORLD_GRAVITY_Z,
                game_speed=1.0,
                frame_num=frame,
            ),
        )
