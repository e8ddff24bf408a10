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

from pathlib import Path

import numpy as np
from rlbot import flat
from rlbot.managers import Bot

from .obs import ObsBuilder
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
        controls = np.zeros((len(order), 8), np.float32)
        controls[me] = prev_controls
        return self.obs_builder.build(arrays, controls)[me]
