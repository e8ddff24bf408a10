"""Engine factory: an engine name -> an engine object with RocketSimEngine's interface.

Every engine offers `state` (a BatchState), `step(controls (A, C, 8)) -> BatchState`,
`reset(mask (A,), make_states)`, `num_workers` and `close()`, so BatchedEnv, the trainer,
evaluation and diagnostics run on any of them unchanged.
"""

from __future__ import annotations

from typing import Protocol

import torch

from rocketrl.sim.modes import ENGINES, EngineName, SteppingMode

__all__ = ["ENGINES", "EngineSettings", "make_engine"]


class EngineSettings(Protocol):
    """What make_engine reads from its settings (EnvConfig has all of it)."""

    engine: EngineName
    num_arenas: int
    blue_size: int
    orange_size: int
    tick_skip: int
    num_workers: int | None
    stepping: SteppingMode
    seed: int
    pin_memory: bool


def make_engine(config: EngineSettings, device: torch.device):
    """Build the engine named by config.engine for config.num_arenas arenas."""
    if config.engine == "rocketsim":
        from rocketrl.sim.rocketsim import RocketSimEngine

        return RocketSimEngine(
            config.num_arenas,
            config.blue_size,
            config.orange_size,
            tick_skip=config.tick_skip,
            num_workers=config.num_workers,
            stepping=config.stepping,  # type: ignore[arg-type]
            device=device,
            seed=config.seed,
            pin_memory=config.pin_memory,
        )
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
