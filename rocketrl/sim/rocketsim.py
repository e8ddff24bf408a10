"""RocketSim engine: many soccar arenas stepped in parallel, read into one batched state.

Each step: controls (A, C, 8) -> per-car CarControls -> every arena advances `tick_skip` ticks ->
every arena is read into one preallocated float32 buffer (A, W) -> one copy to the training
device -> BatchState. Arenas are split into blocks (`rocketsim_block.ArenaBlock`); the stepping
mode decides where the blocks run:

- "processes": one worker process per block over shared memory (default; no GIL between blocks),
- "threads":   a thread pool in this process (RocketSim releases the GIL while it simulates, but
               the readout between steps holds it),
- "multi_step": `RocketSim.Arena.multi_step` over all arenas, in this process,
- "serial":    `Arena.step` arena by arena, in this process.

`step` is `step_async` (start the physics, return at once) followed by `step_wait` (finish and
publish it); callers that split them can run other work, such as inference for another batch of
arenas, while the workers step. `benchmarks/env_throughput.py` measures the stepping modes side by
side; `benchmarks/overlap.py` measures the overlap.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import torch

from rocketrl.sim.arena import BLUE_TEAM, DEFAULT_TICK_SKIP, NUM_BOOST_PADS, ORANGE_TEAM
from rocketrl.sim.engine_base import Engine, validate_team_sizes
from rocketrl.sim.modes import STEPPING_MODES, SteppingMode
from rocketrl.sim.rocketsim_block import (
    CONTROL_WIDTH,
    CX_AIR_TIME_SINCE_JUMP,
    CX_HAS_DOUBLE_JUMPED,
    CX_HAS_FLIPPED,
    CX_HAS_JUMPED,
    GB_ANG_VEL,
    GB_POS,
    GB_VEL,
    GC_ANG_VEL,
    GC_BOOST,
    GC_DEMOED,
    GC_FORWARD,
    GC_GROUND,
    GC_POS,
    GC_UP,
    GC_VEL,
    GYM_BALL_WIDTH,
    RAW_CAR_WIDTH,
    RESET_CAR_WIDTH,
    ArenaBlock,
    StateLayout,
)
from rocketrl.sim.state import BatchState, ResetState

DOUBLE_JUMP_MAX_DELAY = 1.25
"""Seconds after the first jump during which a dodge or double jump is allowed."""

__all__ = ["DOUBLE_JUMP_MAX_DELAY", "RocketSimEngine", "validate_team_sizes"]


class RocketSimEngine(Engine):
    """N soccar arenas of blue_size vs orange_size cars, simulated by RocketSim on CPU.

    Car index c in every (A, C, ...) tensor: blue cars are 0..blue_size-1, orange cars follow.
    The returned BatchState lives on `device` and stays valid after later steps (it is a copy).
    pin_memory: on CUDA, stage the state in pinned host memory and copy it without blocking.
    """

    def __init__(
        self,
        num_arenas: int,
        blue_size: int = 1,
        orange_size: int = 1,
        tick_skip: int = DEFAULT_TICK_SKIP,
        num_workers: int | None = None,
        stepping: SteppingMode = "processes",
        device: str | torch.device = "cpu",
        seed: int = 0,
        pin_memory: bool = True,
    ) -> None:
        super().__init__(num_arenas, blue_size, orange_size, tick_skip, device, seed)
        if stepping not in STEPPING_MODES:
            raise ValueError(f"stepping={stepping!r}: choose one of {', '.join(STEPPING_MODES)}")
        self.stepping: SteppingMode = stepping
        workers = num_workers if num_workers is not None else (os.cpu_count() or 1)
        self.num_workers = max(1, min(workers, num_arenas))
        self._layout = StateLayout(self.num_cars)

        parallel = stepping in ("processes", "threads")
        num_blocks = self.num_workers if parallel else 1
        cuts = np.linspace(0, num_arenas, num_blocks + 1).astype(int)
        bounds = [(int(lo), int(hi)) for lo, hi in zip(cuts[:-1], cuts[1:]) if hi > lo]
        shapes = {
            "state": (num_arenas, self._layout.width),
            "controls": (num_arenas, self.num_cars, CONTROL_WIDTH),
            "reset": (num_arenas, self._layout.reset_width()),
            "reset_mask": (num_arenas,),
        }
        self._futures: list[Future] = []
        self._workers = None
        self._blocks: list[ArenaBlock] = []
        self._pool: ThreadPoolExecutor | None = None
        if stepping == "processes":
            from rocketrl.sim.rocketsim_workers import WorkerPool

            self._workers = WorkerPool(bounds, blue_size, orange_size, seed, shapes)
            arrays = {key: self._workers.array(key) for key in shapes}
        else:
            arrays = {key: np.zeros(shape, dtype=np.float32) for key, shape in shapes.items()}
            self._blocks = [
                ArenaBlock(lo, hi, blue_size, orange_size, seed, arrays["state"], arrays["controls"], arrays["reset"])
                for lo, hi in bounds
            ]
            if stepping == "threads":
                self._pool = ThreadPoolExecutor(len(self._blocks), thread_name_prefix="rocketsim")
        self._state_np = arrays["state"]
        self._controls_np = arrays["controls"]
        self._reset_np = arrays["reset"]
        self._reset_mask_np = arrays["reset_mask"]
        self._host = torch.from_numpy(self._state_np)
        # On CUDA: a pinned staging buffer and a non-blocking copy; the event keeps the next step from
        # overwriting the buffer while the previous copy may still read it.
        self._pinned = None
        self._copy_done = None
        if pin_memory and self.device.type == "cuda" and torch.cuda.is_available():
            self._pinned = torch.empty_like(self._host).pin_memory()
            self._copy_done = torch.cuda.Event()
        team = [BLUE_TEAM] * blue_size + [ORANGE_TEAM] * orange_size
        self._car_team = torch.tensor(team, dtype=torch.int64, device=self.device).expand(num_arenas, -1)
        self._state = self._publish()

    # ----------------------------------------------------------------------------------- stepping
    def _start_step(self, controls: torch.Tensor) -> None:
        """Copy controls (A, C, 8) to the workers' buffer and start the physics.

        With stepping="processes" the workers step while the caller runs (e.g. inference for other
        arenas); with "threads" the thread pool does (the readout holds the GIL, so the overlap is
        partial); with "serial" and "multi_step" the whole step runs here and `step_wait` only
        publishes it.
        """
        copy_started = time.perf_counter()
        np.copyto(self._controls_np, controls.detach().to("cpu", torch.float32).numpy())
        self.copy_seconds += time.perf_counter() - copy_started
        ticks = self.tick_skip
        if self._workers is not None:
            self._workers.send("step", ticks)
        elif self._pool is not None:
            self._futures = [self._pool.submit(block.step, ticks) for block in self._blocks]
        else:
            self._blocks[0].step(ticks, use_multi_step=self.stepping == "multi_step")

    def _finish_step(self) -> BatchState:
        """Wait for the workers (or threads) and publish the state."""
        if self._workers is not None:
            self._workers.gather()
        elif self._futures:
            futures, self._futures = self._futures, []
            errors = [future.exception() for future in futures]  # waits for every block, even after a failure
            for error in errors:
                if error is not None:
                    raise error
        return self._publish()

    def step_raw(self, ticks: int | None = None) -> None:
        """Advance every arena with the controls already set and read nothing (for benchmarks)."""
        self._check_idle("step_raw()")
        ticks = self.tick_skip if ticks is None else ticks
        if self._workers is not None:
            self._workers.command("step_raw", ticks)
        elif self._pool is not None:
            list(self._pool.map(lambda block: block.step_raw(ticks), self._blocks))
        else:
            self._blocks[0].step_raw(ticks, use_multi_step=self.stepping == "multi_step")

    # ----------------------------------------------------------------------------------- resets
    def reset(self, mask: torch.Tensor, state: ResetState | Callable[[int], ResetState]) -> BatchState:
        """Put the arenas selected by `mask` (A,) bool into `state` (K = mask.sum() arenas).

        `state` may be a ResetState or a function of K that makes one. Pads become active, jumps and
        flips available, cars un-demolished, events cleared; scores are kept. Other arenas are untouched.
        """
        mask_np = self._check_mask(mask)
        rows = np.flatnonzero(mask_np)
        if rows.size == 0:
            return self._state
        if callable(state):
            state = state(int(rows.size))
        if state.num_arenas != rows.size:
            raise ValueError(
                f"ResetState holds {state.num_arenas} arenas but the reset mask selects {rows.size}; "
                "give one state per selected arena"
            )
        state.validate(self.num_cars)
        k, n = rows.size, self.num_cars
        cars = torch.cat(
            [
                state.car_pos,
                state.car_vel,
                state.car_ang_vel,
                state.car_rotation,
                state.car_boost.unsqueeze(-1),
            ],
            dim=-1,
        )
        device = state.ball_pos.device
        blue_first = torch.ones(k, device=device) if state.blue_first is None else state.blue_first.to(device).float()
        packed = torch.cat(
            [
                state.ball_pos,
                state.ball_vel,
                state.ball_ang_vel,
                cars.reshape(k, n * RESET_CAR_WIDTH),
                blue_first.view(k, 1),
            ],
            dim=-1,
        )
        assert packed.shape[1] == self._layout.reset_width()
        self._reset_np[rows] = packed.detach().to("cpu", torch.float32).numpy()
        self._run_reset("reset", mask_np, None)
        return self._state

    def reset_kickoff_native(self, mask: torch.Tensor, seed: int = 0) -> BatchState:
        """Reset the masked arenas with RocketSim's own kickoff (used to check our kickoff setter)."""
        self._run_reset("kickoff", self._check_mask(mask), seed)
        return self._state

    def _check_mask(self, mask: torch.Tensor) -> np.ndarray:
        self._check_idle("reset")
        mask_np = torch.as_tensor(mask).detach().to("cpu").bool().numpy()
        if mask_np.shape != (self.num_arenas,):
            raise ValueError(f"reset mask has shape {mask_np.shape}, expected ({self.num_arenas},)")
        return mask_np

    def _run_reset(self, command: str, mask_np: np.ndarray, seed: int | None) -> None:
        self._reset_mask_np[:] = mask_np
        if self._workers is not None:
            self._workers.command(command, seed)
        else:
            for block in self._blocks:
                local = mask_np[block.lo : block.hi]
                if command == "reset":
                    block.reset(local)
                else:
                    block.reset_kickoff_native(local, seed or 0)
        self._state = self._publish()

    # ----------------------------------------------------------------------------------- readout
    def _publish(self) -> BatchState:
        """Copy the host buffer to the device once and slice it into a BatchState."""
        copy_started = time.perf_counter()
        try:
            return self._build_state(self._copy_to_device())
        finally:
            self.copy_seconds += time.perf_counter() - copy_started

    def _copy_to_device(self) -> torch.Tensor:
        """The host buffer as one flat tensor on the device (a snapshot, safe from later steps)."""
        if self._pinned is not None and self._copy_done is not None:
            self._copy_done.synchronize()
            self._pinned.copy_(self._host)
            flat = self._pinned.to(self.device, non_blocking=True)
            self._copy_done.record()
        elif self.device.type != "cpu":
            flat = self._host.to(self.device)
        else:
            flat = self._host.clone()
        return flat

    def _build_state(self, flat: torch.Tensor) -> BatchState:
        lay, a, n = self._layout, self.num_arenas, self.num_cars
        cars = flat[:, lay.cars :].view(a, n, RAW_CAR_WIDTH)
        ball = flat[:, lay.ball : lay.ball + GYM_BALL_WIDTH]
        ev = flat[:, lay.events : lay.cars]
        has_jumped = cars[..., CX_HAS_JUMPED] > 0.5
        on_ground = cars[..., GC_GROUND] > 0.5
        # RocketSim's rule: a car in the air may dodge or double jump once, if it has not jumped
        # (it drove off a surface) or jumped less than 1.25 s ago.
        flip_available = (
            ~on_ground
            & (cars[..., CX_HAS_DOUBLE_JUMPED] < 0.5)
            & (cars[..., CX_HAS_FLIPPED] < 0.5)
            & (~has_jumped | (cars[..., CX_AIR_TIME_SINCE_JUMP] < DOUBLE_JUMP_MAX_DELAY))
        )
        return BatchState(
            ball_pos=ball[:, GB_POS : GB_POS + 3],
            ball_vel=ball[:, GB_VEL : GB_VEL + 3],
            ball_ang_vel=ball[:, GB_ANG_VEL : GB_ANG_VEL + 3],
            car_pos=cars[..., GC_POS : GC_POS + 3],
            car_vel=cars[..., GC_VEL : GC_VEL + 3],
            car_ang_vel=cars[..., GC_ANG_VEL : GC_ANG_VEL + 3],
            car_forward=cars[..., GC_FORWARD : GC_FORWARD + 3],
            car_up=cars[..., GC_UP : GC_UP + 3],
            car_boost=cars[..., GC_BOOST],
            car_on_ground=on_ground,
            car_has_jump=on_ground & ~has_jumped,
            car_has_flip=flip_available,
            car_demolished=cars[..., GC_DEMOED] > 0.5,
            car_team=self._car_team,
            pad_active=flat[:, lay.pads : lay.pads + NUM_BOOST_PADS] > 0.5,
            pad_timer=flat[:, lay.pad_timers : lay.pad_timers + NUM_BOOST_PADS],
            blue_score=flat[:, 2].long(),
            orange_score=flat[:, 3].long(),
            goal_scored=ev[:, 0].long(),
            car_touched_ball=ev[:, 2 : 2 + n] > 0.5,
            car_was_demolished=ev[:, 2 + n : 2 + 2 * n] > 0.5,
            car_demolitions=ev[:, 2 + 2 * n : 2 + 3 * n].long(),
            car_boost_pickups=ev[:, 2 + 3 * n : 2 + 4 * n].long(),
            ball_last_touch=ev[:, 1].long(),
        )

    def close(self) -> None:
        """Stop worker processes or threads and free shared memory. Safe to call twice, and while a
        step is in flight (it is finished and dropped)."""
        self._closed = True
        self._in_flight = False
        self._futures = []
        if self._workers is not None:
            # Drop every view of the shared buffers before they are unmapped.
            self._state_np = self._controls_np = self._reset_np = self._reset_mask_np = None
            self._host = None
            self._workers.close()
            self._workers = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order varies
        try:
            self.close()
        except Exception:
            pass
