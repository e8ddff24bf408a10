"""The closed sets of names the engines take: which engine, and how RocketSim's arenas are stepped."""

from __future__ import annotations

from typing import Literal, get_args

EngineName = Literal["rocketsim", "warp"]
"""rocketsim: RocketSim on CPU workers (the reference); warp: batched Warp kernels on the training device."""
ENGINES: tuple[str, ...] = get_args(EngineName)
SteppingMode = Literal["processes", "threads", "multi_step", "serial"]
"""How RocketSim arenas are stepped (see sim/rocketsim.py); the warp engine ignores it."""
STEPPING_MODES: tuple[str, ...] = get_args(SteppingMode)
SteppingSetting = Literal["auto", "processes", "threads", "multi_step", "serial"]
"""A stepping mode, or 'auto': a probe of about ten seconds picks the mode and worker count
(sim/stepping_probe.py)."""
