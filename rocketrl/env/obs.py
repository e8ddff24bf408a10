"""Observation builder: 180 floats per agent, padded for up to 3v3, mirrored for orange.

Every agent sees the field from the blue side: for an orange agent every vector is rotated by pi
about z (x -> -x, y -> -y) and the boost pads are listed in mirrored order, so one policy plays
both sides. Layout of one agent's observation (index ranges, scaled to about unit range):

    0:9      ball: position, velocity (/ 2300), angular velocity (/ 6)
    9:17     this car's previous controls: throttle, steer, pitch, yaw, roll, jump, boost, handbrake
    17:51    boost pads active (34), in the agent's (mirrored) pad order
    51:80    this car (29): position, velocity (/ 2300), angular velocity (/ 5.5), forward, up,
             boost (/ 100), on ground, has jump, has flip, demolished,
             ball - car position and ball - car velocity (/ 2300) in the car's own frame (forward,
             left = up x forward, up; the same for either team, so never mirrored), opponent goal - car
             position (/ 2300)
    80:180   five other cars, 20 floats each: up to 2 teammates, then up to 3 opponents, in car
             order; empty slots are all zero. Each: other - this position, other - this velocity
             (/ 2300), other's velocity (/ 2300), forward, up, boost (/ 100), on ground, has flip,
             demolished, present (1)
"""

from __future__ import annotations

import torch

from rocketrl.sim.arena import BACK_WALL_Y, GOAL_HEIGHT, MAX_TEAM_SIZE, NUM_BOOST_PADS
from rocketrl.sim.state import BatchState

POS_SCALE = 1.0 / 2300.0
VEL_SCALE = 1.0 / 2300.0
BALL_ANG_VEL_SCALE = 1.0 / 6.0
CAR_ANG_VEL_SCALE = 1.0 / 5.5
BOOST_SCALE = 1.0 / 100.0

BALL_SIZE = 9
CONTROLS_SIZE = 8
SELF_SIZE = 29
OTHER_SIZE = 20
MAX_TEAMMATES = MAX_TEAM_SIZE - 1
MAX_OPPONENTS = MAX_TEAM_SIZE
OBS_SIZE = BALL_SIZE + CONTROLS_SIZE + NUM_BOOST_PADS + SELF_SIZE + (MAX_TEAMMATES + MAX_OPPONENTS) * OTHER_SIZE
assert OBS_SIZE == 180

_PADS_START = BALL_SIZE + CONTROLS_SIZE
_SELF_START = _PADS_START + NUM_BOOST_PADS
_OTHERS_START = _SELF_START + SELF_SIZE

# Named places in one agent's observation (the layout above), for code that reads observations by hand
# (RulePolicy, the scripted opponents, imitation): an int is one float, a slice a range.
BALL_POS = slice(0, 3)
BALL_VEL = slice(3, 6)
PREV_JUMP = BALL_SIZE + 5
"""This car's jump control on the previous step."""
PADS = slice(_PADS_START, _SELF_START)
CAR_POS = slice(_SELF_START, _SELF_START + 3)
CAR_VEL = slice(_SELF_START + 3, _SELF_START + 6)
CAR_ANG_VEL = slice(_SELF_START + 6, _SELF_START + 9)
CAR_FORWARD = slice(_SELF_START + 9, _SELF_START + 12)
CAR_UP = slice(_SELF_START + 12, _SELF_START + 15)
CAR_BOOST = _SELF_START + 15
CAR_ON_GROUND = _SELF_START + 16
CAR_HAS_JUMP = _SELF_START + 17
CAR_HAS_FLIP = _SELF_START + 18
CAR_DEMOLISHED = _SELF_START + 19
BALL_IN_CAR_FRAME = slice(_SELF_START + 20, _SELF_START + 23)
"""Ball - car position in the car's frame (forward, left, up)."""
BALL_VEL_IN_CAR_FRAME = slice(_SELF_START + 23, _SELF_START + 26)
"""Ball - car velocity in the car's frame."""
OTHERS = slice(_OTHERS_START, OBS_SIZE)
"""The other cars' slots: reshape to (..., NUM_OTHER_SLOTS, OTHER_SIZE); teammates first."""
NUM_OTHER_SLOTS = MAX_TEAMMATES + MAX_OPPONENTS
OTHER_REL_POS = slice(0, 3)
"""Within one other car's slot: other - this position."""
OTHER_DEMOLISHED = OTHER_SIZE - 2
OTHER_PRESENT = OTHER_SIZE - 1

_BALL_NAMES = [f"ball.{part}.{axis}" for part in ("pos", "vel", "ang_vel") for axis in "xyz"]
_CONTROL_NAMES = [f"prev.{c}" for c in ("throttle", "steer", "pitch", "yaw", "roll", "jump", "boost", "handbrake")]
_SELF_NAMES = [
    *(f"car.{part}.{axis}" for part in ("pos", "vel", "ang_vel", "forward", "up") for axis in "xyz"),
    "car.boost", "car.on_ground", "car.has_jump", "car.has_flip", "car.demolished",
    *(f"car.{part}.{axis}" for part in ("ball_rel_pos", "ball_rel_vel") for axis in ("fwd", "left", "up")),
    *(f"car.goal_rel_pos.{axis}" for axis in "xyz"),
]  # fmt: skip
_OTHER_NAMES = [
    *(f"{part}.{axis}" for part in ("rel_pos", "rel_vel", "vel", "forward", "up") for axis in "xyz"),
    "boost", "on_ground", "has_flip", "demolished", "present",
]  # fmt: skip


def field_name(index: int) -> str:
    """The name of float `index` of one agent's observation, e.g. 'ball.vel.x', 'pad[5]', 'car.on_ground',
    'other[3].has_flip' (other slots 0-1 are teammates, 2-4 opponents)."""
    if not 0 <= index < OBS_SIZE:
        raise IndexError(f"observation index {index}: must be 0 to {OBS_SIZE - 1}")
    if index < BALL_SIZE:
        return _BALL_NAMES[index]
    if index < _PADS_START:
        return _CONTROL_NAMES[index - BALL_SIZE]
    if index < _SELF_START:
        return f"pad[{index - _PADS_START}]"
    if index < _OTHERS_START:
        return _SELF_NAMES[index - _SELF_START]
    slot, offset = divmod(index - _OTHERS_START, OTHER_SIZE)
    return f"other[{slot}].{_OTHER_NAMES[offset]}"


def _vector_slots() -> list[int]:
    """Start indices of every 3-vector in the layout (they flip x and y for orange)."""
    slots = [0, 3, 6]
    slots += [_SELF_START + 3 * i for i in range(5)]  # pos, vel, ang_vel, forward, up
    slots += [_SELF_START + 26]  # goal rel pos (the car-frame ball vectors at +20 and +23 do not flip)
    for j in range(MAX_TEAMMATES + MAX_OPPONENTS):
        base = _OTHERS_START + OTHER_SIZE * j
        slots += [base + 3 * i for i in range(5)]  # rel pos, rel vel, vel, forward, up
    return slots


def _in_car_frame(v: torch.Tensor, forward: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """World vectors v (A, C, 3) as (forward, left, up) components of each car's frame."""
    left = torch.cross(up, forward, dim=-1)
    return torch.stack([(v * forward).sum(-1), (v * left).sum(-1), (v * up).sum(-1)], dim=-1)


class DefaultObs:
    """Builds (A, C, 180) observations from a BatchState and the previous controls (A, C, 8)."""

    size = OBS_SIZE

    def __init__(self, blue_size: int, orange_size: int, device: torch.device | str = "cpu") -> None:
        self.blue_size = blue_size
        self.orange_size = orange_size
        n = blue_size + orange_size
        self.num_cars = n
        device = torch.device(device)
        team = [0] * blue_size + [1] * orange_size
        # others[c] lists, for agent c, the car index shown in each of the 5 slots (n = empty slot).
        others = torch.full((n, MAX_TEAMMATES + MAX_OPPONENTS), n, dtype=torch.long)
        for c in range(n):
            mates = [o for o in range(n) if o != c and team[o] == team[c]]
            opponents = [o for o in range(n) if team[o] != team[c]]
            others[c, : len(mates)] = torch.tensor(mates, dtype=torch.long)
            others[c, MAX_TEAMMATES : MAX_TEAMMATES + len(opponents)] = torch.tensor(opponents, dtype=torch.long)
        self._others = others.to(device)
        self._is_orange = torch.tensor(team, dtype=torch.bool, device=device)
        flip = torch.ones(OBS_SIZE)
        for start in _vector_slots():
            flip[start : start + 2] = -1.0
        # Per-agent sign (C, 180): all ones for blue, x and y of every vector negated for orange.
        self._sign = torch.where(self._is_orange.cpu().view(-1, 1), flip, torch.ones(OBS_SIZE)).to(device)
        # Per-agent pad order (C, 34): orange agents list the pads in mirrored order (pad i <-> 33 - i).
        forward = torch.arange(NUM_BOOST_PADS)
        pad_order = torch.stack([forward.flip(0) if orange else forward for orange in team])
        self._pad_order = pad_order.to(device)
        goals = torch.tensor([[0.0, BACK_WALL_Y, GOAL_HEIGHT / 2], [0.0, -BACK_WALL_Y, GOAL_HEIGHT / 2]])
        self._opponent_goal = goals[torch.tensor(team)].to(device)  # (C, 3) world frame

    def build(self, state: BatchState, prev_controls: torch.Tensor) -> torch.Tensor:
        """Observations (A, C, 180) for every car, each in its own team's frame."""
        a, n = state.num_arenas, self.num_cars
        car_pos, car_vel = state.car_pos, state.car_vel
        ball_pos = state.ball_pos.unsqueeze(1)  # (A, 1, 3)
        ball_vel = state.ball_vel.unsqueeze(1)
        ball = torch.cat(
            [state.ball_pos * POS_SCALE, state.ball_vel * VEL_SCALE, state.ball_ang_vel * BALL_ANG_VEL_SCALE], dim=-1
        )
        flags = torch.stack(
            [state.car_on_ground, state.car_has_jump, state.car_has_flip, state.car_demolished], dim=-1
        ).float()
        self_part = torch.cat(
            [
                car_pos * POS_SCALE,
                car_vel * VEL_SCALE,
                state.car_ang_vel * CAR_ANG_VEL_SCALE,
                state.car_forward,
                state.car_up,
                (state.car_boost * BOOST_SCALE).unsqueeze(-1),
                flags,
                _in_car_frame(ball_pos - car_pos, state.car_forward, state.car_up) * POS_SCALE,
                _in_car_frame(ball_vel - car_vel, state.car_forward, state.car_up) * VEL_SCALE,
                (self._opponent_goal - car_pos) * POS_SCALE,
            ],
            dim=-1,
        )
        # Other cars: gather each agent's 5 slots from a car table with one extra all-zero row.
        pad_row = torch.zeros(a, 1, 3, device=car_pos.device)
        pos_t = torch.cat([car_pos, pad_row], dim=1)
        vel_t = torch.cat([car_vel, pad_row], dim=1)
        car_table = torch.cat(
            [
                car_vel * VEL_SCALE,
                state.car_forward,
                state.car_up,
                (state.car_boost * BOOST_SCALE).unsqueeze(-1),
                flags[..., [0, 2, 3]],
                torch.ones(a, n, 1, device=car_pos.device),
            ],
            dim=-1,
        )
        car_table = torch.cat([car_table, torch.zeros(a, 1, car_table.shape[-1], device=car_pos.device)], dim=1)
        slots = self._others  # (C, 5)
        present = (slots < n).float().unsqueeze(-1)  # (C, 5, 1)
        rel_pos = (pos_t[:, slots] - car_pos.unsqueeze(2)) * POS_SCALE * present  # (A, C, 5, 3)
        rel_vel = (vel_t[:, slots] - car_vel.unsqueeze(2)) * VEL_SCALE * present
        others = torch.cat([rel_pos, rel_vel, car_table[:, slots]], dim=-1).reshape(a, n, -1)
        pads = state.pad_active.float()[:, self._pad_order]  # (A, C, 34) in each agent's pad order
        obs = torch.cat([ball.unsqueeze(1).expand(a, n, BALL_SIZE), prev_controls, pads, self_part, others], dim=-1)
        # Orange agents see the field rotated by pi about z: negate x and y of every vector.
        return obs * self._sign
