"""Helpers of the export tests: small checkpoints, and RLBot v5 game packets built from RocketSim's own objects."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from rocketrl.env.obs import OBS_SIZE
from rocketrl.export import game_packets
from rocketrl.export.game_packets import field_info, field_pad_order  # noqa: F401 (the tests' imports)
from rocketrl.infra.checkpoint import save_checkpoint
from rocketrl.policy.actor_critic import ActorCritic
from rocketrl.policy.normalize import ObservationNormalizer
from rocketrl.sim.arena import TICK_TIME

ATTENTION = {"embed_size": 32, "attention_heads": 4, "attention_layers": 2}
"""The widths of the small attention networks the tests build (model.kind=attention)."""


def make_checkpoint(
    folder: Path,
    lstm: bool = False,
    action: str = "discrete",
    hidden: tuple[int, ...] = (64, 64),
    seed: int = 0,
    kind: str = "mlp",
) -> Path:
    """A checkpoint with a random network whose greedy actions vary with the observation, and real-looking
    normalization statistics (mean ~0.1, variance 0.01-2; the attention network's presence flags kept raw, as
    training keeps them)."""
    torch.manual_seed(seed)
    num_actions = 90 if action == "discrete" else 8
    model_cfg = {"actor_hidden": list(hidden), "critic_hidden": list(hidden), "lstm": lstm, "lstm_hidden": 32}
    if kind != "mlp":
        model_cfg.update(kind=kind, **ATTENTION)
    model = ActorCritic.from_config(OBS_SIZE, num_actions, model_cfg, discrete=action == "discrete")
    with torch.no_grad():  # spread the logits: the untrained output layer is nearly flat
        (model.actor.head if kind == "attention" else model.actor)[-1].weight.mul_(100.0)
    norm = ObservationNormalizer(OBS_SIZE, "cpu")
    norm.rms.mean.copy_(torch.randn(OBS_SIZE, dtype=torch.float64) * 0.1)
    norm.rms.var.copy_(torch.rand(OBS_SIZE, dtype=torch.float64) * 2.0 + 0.01)
    norm.rms.mean[list(model.raw_obs_columns)] = 0.0
    norm.rms.var[list(model.raw_obs_columns)] = 1.0
    config = {
        "env": {"action": action, "tick_skip": 8, "blue_size": 1, "orange_size": 1},
        "model": model_cfg,
        "ppo": {"normalize_observations": True, "obs_clip": 10.0},
        "run": {"name": "tiny"},
    }
    suffix = ("_lstm" if lstm else "") + ("_attention" if kind == "attention" else "")
    path = folder / "run" / "checkpoints" / f"tiny_{action}{suffix}.safetensors"
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_checkpoint(path, {"model": model.state_dict(), "obs_norm": norm.state_dict()}, {"config": config})


def euler_of(rot_mat) -> tuple[float, float, float]:
    """(pitch, yaw, roll) in float64 of a RocketSim RotMat, in the game's convention: checked by rebuilding the
    matrix with RocketSim's own Angle(yaw, pitch, roll).as_rot_mat(). (RotMat.as_angle computes in float32,
    which near a vertical nose loses ~1e-4 rad of yaw and roll; the game's packets carry float64 in Python.)"""
    import RocketSim as rs

    pitch, yaw, roll = game_packets.euler_of(rot_mat)
    rebuilt = rs.Angle(yaw, pitch, roll).as_rot_mat().as_numpy()
    assert np.abs(rebuilt - rot_mat.as_numpy()).max() < 1e-5, "Euler angles disagree with RocketSim's convention"
    return pitch, yaw, roll


def snap_rotations(block, arenas: int) -> None:
    """Set every car's rotation to the matrix of its own Euler angles (a change below 1e-5 per entry).

    Bullet's float32 matrices drift slightly off orthonormal, and a game packet carries a rotation as three
    Euler angles, which can only describe an orthonormal matrix: a drifted matrix read back through its angles
    moves a far point's car-frame coordinates by up to ~|distance| x 1e-5. Snapping first makes every state
    exactly what a packet can say, so observations can be compared element by element.
    """
    import RocketSim as rs

    for k in range(arenas):
        for car in block.cars[k]:
            state = car.get_state()
            pitch, yaw, roll = euler_of(state.rot_mat)
            state.rot_mat = rs.Angle(yaw, pitch, roll).as_rot_mat()
            car.set_state(state)
    block.read_reset(np.arange(arenas))


def packet_from_rocketsim(arena, cars, teams: list[int], pads, frame: int, player_order: list[int]):
    """A GamePacket of a RocketSim arena in the game's conventions (rocketrl.export.game_packets), in the Active
    phase; rotations checked against RocketSim's Angle (`euler_of`)."""
    from rlbot import flat

    for car in cars:
        euler_of(car.get_state().rot_mat)
    writer = game_packets.PacketWriter(len(cars))
    return writer.packet(arena, cars, teams, pads, frame, frame, flat.MatchPhase.Active, player_order)


def primed_jump_tracker(jump_tracker, packet, cars, player_order: list[int]):
    """`jump_tracker` told when each jumping car's jump began, from RocketSim's jump time, as a bot that saw every
    frame would know it (a packet every tick_skip ticks skips the jump's first frames)."""
    frame = packet.match_info.frame_num
    for j, c in enumerate(player_order):
        s = cars[c].get_state()
        if s.is_jumping:
            jump_tracker.jump_frame[j] = frame - (round(s.jump_time / TICK_TIME) - 1)
    return jump_tracker


def interleaved(teams: list[int]) -> list[int]:
    """A packet order that alternates teams (blue 0, orange 0, blue 1, ...), keeping each team's order."""
    blue = [c for c, t in enumerate(teams) if t == 0]
    orange = [c for c, t in enumerate(teams) if t == 1]
    order = []
    for k in range(max(len(blue), len(orange))):
        order += blue[k : k + 1] + orange[k : k + 1]
    return order
