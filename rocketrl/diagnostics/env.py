"""Environment speed per engine: physics alone against the full BatchedEnv step, measured alternately."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from rocketrl.env.config import EnvConfig
from rocketrl.sim.engines import ENGINES

WARMUP_STEPS = 3
"""Untimed steps first: RocketSim's first step of a new arena builds its collision caches."""


def alternating_medians(*step_fns: Callable[[], object], steps: int) -> tuple[float, ...]:
    """Median seconds of one call of each step function, called in turn `steps` times so that machine
    drift hits all alike."""
    times: list[list[float]] = [[] for _ in step_fns]
    for _ in range(steps):
        for fn, seconds in zip(step_fns, times):
            started = time.perf_counter()
            fn()
            seconds.append(time.perf_counter() - started)
    return tuple(statistics.median(seconds) for seconds in times)


def measure_engine(env_config: EnvConfig, device: torch.device, steps: int) -> dict[str, Any]:
    """Speed of one engine at env_config's size.

    Returns physics_ticks_per_s (arena-ticks/s of the engine stepping with no readout, or of its
    plain step when it has no raw stepping), env_steps_per_s (BatchedEnv.step calls/s, every arena
    advancing tick_skip ticks), agent_steps_per_s (env_steps_per_s x arenas x cars) and physics_share
    (fraction of an env step's time spent in physics, 0..1).
    """
    from rocketrl.env.batched import BatchedEnv

    started = time.perf_counter()
    env = BatchedEnv(env_config, device=device)
    build_s = time.perf_counter() - started
    a, n = env.num_arenas, env.num_cars
    generator = torch.Generator().manual_seed(env_config.seed)
    discrete = env.action_parser.kind == "discrete"
    try:
        env.reset()

        def step_env() -> None:
            if discrete:
                actions = torch.randint(0, env.action_parser.num_actions, (a, n), generator=generator)
            else:
                actions = torch.rand(a, n, 8, generator=generator) * 2 - 1
            env.step(actions)

        step_physics: Callable[[], object] = env.engine.step_raw
        for _ in range(WARMUP_STEPS):
            step_env()
            step_physics()
        env_s, physics_s = alternating_medians(step_env, step_physics, steps=steps)
    finally:
        env.close()
    ticks = env_config.tick_skip
    return {
        "arenas": a,
        "cars": n,
        "tick_skip": ticks,
        "workers": env.engine.num_workers,
        "stepping": env_config.stepping,
        "physics_measure": "step_raw",
        "build_s": round(build_s, 3),
        "physics_ticks_per_s": round(a * ticks / physics_s, 1),
        "env_steps_per_s": round(1.0 / env_s, 2),
        "agent_steps_per_s": round(a * n / env_s, 1),
        "env_step_ms": round(env_s * 1e3, 3),
        "physics_step_ms": round(physics_s * 1e3, 3),
        "physics_share": round(min(1.0, physics_s / env_s), 3),
    }


def measure_engines(env_config: EnvConfig, device: torch.device, steps: int) -> dict[str, dict[str, Any]]:
    """measure_engine for every name in ENGINES; an engine that fails gets {"error": why} instead."""
    results: dict[str, dict[str, Any]] = {}
    for name in ENGINES:
        try:
            config = EnvConfig.from_dict({**vars(env_config), "engine": name})
            results[name] = measure_engine(config, device, steps)
        except Exception as error:  # one broken engine must not hide the others
            results[name] = {"error": f"engine {name!r} could not be measured: {type(error).__name__}: {error}"}
    return results
