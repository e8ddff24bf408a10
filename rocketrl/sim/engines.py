"""Engine factory: an engine name -> an `Engine` (sim/engine_base.py).

Every engine offers `state` (a BatchState), `step(controls (A, C, 8)) -> BatchState` and its halves
`step_async` / `step_wait`, `reset(mask (A,), make_states)`, `num_workers` and `close()`, so BatchedEnv,
the trainer, evaluation and diagnostics run on any of them unchanged.
"""

from __future__ import annotations

from typing import Protocol

import torch

from rocketrl.sim.engine_base import Engine
from rocketrl.sim.modes import ENGINES, EngineName, SteppingSetting

__all__ = ["ENGINES", "Engine", "EngineSettings", "make_engine"]


class EngineSettings(Protocol):
    """What make_engine reads from its settings (EnvConfig has all of it)."""

    engine: EngineName
    num_arenas: int
    blue_size: int
    orange_size: int
    tick_skip: int
    num_workers: int | None
    stepping: SteppingSetting
    seed: int
    pin_memory: bool


def make_engine(config: EngineSettings, device: torch.device) -> Engine:
    """Build the engine named by config.engine for config.num_arenas arenas. RocketSim's `stepping: auto` is
    resolved here by a short probe; the engine's `stepping_reason` says what it chose and why."""
    if config.engine == "rocketsim":
        from rocketrl.sim.rocketsim import RocketSimEngine

        stepping, workers, reason = config.stepping, config.num_workers, ""
        if stepping == "auto":
            from rocketrl.sim.stepping_probe import choose_stepping

            choice = choose_stepping(
                config.num_arenas, config.blue_size, config.orange_size, config.tick_skip, config.num_workers
            )
            stepping, workers, reason = choice.mode, choice.workers, choice.reason
        engine = RocketSimEngine(
            config.num_arenas,
            config.blue_size,
            config.orange_size,
            tick_skip=config.tick_skip,
            num_workers=workers,
            stepping=stepping,
            device=device,
            seed=config.seed,
            pin_memory=config.pin_memory,
        )
        engine.stepping_reason = reason
        return engine
    if config.engine == "warp":
        from rocketrl.sim.warp.engine import WarpEngine

        return WarpEngine(
            config.num_arenas,
            config.blue_size,
            config.orange_size,
            tick_skip=config.tick_skip,
            device=device,
            seed=config.seed,
            num_workers=config.num_workers,
        )
    raise ValueError(f"env.engine={config.engine!r}: choose one of {', '.join(ENGINES)}")
