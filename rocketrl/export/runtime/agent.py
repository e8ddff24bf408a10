"""The RLBot v5 bot: reads each game packet, acts every tick_skip ticks as in training, holds in between.

Copied into exported bot folders (bot.py starts it). In training one step lasts `tick_skip` physics ticks
(120 per second) and the controls are held for all of them; here the bot builds its observation and picks
new controls when `tick_skip` ticks have passed since its last choice (by the packet's frame number) and
sends its held controls on the packets in between. Every kickoff starts a new episode, as in training: the
previous controls in the observation and any recurrent state are zeroed. Outside the kickoff and active
phases (countdown, goal scored, replay, pause, end) the bot sends neutral controls. A demolished car keeps
its cadence, as it did in training (the game ignores its controls until it respawns).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from rlbot import flat
from rlbot.managers import Bot

from .obs import ObsBuilder, fits, nearest_cars, select_cars
from .packet import JumpTracker, car_order, pad_map, read_packet
from .policy import ExportedPolicy

PLAYING = (flat.MatchPhase.Kickoff, flat.MatchPhase.Active)


def to_controller(controls: np.ndarray) -> flat.ControllerState:
    """Controls (8,) -> the framework's ControllerState."""
    throttle, steer, pitch, yaw, roll, jump, boost, handbrake = (float(v) for v in controls)
    return flat.ControllerState(
        throttle=throttle,
        steer=steer,
        pitch=pitch,
        yaw=yaw,
        roll=roll,
        jump=jump > 0.5,
        boost=boost > 0.5,
        handbrake=handbrake > 0.5,
    )


class RocketrlBot(Bot):
    """A rocketrl policy playing in Rocket League through RLBot v5."""

    folder: Path = Path(__file__).resolve().parent.parent

    def initialize(self) -> None:
        self.policy = ExportedPolicy(self.folder)
        settings = self.policy.settings
        self.tick_skip = int(settings["tick_skip"])
        self.obs_builder = ObsBuilder(settings["obs"])
        self.pads = pad_map(list(self.field_info.boost_pads), settings["obs"]["pads"])
        self.neutral = flat.ControllerState()
        self.jumps = JumpTracker()
        self.on_ground: np.ndarray | None = None
        self.warned = False
        self.new_episode()

    def new_episode(self) -> None:
        """Forget the previous controls and recurrent state: the next packet starts an episode."""
        self.prev_controls = np.zeros(8, np.float32)
        self.held = self.neutral
        self.next_frame: int | None = None
        self.policy.reset()

    def get_output(self, packet: flat.GamePacket) -> flat.ControllerState:
        order = car_order(packet)
        self.on_ground = self.jumps.on_ground(packet, order, flat.AirState.OnGround, flat.AirState.Jumping)
        if packet.match_info.match_phase not in PLAYING:
            if self.next_frame is not None:
                self.new_episode()
            return self.neutral
        frame = packet.match_info.frame_num
        if self.next_frame is None or frame >= self.next_frame or frame < self.next_frame - self.tick_skip:
            self.held = to_controller(self.choose(packet))
            self.next_frame = frame + self.tick_skip
        return self.held

    def choose(self, packet: flat.GamePacket) -> np.ndarray:
        """New controls (8,) from this packet; they become the previous controls of the next choice."""
        obs = self.observe(packet, self.prev_controls)
        self.prev_controls = self.policy.controls(obs[None])[0]
        return self.prev_controls

    def observe(self, packet: flat.GamePacket, prev_controls: np.ndarray) -> np.ndarray:
        """This car's observation (obs_size,) of a packet, with its previous controls (8,)."""
        order = car_order(packet)
        arrays = read_packet(packet, order, self.pads, flat.AirState.OnGround, self.on_ground)
        me = order.index(self.index)
        builder = self.obs_builder
        if not self.warned:
            self.warn_team_size(arrays)
        if not fits(arrays, builder.max_teammates, builder.max_opponents):
            # Teams beyond the observation: the bot sees its nearest teammates and opponents, as in a 3v3.
            index = nearest_cars(arrays, me, builder.max_teammates, builder.max_opponents)
            arrays, me = select_cars(arrays, index), int(np.flatnonzero(index == me)[0])
        controls = np.zeros((arrays.car_team.shape[0], 8), np.float32)
        controls[me] = prev_controls
        return builder.build(arrays, controls)[me]

    def warn_team_size(self, arrays) -> None:
        """Once per game: say so when this match's team size is neither one the bot trained at nor measured at."""
        self.warned = True
        settings = self.policy.settings
        blue, orange = int((arrays.car_team == 0).sum()), int((arrays.car_team == 1).sum())
        trained = [str(size) for size in settings["trained_team_sizes"]]
        measured = list(settings.get("measured_team_sizes", {}))
        if f"{blue}v{orange}" in trained + measured or f"{orange}v{blue}" in trained + measured:
            return
        print(
            f"rocketrl bot: this match is {blue}v{orange}; the bot was trained at {', '.join(trained)}"
            + (f" and measured at {', '.join(measured)}" if measured else "")
            + (
                "; a team larger than the observation holds: the bot sees its nearest cars"
                if not fits(arrays, self.obs_builder.max_teammates, self.obs_builder.max_opponents)
                else ""
            ),
            file=sys.stderr,
            flush=True,
        )
