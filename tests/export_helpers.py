"""Helpers of the export tests: small checkpoints, and RLBot v5 game packets built from RocketSim's own objects."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from rocketrl.env.obs import OBS_SIZE
from rocketrl.infra.checkpoint import save_checkpoint
from rocketrl.policy.actor_critic import ActorCritic
from rocketrl.policy.normalize import ObservationNormalizer
from rocketrl.sim.arena import BOOST_PADS

DOUBLE_JUMP_MAX_DELAY = 1.25


def make_checkpoint(
    folder: Path, lstm: bool = False, action: str = "discrete", hidden: tuple[int, ...] = (64, 64), seed: int = 0
) -> Path:
    """A checkpoint with a random network whose greedy actions vary with the observation, and real-looking
    normalization statistics (mean ~0.1, variance 0.01-2)."""
    torch.manual_seed(seed)
    num_actions = 90 if action == "discrete" else 8
    model = ActorCritic(
        OBS_SIZE,
        num_actions,
        discrete=action == "discrete",
        actor_hidden=hidden,
        critic_hidden=hidden,
        lstm_hidden=32 if lstm else None,
    )
    with torch.no_grad():
        model.actor[-1].weight.mul_(100.0)  # spread the logits: the untrained output layer is nearly flat
    norm = ObservationNormalizer(OBS_SIZE, "cpu")
    norm.rms.mean.copy_(torch.randn(OBS_SIZE, dtype=torch.float64) * 0.1)
    norm.rms.var.copy_(torch.rand(OBS_SIZE, dtype=torch.float64) * 2.0 + 0.01)
    config = {
        "env": {"action": action, "tick_skip": 8, "blue_size": 1, "orange_size": 1},
        "model": {"actor_hidden": list(hidden), "critic_hidden": list(hidden), "lstm": lstm, "lstm_hidden": 32},
        "ppo": {"normalize_observations": True, "obs_clip": 10.0},
        "run": {"name": "tiny"},
    }
    path = folder / "run" / "checkpoints" / f"tiny_{action}{'_lstm' if lstm else ''}.safetensors"
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_checkpoint(path, {"model": model.state_dict(), "obs_norm": norm.state_dict()}, {"config": config})


def euler_of(rot_mat) -> tuple[float, float, float]:
    """(pitch, yaw, roll) in float64 of a RocketSim RotMat, in the game's convention: checked by rebuilding the
    matrix with RocketSim's own Angle(yaw, pitch, roll).as_rot_mat(). (RotMat.as_angle computes in float32,
    which near a vertical nose loses ~1e-4 rad of yaw and roll; the game's packets carry float64 in Python.)"""
    import RocketSim as rs

    forward = np.array(rot_mat.forward.as_tuple(), dtype=np.float64)
    right = np.array(rot_mat.right.as_tuple(), dtype=np.float64)
    up = np.array(rot_mat.up.as_tuple(), dtype=np.float64)
    pitch = float(np.arcsin(np.clip(forward[2], -1.0, 1.0)))
    yaw = float(np.arctan2(forward[1], forward[0]))
    roll = float(np.arctan2(-right[2], up[2]))
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


def field_pads_order() -> list[int]:
    """RocketSim pad indices in the order the game's FieldInfo lists them (by y, then x)."""
    return sorted(range(len(BOOST_PADS)), key=lambda i: (BOOST_PADS[i][1], BOOST_PADS[i][0]))


def field_info():
    from rlbot import flat

    return flat.FieldInfo(
        boost_pads=[
            flat.BoostPad(location=flat.Vector3(*BOOST_PADS[i][:3]), is_full_boost=BOOST_PADS[i][3])
            for i in field_pads_order()
        ]
    )


def packet_from_rocketsim(arena, cars, teams: list[int], pads, frame: int, player_order: list[int]):
    """A GamePacket of a RocketSim arena, written from RocketSim's objects (not from rocketrl's readout).

    cars: RocketSim Car objects in rocketrl's car order; teams: their teams; pads: the arena's BoostPads in
    RocketSim's order; player_order[j] = the car (rocketrl order) listed as packet player j. Rotations come
    are the game's Euler angles of RocketSim's matrix (`euler_of`, checked against RocketSim's Angle).
    """
    from rlbot import flat

    def vec(v) -> flat.Vector3:
        return flat.Vector3(*v.as_tuple())

    players = []
    for c in player_order:
        s = cars[c].get_state()
        pitch, yaw, roll = euler_of(s.rot_mat)
        if s.is_on_ground:
            air = flat.AirState.OnGround
        elif s.is_jumping:
            air = flat.AirState.Jumping
        else:
            air = flat.AirState.InAir
        in_air_after_jump = s.has_jumped and not s.is_on_ground
        players.append(
            flat.PlayerInfo(
                physics=flat.Physics(
                    location=vec(s.pos),
                    rotation=flat.Rotator(pitch, yaw, roll),
                    velocity=vec(s.vel),
                    angular_velocity=vec(s.ang_vel),
                ),
                air_state=air,
                dodge_timeout=max(DOUBLE_JUMP_MAX_DELAY - s.air_time_since_jump, 0.0) if in_air_after_jump else -1.0,
                demolished_timeout=max(s.demo_respawn_timer, 1e-3) if s.is_demoed else -1.0,
                team=teams[c],
                boost=s.boost,
                has_jumped=s.has_jumped,
                has_double_jumped=s.has_double_jumped,
                has_dodged=s.has_flipped,
            )
        )
    ball = arena.ball.get_state()
    return flat.GamePacket(
        players=players,
        boost_pads=[flat.BoostPadState(is_active=pads[i].get_state().is_active) for i in field_pads_order()],
        balls=[
            flat.BallInfo(
                physics=flat.Physics(
                    location=vec(ball.pos),
                    rotation=flat.Rotator(),
                    velocity=vec(ball.vel),
                    angular_velocity=vec(ball.ang_vel),
                )
            )
        ],
        match_info=flat.MatchInfo(match_phase=flat.MatchPhase.Active, frame_num=frame),
    )


def interleaved(teams: list[int]) -> list[int]:
    """A packet order that alternates teams (blue 0, orange 0, blue 1, ...), keeping each team's order."""
    blue = [c for c, t in enumerate(teams) if t == 0]
    orange = [c for c, t in enumerate(teams) if t == 1]
    order = []
    for k in range(max(len(blue), len(orange))):
        order += blue[k : k + 1] + orange[k : k + 1]
    return order
