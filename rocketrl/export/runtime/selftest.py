"""`python bot.py --self-test`: run the bot on offline kickoff packets, without the game or an RLBot server.

Builds the framework's FieldInfo and GamePackets for a 1v1 kickoff (the bot on blue, then on orange), feeds the
agent a countdown and then 3 steps of kickoff ticks, and checks what a bot must do: neutral controls in the
countdown, a new choice every tick_skip ticks, the same controls held in between. Prints the controls it chose;
exit status 0 when every check passed.
"""

from __future__ import annotations

import json
import math

import numpy as np
from rlbot import flat

from .agent import RocketrlBot

BLUE_SPAWN = (-2048.0, -2560.0, math.pi / 4)
CAR_REST_Z = 17.0
BALL_REST_Z = 93.15
KICKOFF_BOOST = 100.0 / 3.0


def field_info(pads: list[list[float]]) -> flat.FieldInfo:
    """The soccar FieldInfo, pads listed by y then x as the game lists them (not in the training order)."""
    ordered = sorted(pads, key=lambda p: (p[1], p[0]))
    return flat.FieldInfo(
        boost_pads=[flat.BoostPad(location=flat.Vector3(x, y, z), is_full_boost=bool(big)) for x, y, z, big in ordered]
    )


def kickoff_packet(frame: int, phase: flat.MatchPhase, num_pads: int) -> flat.GamePacket:
    """A 1v1 kickoff: blue at its left diagonal spawn, orange at the mirrored spawn, the ball at rest."""
    x, y, yaw = BLUE_SPAWN

    def car(team: int) -> flat.PlayerInfo:
        sign = 1.0 if team == 0 else -1.0
        rotation = flat.Rotator(0.0, yaw if team == 0 else yaw - math.pi, 0.0)
        return flat.PlayerInfo(
            physics=flat.Physics(
                location=flat.Vector3(sign * x, sign * y, CAR_REST_Z),
                rotation=rotation,
                velocity=flat.Vector3(),
                angular_velocity=flat.Vector3(),
            ),
            air_state=flat.AirState.OnGround,
            dodge_timeout=-1.0,
            demolished_timeout=-1.0,
            team=team,
            boost=KICKOFF_BOOST,
        )

    return flat.GamePacket(
        players=[car(0), car(1)],
        boost_pads=[flat.BoostPadState(is_active=True) for _ in range(num_pads)],
        balls=[flat.BallInfo(physics=flat.Physics(location=flat.Vector3(0.0, 0.0, BALL_REST_Z)))],
        match_info=flat.MatchInfo(match_phase=phase, frame_num=frame),
    )


def as_tuple(c: flat.ControllerState) -> tuple:
    """The fields of a ControllerState (the framework's objects do not compare by value)."""
    return (c.throttle, c.steer, c.pitch, c.yaw, c.roll, c.jump, c.boost, c.handbrake)


def run(team: int) -> list[str]:
    """Play one offline kickoff as `team`; returns the failed checks (empty when all passed)."""
    bot = RocketrlBot(default_agent_id="rocketrl/self-test")
    bot.index, bot.team = team, team
    pads = json.loads((bot.folder / "bot.json").read_text())["obs"]["pads"]
    bot.field_info = field_info(pads)
    bot.initialize()
    failures = []
    neutral = as_tuple(flat.ControllerState())
    for frame in range(0, 20):
        if as_tuple(bot.get_output(kickoff_packet(frame, flat.MatchPhase.Countdown, len(pads)))) != neutral:
            failures.append(f"team {team}: controls during the countdown at frame {frame}")
    start, chosen = 20, []
    for frame in range(start, start + 3 * bot.tick_skip):
        out = as_tuple(bot.get_output(kickoff_packet(frame, flat.MatchPhase.Kickoff, len(pads))))
        if (frame - start) % bot.tick_skip == 0:
            chosen.append(out)
        elif out != chosen[-1]:
            failures.append(f"team {team}: controls changed between choices at frame {frame}")
    if not np.isfinite(bot.prev_controls).all():
        failures.append(f"team {team}: controls are not finite")
    side = "blue" if team == 0 else "orange"
    names = ("throttle", "steer", "pitch", "yaw", "roll", "jump", "boost", "handbrake")
    for k, out in enumerate(chosen):
        print(f"{side} step {k}: " + " ".join(f"{name} {float(v):+.0f}" for name, v in zip(names, out)))
    return failures


def main() -> int:
    failures = run(0) + run(1)
    for failure in failures:
        print(f"FAIL {failure}")
    print("self-test passed" if not failures else f"self-test failed: {len(failures)} checks")
    return 0 if not failures else 1
