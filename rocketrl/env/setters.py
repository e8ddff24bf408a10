"""State setters: batched functions that make the ResetState of K arenas.

A setter is called as `setter(k, generator)` and returns a ResetState with K arenas of
blue_size + orange_size cars (blue first). Randomness comes only from the given CPU generator, so
a seeded environment resets the same way every time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Protocol

import torch

from rocketrl.sim.arena import (
    BACK_WALL_Y,
    BALL_RADIUS,
    BALL_REST_Z,
    CAR_MAX_SPEED,
    CAR_SPAWN_REST_Z,
    CEILING_Z,
    KICKOFF_SPAWNS_BLUE,
    SIDE_WALL_X,
)
from rocketrl.sim.state import ResetState, kickoff_reset_state

MAX_KICKOFF_JITTER = 100.0
"""Largest kickoff jitter accepted, uu: beyond it the kickoff is no longer the real one."""


def kickoff_jitter_in_range(jitter: float) -> bool:
    """True for a finite kickoff jitter (uu) in [0, MAX_KICKOFF_JITTER]."""
    return math.isfinite(jitter) and 0.0 <= jitter <= MAX_KICKOFF_JITTER


class StateSetter(Protocol):
    """Makes the state of K arenas."""

    def __call__(self, k: int, generator: torch.Generator) -> ResetState: ...


class KickoffSetter:
    """The real kickoff: ball at rest on the centre spot, cars on the five kickoff spawns.

    Each arena draws its own random order of the five spawns; blue car i takes spawn order[i] and
    orange car i takes the same spawn rotated by pi about z, as in Rocket League. Boost 33.3.

    `jitter` (uu) moves every car by its own uniform offset in [-jitter, jitter] along x and along y.
    Physics is deterministic, so two greedy policies replay the same kickoff from the same spawn every
    time: without jitter a long evaluation holds only a few distinct kickoffs. A few uu change who wins
    a 50/50 and so make the games independent trials, while the kickoff stays the real one to the eye.
    """

    def __init__(self, blue_size: int, orange_size: int, jitter: float = 0.0) -> None:
        if not kickoff_jitter_in_range(jitter):
            raise ValueError(
                f"kickoff jitter {jitter!r} uu: must lie in [0, {MAX_KICKOFF_JITTER:g}] "
                "(a few uu are enough to vary the kickoffs; 0 gives the exact spawns)"
            )
        self.blue_size = blue_size
        self.orange_size = orange_size
        self.jitter = float(jitter)

    def __call__(self, k: int, generator: torch.Generator) -> ResetState:
        order = torch.argsort(torch.rand(k, len(KICKOFF_SPAWNS_BLUE), generator=generator), dim=1)
        state = kickoff_reset_state(order, self.blue_size, self.orange_size)
        if self.jitter > 0:  # drawn only when asked, so exact kickoffs keep the same random stream
            jitter_spawns(state, self.jitter, generator)
        return state


def jitter_spawns(state: ResetState, jitter: float, generator: torch.Generator) -> ResetState:
    """Move every car of `state` (in place) by its own uniform offset in [-jitter, jitter] uu along x and y."""
    k, n = state.car_pos.shape[:2]
    state.car_pos[..., 0:2] += (torch.rand(k, n, 2, generator=generator) * 2 - 1) * jitter
    return state


class RandomStateSetter:
    """Random valid states: ball anywhere in the field with a random velocity, cars on the floor
    at random positions and headings driving forward at a random speed, random boost."""

    def __init__(
        self,
        blue_size: int,
        orange_size: int,
        max_ball_speed: float = 2000.0,
        max_car_speed: float = CAR_MAX_SPEED,
        max_ball_height: float = CEILING_Z - 400.0,
    ) -> None:
        self.blue_size = blue_size
        self.orange_size = orange_size
        self.max_ball_speed = max_ball_speed
        self.max_car_speed = max_car_speed
        self.max_ball_height = max_ball_height

    def __call__(self, k: int, generator: torch.Generator) -> ResetState:
        n = self.blue_size + self.orange_size
        margin_x, margin_y = SIDE_WALL_X - 300.0, BACK_WALL_Y - 500.0

        uniform = _uniform_from(generator)

        ball_pos = torch.stack(
            [
                uniform(k, low=-margin_x, high=margin_x),
                uniform(k, low=-margin_y, high=margin_y),
                uniform(k, low=BALL_RADIUS + 5.0, high=self.max_ball_height),
            ],
            dim=-1,
        )
        ball_vel = _random_directions(k, generator) * uniform(k, 1, low=0.0, high=self.max_ball_speed)
        car_pos = torch.stack(
            [
                uniform(k, n, low=-margin_x, high=margin_x),
                uniform(k, n, low=-margin_y, high=margin_y),
                torch.full((k, n), CAR_SPAWN_REST_Z),
            ],
            dim=-1,
        )
        yaw = uniform(k, n, low=-math.pi, high=math.pi)
        speed = uniform(k, n, low=0.0, high=self.max_car_speed)
        car_vel = torch.stack([torch.cos(yaw) * speed, torch.sin(yaw) * speed, torch.zeros(k, n)], dim=-1)
        rotation = torch.stack([torch.zeros(k, n), yaw, torch.zeros(k, n)], dim=-1)
        return ResetState(
            ball_pos=ball_pos,
            ball_vel=ball_vel,
            ball_ang_vel=torch.zeros(k, 3),
            car_pos=car_pos,
            car_vel=car_vel,
            car_ang_vel=torch.zeros(k, n, 3),
            car_rotation=rotation,
            car_boost=uniform(k, n, low=0.0, high=100.0),
        )


class DodgeShotSetter:
    """A dodge within reach: one car of each arena (drawn at random) starts just off the floor with its flip
    unused, moving at a ball near the floor that lies between it and the goal it attacks, so that a dodge
    (jump with the stick forward) in its first step sends the ball toward that goal. The other cars start as
    in RandomStateSetter.

    Random play seldom dodges into the ball, so a bot trained from kickoffs and random states meets that
    outcome rarely; these starts put it one action away. The line from the car to the ball points within
    `max_angle` (radians) of the line from the ball to the goal's centre; the car is `distance` uu from the
    ball (centre to centre), its nose within 0.2 rad of the ball, its height and speed those of a car a few
    ticks after a jump.
    """

    def __init__(
        self,
        blue_size: int,
        orange_size: int,
        distance: tuple[float, float] = (250.0, 650.0),
        max_angle: float = 0.6,
    ) -> None:
        self.blue_size = blue_size
        self.orange_size = orange_size
        self.distance = distance
        self.max_angle = max_angle
        self.others = RandomStateSetter(blue_size, orange_size)

    def __call__(self, k: int, generator: torch.Generator) -> ResetState:
        state = self.others(k, generator)
        n = self.blue_size + self.orange_size

        uniform = _uniform_from(generator)

        # the ball: near the floor, away from the walls by more than the car's distance to it, rolling slowly
        margin_x = SIDE_WALL_X - 400.0 - self.distance[1]
        margin_y = BACK_WALL_Y - 400.0 - self.distance[1]
        ball_xy = torch.stack([uniform(k, low=-margin_x, high=margin_x), uniform(k, low=-margin_y, high=margin_y)], -1)
        roll_heading = uniform(k, low=-math.pi, high=math.pi)
        roll_speed = uniform(k, low=0.0, high=500.0)
        state.ball_pos = torch.cat([ball_xy, uniform(k, 1, low=BALL_REST_Z, high=BALL_REST_Z + 120.0)], -1)
        state.ball_vel = torch.stack(
            [torch.cos(roll_heading) * roll_speed, torch.sin(roll_heading) * roll_speed, torch.zeros(k)], -1
        )
        # the car: behind the ball on the way to the goal it attacks (blue +y, orange -y)
        car = torch.randint(n, (k,), generator=generator)
        attacks_y = torch.where(car < self.blue_size, BACK_WALL_Y, -BACK_WALL_Y)
        to_goal = torch.atan2(attacks_y - ball_xy[:, 1], -ball_xy[:, 0]) + uniform(
            k, low=-self.max_angle, high=self.max_angle
        )
        distance = uniform(k, low=self.distance[0], high=self.distance[1])
        car_xy = ball_xy - torch.stack([torch.cos(to_goal), torch.sin(to_goal)], -1) * distance[:, None]
        heading = to_goal + uniform(k, low=-0.2, high=0.2)
        speed = uniform(k, low=500.0, high=1800.0)
        rows = torch.arange(k)
        state.car_pos[rows, car] = torch.cat([car_xy, uniform(k, 1, low=40.0, high=140.0)], -1)
        state.car_vel[rows, car] = torch.stack(
            [torch.cos(heading) * speed, torch.sin(heading) * speed, uniform(k, low=0.0, high=300.0)], -1
        )
        state.car_rotation[rows, car] = torch.stack([torch.zeros(k), heading, torch.zeros(k)], -1)
        state.car_ang_vel[rows, car] = 0.0
        return state


class WeightedSetter:
    """Each arena draws one of several setters with the given probabilities."""

    def __init__(self, setters: Sequence[StateSetter], weights: Sequence[float]) -> None:
        if len(setters) != len(weights) or not setters:
            raise ValueError("WeightedSetter needs one weight per setter, and at least one setter")
        w = torch.tensor(weights, dtype=torch.float64)
        if not torch.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
            raise ValueError(f"WeightedSetter weights {list(weights)} must be finite, >= 0, with a positive sum")
        self.setters = list(setters)
        self.probs = (w / w.sum()).float()

    def __call__(self, k: int, generator: torch.Generator) -> ResetState:
        choice = torch.multinomial(self.probs, k, replacement=True, generator=generator)
        parts = {i: self.setters[i](int((choice == i).sum()), generator) for i in choice.unique().tolist()}
        merged: dict[str, torch.Tensor | None] = {field.name: None for field in fields(ResetState)}
        for i, part in parts.items():
            rows = torch.nonzero(choice == i).flatten()
            for name, value in vars(part).items():
                if value is None:  # an optional field this setter leaves unset
                    continue
                if merged[name] is None:
                    merged[name] = _empty_like(value, k)
                merged[name][rows] = value  # type: ignore[index]
        return ResetState(**merged)  # type: ignore[arg-type]


STATE_SETTERS: tuple[str, ...] = ("kickoff", "random", "dodge_shot")
"""The setters a {name: weight} mix may name: KickoffSetter, RandomStateSetter and DodgeShotSetter."""


def make_setter(
    name_to_weight: dict[str, float], blue_size: int, orange_size: int, kickoff_jitter: float = 0.0
) -> StateSetter:
    """Build a setter from a {'kickoff': w, 'random': w, 'dodge_shot': w} mix (a single entry gives that setter);
    `kickoff_jitter` (uu) goes to the KickoffSetter."""
    unknown = sorted(set(name_to_weight) - set(STATE_SETTERS))
    if unknown:
        raise ValueError(f"state setter {unknown[0]!r} is unknown; choose from {', '.join(STATE_SETTERS)}")
    for name, weight in name_to_weight.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
            raise ValueError(f"state_setter.{name}={weight!r}: a weight must be a finite number >= 0")
    active = {name: w for name, w in name_to_weight.items() if w > 0}
    if not active:
        raise ValueError("state_setter needs at least one setter with a positive weight, e.g. {kickoff: 1.0}")
    kinds = {
        "kickoff": lambda: KickoffSetter(blue_size, orange_size, kickoff_jitter),
        "random": lambda: RandomStateSetter(blue_size, orange_size),
        "dodge_shot": lambda: DodgeShotSetter(blue_size, orange_size),
    }
    setters: list[StateSetter] = [kinds[name]() for name in active]
    if len(setters) == 1:
        return setters[0]
    return WeightedSetter(setters, list(active.values()))


def _uniform_from(generator: torch.Generator) -> Callable[..., torch.Tensor]:
    """uniform(*shape, low=, high=): a tensor of `shape` drawn uniformly in [low, high) from `generator`."""

    def uniform(*shape: int, low: float, high: float) -> torch.Tensor:
        return low + (high - low) * torch.rand(*shape, generator=generator)

    return uniform


def _random_directions(k: int, generator: torch.Generator) -> torch.Tensor:
    v = torch.randn(k, 3, generator=generator)
    return v / v.norm(dim=-1, keepdim=True).clamp_min(1e-6)


def _wrap_angle(angle: torch.Tensor) -> torch.Tensor:
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


def _empty_like(value: torch.Tensor, k: int) -> torch.Tensor:
    """k rows shaped like value's: zeros, or True for flags (ResetState.blue_first's meaning of unset)."""
    if value.dtype == torch.bool:
        return torch.ones((k, *value.shape[1:]), dtype=torch.bool)
    return torch.zeros((k, *value.shape[1:]), dtype=value.dtype)
