"""Compact replay files: the game states of one arena over an episode, for rendering later.

A replay is one safetensors file (`safetensors.torch.save_file`). T is the number of recorded steps,
C the number of cars (blue cars first, then orange, as in `rocketrl.sim.state.BatchState`). Units are
Rocket League units: uu for positions, uu/s for velocities.

Tensors, all indexed by step first:

=================  ===========  =======  ==========================================================
name               shape        dtype    meaning
=================  ===========  =======  ==========================================================
ball_pos           (T, 3)       float32  ball centre, uu
ball_vel           (T, 3)       float32  ball velocity, uu/s
car_pos            (T, C, 3)    float32  car centre, uu
car_forward        (T, C, 3)    float16  unit vector along the car's nose
car_up             (T, C, 3)    float16  unit vector out of the car's roof
car_vel            (T, C, 3)    float16  car velocity, uu/s (|v| <= 2300; float16 keeps it to ~1 uu/s)
car_boost          (T, C)       float16  boost amount in [0, 100]
car_demolished     (T, C)       bool     the car is demolished and waiting to respawn
controls           (T, C, 8)    float16  throttle, steer, pitch, yaw, roll in [-1, 1]; jump, boost,
                                         handbrake as 0/1 — the action the car takes from state t
blue_score         (T,)         int32    goals blue has scored since the arena was built
orange_score       (T,)         int32    goals orange has scored since the arena was built
goal               (T,)         int8     event of the step that led to state t: -1 no goal,
                                         0 blue scored, 1 orange scored (BatchState.goal_scored)
pad_active         (T, 34)      bool     boost pads that can be picked up, RocketSim's pad order
car_touch          (T, C)       bool     event: the car touched the ball in the step that led to t
clock              (T,)         float32  seconds on the clock at state t: for games ("clock": "game")
                                         the time left in regulation, negative = seconds into
                                         overtime; otherwise ("clock": "episode") the seconds since
                                         the recording began
=================  ===========  =======  ==========================================================

Version 1 files (no pad_active, car_touch or clock) still load: pads read as all active, no touches,
the clock as the seconds since the recording began, and `Replay.meta["missing"]` names what was absent.

Frames: the state each step started from, then, at the end of every episode and at every goal of a
game, the state the step ended in (before any reset), with zero controls and its `goal` event. A
game's replay so holds the goal frame and then the kickoff that follows it.

Positions stay float32 because they reach ~6000 uu, where float16 would be off by several uu; so does
the ball's velocity (up to 6000 uu/s). The cars' bounded quantities fit float16.
A 1v1 step takes 171 bytes (`bytes_per_step`).

Metadata: safetensors metadata maps str to str, so the file holds one key, "rocketrl_replay",
whose value is a JSON object with:

- "version": 2 (`FORMAT_VERSION`; version 1 lacked pad_active, car_touch and clock),
- "tick_skip": physics ticks per recorded step,
- "ticks_per_second": 120 (physics rate; a step lasts tick_skip / ticks_per_second seconds),
- "blue_size", "orange_size", "num_cars": team sizes and C,
- "car_teams": list of C team ids (0 blue, 1 orange),
- "blue_policy", "orange_policy": names of the policies that played each side, or null,
- "episode_return": the episode's return as the caller measured it (any JSON value), or null,
- "seed": the episode's seed, or null,
- "steps": T,
- "clock": "game" or "episode" (what the clock tensor counts),

plus any further JSON-able keys the caller passed to `ReplayRecorder.save`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from rocketrl.infra.atomic_file import write_atomic
from rocketrl.sim.arena import BLUE_TEAM, NUM_BOOST_PADS, ORANGE_TEAM, TICK_RATE
from rocketrl.sim.state import BatchState

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
METADATA_KEY = "rocketrl_replay"
CONTROL_WIDTH = 8

# name -> (shape after the step axis, with "C" for the number of cars; dtype)
TENSOR_SPECS: dict[str, tuple[tuple[int | str, ...], torch.dtype]] = {
    "ball_pos": ((3,), torch.float32),
    "ball_vel": ((3,), torch.float32),
    "car_pos": (("C", 3), torch.float32),
    "car_forward": (("C", 3), torch.float16),
    "car_up": (("C", 3), torch.float16),
    "car_vel": (("C", 3), torch.float16),
    "car_boost": (("C",), torch.float16),
    "car_demolished": (("C",), torch.bool),
    "controls": (("C", CONTROL_WIDTH), torch.float16),
    "blue_score": ((), torch.int32),
    "orange_score": ((), torch.int32),
    "goal": ((), torch.int8),
    "pad_active": ((NUM_BOOST_PADS,), torch.bool),
    "car_touch": (("C",), torch.bool),
    "clock": ((), torch.float32),
}
"""Every tensor of a replay file: its per-step shape and its dtype."""

_RESERVED_META = ("version", "tick_skip", "ticks_per_second", "blue_size", "orange_size", "num_cars", "car_teams")
ADDED_IN_V2 = ("pad_active", "car_touch", "clock")
"""Tensors version 1 files lack."""


class ReplayFormatError(ValueError):
    """A replay file that cannot be read: not safetensors, wrong version, missing or misshapen tensors."""


def _step_shape(name: str, num_cars: int) -> tuple[int, ...]:
    shape, _ = TENSOR_SPECS[name]
    return tuple(num_cars if d == "C" else d for d in shape)


def bytes_per_step(num_cars: int) -> int:
    """Bytes one recorded step takes in the file's tensors (the header adds a fixed amount on top)."""
    total = 0
    for name, (_, dtype) in TENSOR_SPECS.items():
        count = 1
        for d in _step_shape(name, num_cars):
            count *= d
        total += count * torch.empty((), dtype=dtype).element_size()
    return total


@dataclass
class Replay:
    """A loaded replay: tensors of shape (T, ...) on the CPU, with the dtypes of `TENSOR_SPECS`."""

    ball_pos: torch.Tensor
    """(T, 3) float32, uu."""
    ball_vel: torch.Tensor
    """(T, 3) float32, uu/s."""
    car_pos: torch.Tensor
    """(T, C, 3) float32, uu."""
    car_forward: torch.Tensor
    """(T, C, 3) float16 unit vectors."""
    car_up: torch.Tensor
    """(T, C, 3) float16 unit vectors."""
    car_vel: torch.Tensor
    """(T, C, 3) float16, uu/s."""
    car_boost: torch.Tensor
    """(T, C) float16 in [0, 100]."""
    car_demolished: torch.Tensor
    """(T, C) bool."""
    controls: torch.Tensor
    """(T, C, 8) float16."""
    blue_score: torch.Tensor
    """(T,) int32."""
    orange_score: torch.Tensor
    """(T,) int32."""
    goal: torch.Tensor
    """(T,) int8: -1 no goal, 0 blue scored, 1 orange scored."""
    pad_active: torch.Tensor
    """(T, 34) bool."""
    car_touch: torch.Tensor
    """(T, C) bool event: touched the ball in the step that led here."""
    clock: torch.Tensor
    """(T,) float32 seconds (see the module docstring)."""
    meta: dict[str, Any]
    """The JSON metadata described in the module docstring."""

    @property
    def num_steps(self) -> int:
        return int(self.ball_pos.shape[0])

    @property
    def num_cars(self) -> int:
        return int(self.meta["num_cars"])

    @property
    def step_seconds(self) -> float:
        """Game time between two recorded steps, in seconds."""
        return self.meta["tick_skip"] / self.meta["ticks_per_second"]

    @property
    def duration_seconds(self) -> float:
        return self.num_steps * self.step_seconds


class ReplayRecorder:
    """Collects the states of one arena step by step and writes them as a replay file.

    Tensors passed in may live on any device; they are copied to the CPU in the file's dtypes.
    """

    def __init__(self, num_cars: int, blue_size: int, orange_size: int, tick_skip: int) -> None:
        if blue_size < 0 or orange_size < 0 or blue_size + orange_size != num_cars:
            raise ValueError(f"num_cars={num_cars} must equal blue_size + orange_size = {blue_size} + {orange_size}")
        if num_cars < 1:
            raise ValueError("a replay needs at least one car")
        if tick_skip < 1:
            raise ValueError(f"tick_skip={tick_skip}: must be at least 1")
        self.num_cars = num_cars
        self.blue_size = blue_size
        self.orange_size = orange_size
        self.tick_skip = tick_skip
        self._steps: dict[str, list[torch.Tensor]] = {name: [] for name in TENSOR_SPECS}
        self._game_clock = False

    def __len__(self) -> int:
        return len(self._steps["ball_pos"])

    def clear(self) -> None:
        """Forget every recorded step."""
        for values in self._steps.values():
            values.clear()

    def append(
        self,
        ball_pos: torch.Tensor,
        ball_vel: torch.Tensor,
        car_pos: torch.Tensor,
        car_forward: torch.Tensor,
        car_up: torch.Tensor,
        car_vel: torch.Tensor,
        car_boost: torch.Tensor,
        car_demolished: torch.Tensor,
        controls: torch.Tensor,
        blue_score: int | torch.Tensor,
        orange_score: int | torch.Tensor,
        goal: int | torch.Tensor,
        pad_active: torch.Tensor | None = None,
        car_touch: torch.Tensor | None = None,
        clock: float | None = None,
    ) -> None:
        """Record one step of one arena.

        Shapes: ball_pos, ball_vel (3,); car_pos, car_forward, car_up, car_vel (C, 3); car_boost,
        car_demolished, car_touch (C,); controls (C, 8); pad_active (34,); blue_score, orange_score, goal
        scalars (goal: -1 no goal, 0 blue scored, 1 orange scored); clock: seconds left on a game clock
        (negative in overtime), or None to count the seconds since the recording began. pad_active None:
        all active; car_touch None: no touch. Raises ValueError naming the field when a shape is wrong.
        """
        if clock is None:
            clock = len(self) * self.tick_skip / TICK_RATE
        else:
            self._game_clock = True
        if pad_active is None:
            pad_active = torch.ones(NUM_BOOST_PADS, dtype=torch.bool)
        if car_touch is None:
            car_touch = torch.zeros(self.num_cars, dtype=torch.bool)
        values = {
            "ball_pos": ball_pos,
            "ball_vel": ball_vel,
            "car_pos": car_pos,
            "car_forward": car_forward,
            "car_up": car_up,
            "car_vel": car_vel,
            "car_boost": car_boost,
            "car_demolished": car_demolished,
            "controls": controls,
            "blue_score": blue_score,
            "orange_score": orange_score,
            "goal": goal,
            "pad_active": pad_active,
            "car_touch": car_touch,
            "clock": clock,
        }
        converted = {}
        for name, value in values.items():
            dtype = TENSOR_SPECS[name][1]
            tensor = torch.as_tensor(value).detach().to("cpu")
            expected = _step_shape(name, self.num_cars)
            if tuple(tensor.shape) != expected:
                raise ValueError(f"replay field {name} has shape {tuple(tensor.shape)}, expected {expected}")
            converted[name] = tensor.to(dtype)
        goal_value = int(converted["goal"])
        if goal_value not in (-1, BLUE_TEAM, ORANGE_TEAM):
            raise ValueError(f"goal={goal_value}: must be -1 (no goal), 0 (blue scored) or 1 (orange scored)")
        for name, tensor in converted.items():
            self._steps[name].append(tensor)

    def append_from_state(
        self, state: BatchState, arena: int, controls: torch.Tensor, clock: float | None = None
    ) -> None:
        """Record arena `arena` of a batched state; controls are (C, 8) for that arena or (A, C, 8); clock as
        in `append`."""
        if not 0 <= arena < state.num_arenas:
            raise IndexError(f"arena={arena}: the state holds {state.num_arenas} arenas")
        if state.num_cars != self.num_cars:
            raise ValueError(f"the state has {state.num_cars} cars per arena, the recorder {self.num_cars}")
        if controls.dim() == 3:
            controls = controls[arena]
        self.append(
            ball_pos=state.ball_pos[arena],
            ball_vel=state.ball_vel[arena],
            car_pos=state.car_pos[arena],
            car_forward=state.car_forward[arena],
            car_up=state.car_up[arena],
            car_vel=state.car_vel[arena],
            car_boost=state.car_boost[arena],
            car_demolished=state.car_demolished[arena],
            controls=controls,
            blue_score=state.blue_score[arena],
            orange_score=state.orange_score[arena],
            goal=state.goal_scored[arena],
            pad_active=state.pad_active[arena],
            car_touch=state.car_touched_ball[arena],
            clock=clock,
        )

    def append_final_from_state(self, state: BatchState, arena: int, clock: float | None = None) -> None:
        """Record the state arena `arena` ended an episode (or a goal) in, before any reset: zero controls,
        the step's goal and touch events kept."""
        self.append_from_state(state, arena, torch.zeros(self.num_cars, CONTROL_WIDTH), clock)

    def tensors(self) -> dict[str, torch.Tensor]:
        """The recorded steps as (T, ...) tensors in the file's dtypes."""
        out = {}
        for name, values in self._steps.items():
            shape, dtype = _step_shape(name, self.num_cars), TENSOR_SPECS[name][1]
            out[name] = torch.stack(values) if values else torch.zeros((0, *shape), dtype=dtype)
        return out

    def metadata(
        self,
        blue_policy: str | None = None,
        orange_policy: str | None = None,
        episode_return: Any = None,
        seed: int | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """The JSON metadata of the file `save` would write (see the module docstring)."""
        clash = sorted(set(extra) & {*_RESERVED_META, "steps", "clock"})
        if clash:
            raise ValueError(f"metadata keys {clash} are set by the recorder")
        meta: dict[str, Any] = {
            "version": FORMAT_VERSION,
            "tick_skip": self.tick_skip,
            "ticks_per_second": int(TICK_RATE),
            "blue_size": self.blue_size,
            "orange_size": self.orange_size,
            "num_cars": self.num_cars,
            "car_teams": [BLUE_TEAM] * self.blue_size + [ORANGE_TEAM] * self.orange_size,
            "blue_policy": blue_policy,
            "orange_policy": orange_policy,
            "episode_return": episode_return,
            "seed": seed,
            "steps": len(self),
            "clock": "game" if self._game_clock else "episode",
        }
        meta.update(extra)
        return meta

    def save(self, path: str | os.PathLike[str], **meta: Any) -> Path:
        """Write the replay atomically (`infra.atomic_file.write_atomic`).

        meta: blue_policy, orange_policy, episode_return, seed and any further JSON-able keys.
        Returns the path written.
        """
        text = json.dumps(self.metadata(**meta))
        tensors = {name: t.contiguous() for name, t in self.tensors().items()}
        return write_atomic(path, lambda tmp: save_file(tensors, tmp, metadata={METADATA_KEY: text}))


def load_replay(path: str | os.PathLike[str]) -> Replay:
    """Read a replay file; raises ReplayFormatError naming the file when it is not a valid version-1 replay."""
    path = Path(path)

    def fail(message: str) -> ReplayFormatError:
        return ReplayFormatError(f"{path}: {message}")

    try:
        with safe_open(str(path), framework="pt") as f:
            header = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}
    except SafetensorError as err:
        raise fail(f"not a safetensors file ({err})") from err

    if METADATA_KEY not in header:
        raise fail(f"no {METADATA_KEY!r} metadata; not a rocketrl replay")
    try:
        meta = json.loads(header[METADATA_KEY])
    except json.JSONDecodeError as err:
        raise fail(f"metadata is not valid JSON ({err})") from err
    if not isinstance(meta, dict):
        raise fail("metadata must be a JSON object")
    version = meta.get("version")
    if version not in READABLE_VERSIONS:
        raise fail(f"replay format version {version!r}; this code reads versions {list(READABLE_VERSIONS)}")
    missing_meta = [key for key in (*_RESERVED_META, "steps") if key not in meta]
    if missing_meta:
        raise fail(f"metadata lacks {missing_meta}")

    num_cars, steps = meta["num_cars"], meta["steps"]
    if not isinstance(num_cars, int) or not isinstance(steps, int):
        raise fail("metadata num_cars and steps must be integers")
    if version == 1:
        meta["missing"] = [name for name in ADDED_IN_V2 if name not in tensors]
        tensors.setdefault("pad_active", torch.ones(steps, NUM_BOOST_PADS, dtype=torch.bool))
        tensors.setdefault("car_touch", torch.zeros(steps, num_cars, dtype=torch.bool))
        seconds = meta.get("tick_skip", 8) / meta.get("ticks_per_second", TICK_RATE)
        tensors.setdefault("clock", torch.arange(steps, dtype=torch.float32) * seconds)
        meta.setdefault("clock", "episode")
    missing = sorted(set(TENSOR_SPECS) - set(tensors))
    if missing:
        raise fail(f"missing tensors {missing}")
    if meta["blue_size"] + meta["orange_size"] != num_cars or len(meta["car_teams"]) != num_cars:
        raise fail(f"num_cars={num_cars} disagrees with the team sizes or car_teams")
    for name, (_, dtype) in TENSOR_SPECS.items():
        tensor = tensors[name]
        expected = (steps, *_step_shape(name, num_cars))
        if tuple(tensor.shape) != expected:
            raise fail(f"tensor {name} has shape {tuple(tensor.shape)}, expected {expected}")
        if tensor.dtype != dtype:
            raise fail(f"tensor {name} has dtype {tensor.dtype}, expected {dtype}")
    return Replay(**{name: tensors[name] for name in TENSOR_SPECS}, meta=meta)
