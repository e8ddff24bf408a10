"""The engine contract: what every physics engine offers BatchedEnv, evaluation and the diagnostics.

`Engine` holds what both engines (RocketSim's, the warp one) share: the checks of the arena count, team sizes
and tick skip with messages that name the setting, the common attributes, `step` as `step_async` then
`step_wait`, the in-flight bookkeeping, the controls' shape check, and the context manager. An engine then
implements starting a step, finishing it, stepping without a readout, resets and close.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import torch

from rocketrl.sim.arena import MAX_TEAM_SIZE
from rocketrl.sim.state import BatchState, ResetState

CONTROL_WIDTH = 8
"""Controls per car: throttle, steer, pitch, yaw, roll in [-1, 1]; jump, boost, handbrake as 0/1."""


def validate_team_sizes(blue_size: int, orange_size: int) -> None:
    """Raise ValueError unless 1 <= blue_size <= 3 and 0 <= orange_size <= 3."""
    if not 1 <= blue_size <= MAX_TEAM_SIZE:
        raise ValueError(f"blue_size={blue_size}: must be 1 to {MAX_TEAM_SIZE}")
    if not 0 <= orange_size <= MAX_TEAM_SIZE:
        raise ValueError(f"orange_size={orange_size}: must be 0 to {MAX_TEAM_SIZE}")


class Engine(ABC):
    """A batch of A soccar arenas of blue_size vs orange_size cars; car index c in every (A, C, ...) tensor:
    blue cars 0..blue_size-1, orange cars after them. States are BatchStates on `device` that stay valid
    after later steps (copies)."""

    stepping: str
    """How the engine steps its arenas (RocketSim: processes, threads, multi_step, serial; warp: 'kernels')."""
    stepping_reason: str = ""
    """Why `stepping` was chosen, when `env.stepping: auto` chose it (see sim/stepping_probe.py)."""

    def __init__(
        self, num_arenas: int, blue_size: int, orange_size: int, tick_skip: int, device: str | torch.device, seed: int
    ) -> None:
        if num_arenas < 1:
            raise ValueError(f"num_arenas={num_arenas}: must be at least 1")
        validate_team_sizes(blue_size, orange_size)
        if tick_skip < 1:
            raise ValueError(f"tick_skip={tick_skip}: must be at least 1 physics tick per step")
        self.num_arenas = num_arenas
        self.blue_size = blue_size
        self.orange_size = orange_size
        self.num_cars = blue_size + orange_size
        self.tick_skip = tick_skip
        self.device = torch.device(device)
        self.seed = seed
        self.num_workers = 1
        """Worker processes or threads stepping the arenas (1 where one launch or loop steps them all)."""
        self.copy_seconds = 0.0
        """Seconds spent so far copying controls in and the state out."""
        self._closed = False
        self._in_flight = False
        self._state: BatchState | None = None

    # ----------------------------------------------------------------------------------- stepping
    @property
    def state(self) -> BatchState:
        """The state after the latest step or reset."""
        assert self._state is not None, "the engine publishes a state when it is built"
        return self._state

    @property
    def step_in_flight(self) -> bool:
        """True between `step_async` and `step_wait`."""
        return self._in_flight

    def step(self, controls: torch.Tensor) -> BatchState:
        """Advance every arena by `tick_skip` ticks under controls (A, C, 8) and return the new state:
        `step_async(controls)` then `step_wait()`."""
        self.step_async(controls)
        return self.step_wait()

    def step_async(self, controls: torch.Tensor) -> None:
        """Start a step under controls (A, C, 8) and return; `state` keeps the previous state until
        `step_wait()` returns the new one. Reset, step and step_raw are refused while a step is in flight."""
        self._check_open()
        if self._in_flight:
            raise RuntimeError("a step is already in flight; call step_wait() before the next step_async()")
        expected = (self.num_arenas, self.num_cars, CONTROL_WIDTH)
        if tuple(controls.shape) != expected:
            raise ValueError(f"controls have shape {tuple(controls.shape)}, expected {expected}")
        self._start_step(controls)
        self._in_flight = True

    def step_wait(self) -> BatchState:
        """Finish the step started by `step_async`, publish it as `state` and return it (on `device`)."""
        self._check_open()
        if not self._in_flight:
            raise RuntimeError("step_wait() without a step in flight; call step_async(controls) first")
        self._in_flight = False
        self._state = self._finish_step()
        return self._state

    @abstractmethod
    def _start_step(self, controls: torch.Tensor) -> None:
        """Copy controls (A, C, 8), already checked, in and start the physics (or run it all here)."""

    @abstractmethod
    def _finish_step(self) -> BatchState:
        """Wait for the physics started by `_start_step` and read the new state out."""

    @abstractmethod
    def step_raw(self, ticks: int | None = None) -> None:
        """Advance every arena `ticks` ticks (default tick_skip) with the controls already set and read
        nothing (for benchmarks)."""

    # ----------------------------------------------------------------------------------- resets
    @abstractmethod
    def reset(self, mask: torch.Tensor, state: ResetState | Callable[[int], ResetState]) -> BatchState:
        """Put the arenas selected by `mask` (A,) bool into `state` (K = mask.sum() arenas), or into the
        ResetState a function of K makes. Pads become active, jumps and flips available, cars
        un-demolished, events cleared; scores are kept. Other arenas are untouched."""

    @abstractmethod
    def reset_kickoff_native(self, mask: torch.Tensor, seed: int = 0) -> BatchState:
        """Reset the masked arenas with the engine's own kickoff."""

    # ----------------------------------------------------------------------------------- lifecycle
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"this {type(self).__name__} was closed; build a new one")

    def _check_idle(self, what: str) -> None:
        """Raise unless the engine is open and no step is in flight."""
        self._check_open()
        if self._in_flight:
            raise RuntimeError(f"{what} while a step is in flight; call step_wait() first")

    @abstractmethod
    def close(self) -> None:
        """Release workers, threads and buffers. Safe to call twice, and while a step is in flight."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
