"""The training observation in numpy: the twin of `rocketrl.env.obs.DefaultObs` for one arena.

This file is copied into exported bot folders and imports nothing from rocketrl: the layout constants
(scales, goal positions, team limits) come from the bot's bot.json, written at export time from
rocketrl's own modules. `tests/test_export.py` holds it equal to DefaultObs (1e-5 per element).

Shapes: C cars (blue cars first, then orange, each team in the order of its players), P = 34 boost pads
in RocketSim's order. Units: uu, uu/s, rad/s, boost in [0, 100]. The layout is the one documented in
`rocketrl/env/obs.py`: ball (9), previous controls (8), pads (34), this car (29), 5 other cars (20 each).
Orange agents see the field rotated by pi about z (x and y of every vector negated, pads in mirrored order).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

F32 = np.float32


@dataclass
class GameArrays:
    """One arena's state, as the observation needs it (float32 arrays, bool flags)."""

    ball_pos: np.ndarray
    """(3,) uu."""
    ball_vel: np.ndarray
    """(3,) uu/s."""
    ball_ang_vel: np.ndarray
    """(3,) rad/s."""
    car_pos: np.ndarray
    """(C, 3) uu."""
    car_vel: np.ndarray
    """(C, 3) uu/s."""
    car_ang_vel: np.ndarray
    """(C, 3) rad/s."""
    car_forward: np.ndarray
    """(C, 3) unit vector along the car's nose."""
    car_up: np.ndarray
    """(C, 3) unit vector out of the roof."""
    car_boost: np.ndarray
    """(C,) boost in [0, 100]."""
    car_on_ground: np.ndarray
    """(C,) bool."""
    car_has_jump: np.ndarray
    """(C,) bool: the first jump is available."""
    car_has_flip: np.ndarray
    """(C,) bool: a dodge or double jump is available."""
    car_demolished: np.ndarray
    """(C,) bool."""
    car_team: np.ndarray
    """(C,) int: 0 blue, 1 orange; blue cars come first."""
    pad_active: np.ndarray
    """(P,) bool, in RocketSim's pad order."""


def fits(g: GameArrays, max_teammates: int, max_opponents: int) -> bool:
    """True when every team of `g` fits the observation (at most max_opponents cars, max_teammates + 1)."""
    biggest = max(int((g.car_team == 0).sum()), int((g.car_team == 1).sum()))
    return biggest - 1 <= max_teammates and biggest <= max_opponents


def nearest_cars(g: GameArrays, me: int, max_teammates: int, max_opponents: int) -> np.ndarray:
    """Indices (K,), ascending, of car `me`, its nearest max_teammates teammates and nearest max_opponents
    opponents: the cars a bot sees when a team is larger than its observation holds."""
    distance = np.linalg.norm(g.car_pos - g.car_pos[me], axis=-1)
    others = [i for i in np.argsort(distance, kind="stable") if i != me]
    mates = [i for i in others if g.car_team[i] == g.car_team[me]][:max_teammates]
    opponents = [i for i in others if g.car_team[i] != g.car_team[me]][:max_opponents]
    return np.array(sorted([me, *mates, *opponents]), dtype=np.int64)


def select_cars(g: GameArrays, index: np.ndarray) -> GameArrays:
    """`g` with only the cars at `index` (K,), in that order; the ball and pads unchanged."""
    values = {f.name: getattr(g, f.name) for f in fields(g)}
    return GameArrays(**{name: v[index] if name.startswith("car_") else v for name, v in values.items()})


class ObsBuilder:
    """Builds (C, obs_size) observations, exactly as training did, from `GameArrays`.

    spec: the "obs" section of bot.json (see `rocketrl.export.bundle.obs_spec`).
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        if spec.get("kind") != "default":
            raise ValueError(f"bot.json obs.kind={spec.get('kind')!r}: this bot reads only the 'default' observation")
        self.pos_scale = F32(spec["pos_scale"])
        self.vel_scale = F32(spec["vel_scale"])
        self.ball_ang_vel_scale = F32(spec["ball_ang_vel_scale"])
        self.car_ang_vel_scale = F32(spec["car_ang_vel_scale"])
        self.boost_scale = F32(spec["boost_scale"])
        self.max_teammates = int(spec["max_teammates"])
        self.max_opponents = int(spec["max_opponents"])
        self.size = int(spec["size"])
        self.num_pads = int(spec["num_pads"])
        self.goal_y = float(spec["goal_y"])
        self.goal_z = float(spec["goal_z"])
        self.vector_slots = [int(s) for s in spec["vector_slots"]]

    def check_team_sizes(self, blue: int, orange: int) -> None:
        """Raise ValueError when a team is larger than the observation has room for."""
        biggest = max(blue, orange)
        if biggest - 1 > self.max_teammates or biggest > self.max_opponents:
            raise ValueError(
                f"{blue}v{orange}: the bot's observation has room for teams of up to {self.max_opponents} cars"
            )

    def build(self, g: GameArrays, prev_controls: np.ndarray) -> np.ndarray:
        """Observations (C, size) float32 of every car; prev_controls (C, 8) are each car's last controls."""
        n = g.car_pos.shape[0]
        team = g.car_team.astype(np.int64)
        self.check_team_sizes(int((team == 0).sum()), int((team == 1).sum()))
        car_pos, car_vel = g.car_pos.astype(F32), g.car_vel.astype(F32)
        forward, up = g.car_forward.astype(F32), g.car_up.astype(F32)
        ball = np.concatenate(
            [
                g.ball_pos.astype(F32) * self.pos_scale,
                g.ball_vel.astype(F32) * self.vel_scale,
                g.ball_ang_vel.astype(F32) * self.ball_ang_vel_scale,
            ]
        )
        flags = np.stack([g.car_on_ground, g.car_has_jump, g.car_has_flip, g.car_demolished], axis=-1).astype(F32)
        goals = np.array([[0.0, self.goal_y, self.goal_z], [0.0, -self.goal_y, self.goal_z]], dtype=F32)
        boost = (g.car_boost.astype(F32) * self.boost_scale)[:, None]
        self_part = np.concatenate(
            [
                car_pos * self.pos_scale,
                car_vel * self.vel_scale,
                g.car_ang_vel.astype(F32) * self.car_ang_vel_scale,
                forward,
                up,
                boost,
                flags,
                _in_car_frame(g.ball_pos.astype(F32) - car_pos, forward, up) * self.pos_scale,
                _in_car_frame(g.ball_vel.astype(F32) - car_vel, forward, up) * self.vel_scale,
                (goals[team] - car_pos) * self.pos_scale,
            ],
            axis=-1,
        )
        table = np.concatenate(
            [car_vel * self.vel_scale, forward, up, boost, flags[:, [0, 2, 3]], np.ones((n, 1), F32)], axis=-1
        )
        width = 6 + table.shape[1]
        others = np.zeros((n, self.max_teammates + self.max_opponents, width), dtype=F32)
        for c in range(n):
            mates = [o for o in range(n) if o != c and team[o] == team[c]]
            opponents = [o for o in range(n) if team[o] != team[c]]
            slots = [(i, o) for i, o in enumerate(mates)]
            slots += [(self.max_teammates + i, o) for i, o in enumerate(opponents)]
            for slot, o in slots:
                others[c, slot, 0:3] = (car_pos[o] - car_pos[c]) * self.pos_scale
                others[c, slot, 3:6] = (car_vel[o] - car_vel[c]) * self.vel_scale
                others[c, slot, 6:] = table[o]
        pad_order = np.arange(self.num_pads)
        pads = np.stack([g.pad_active[pad_order[::-1] if t == 1 else pad_order] for t in team]).astype(F32)
        controls = prev_controls.astype(F32).reshape(n, -1)
        obs = np.concatenate(
            [np.broadcast_to(ball, (n, ball.shape[0])), controls, pads, self_part, others.reshape(n, -1)], axis=-1
        )
        if obs.shape[1] != self.size:
            raise ValueError(f"built {obs.shape[1]} observation floats, bot.json says {self.size}")
        # Orange agents see the field rotated by pi about z: negate x and y of every vector.
        for c in np.flatnonzero(team == 1):
            for start in self.vector_slots:
                obs[c, start : start + 2] = -obs[c, start : start + 2]
        return obs


def _in_car_frame(v: np.ndarray, forward: np.ndarray, up: np.ndarray) -> np.ndarray:
    """World vectors v (C, 3) as (forward, left, up) components of each car's frame, left = up x forward."""
    left = np.cross(up, forward)
    return np.stack([(v * forward).sum(-1), (v * left).sum(-1), (v * up).sum(-1)], axis=-1)
