"""Environment throughput: raw RocketSim stepping against the full BatchedEnv, in one run.

For 1v1 and 2v2, with 1 and 2 workers, at 256 arenas (by default), it measures
  raw: the same arenas stepped tick_skip ticks with no readout and no env layer (arena-ticks/s),
  env: BatchedEnv.step with random discrete actions (agent-steps/s, and the same in arena-ticks/s),
  engine: the engine's own step with the same kind of actions (physics and readout, no env layer),
alternating one env, one engine and one raw step so that drift in the machine's speed hits all alike,
and reports ratio = env rate / raw rate (target >= 0.75) and the engine's own ratio to raw (which
bounds the env's from above), with the env layer eager and compiled (EnvConfig.compile). The "ratios"
map (env/raw eager and compiled and engine/raw, the worst configuration of each, and compiled/eager env
speed, the median) is what `rocketrl bench --check` compares. It also compares the engine's stepping
modes (serial, multi_step, threads, processes) on the engine alone, and ("readout") the microseconds
per arena of physics and of RocketSim's read calls in one process. Prints one JSON object.

    python benchmarks/env_throughput.py [--arenas 256] [--steps 40] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

from rocketrl.diagnostics.env import alternating_medians
from rocketrl.env.batched import BatchedEnv
from rocketrl.infra.bench_report import machine_info
from rocketrl.sim.rocketsim import STEPPING_MODES, RocketSimEngine


def bench_env(arenas: int, team_size: int, workers: int, steps: int, compile_layer: bool, seed: int = 0) -> dict:
    env = BatchedEnv(
        compile=compile_layer,
        num_arenas=arenas,
        blue_size=team_size,
        orange_size=team_size,
        num_workers=workers,
        stepping="processes",
        seed=seed,
        state_setter={"kickoff": 1.0},
    )
    try:
        env.reset()
        generator = torch.Generator().manual_seed(seed)
        n = env.num_cars

        def step_env() -> None:
            env.step(torch.randint(0, 90, (arenas, n), generator=generator))

        def step_engine() -> None:  # the engine with its readout, no env layer: the ceiling of env / raw
            actions = torch.randint(0, 90, (arenas, n), generator=generator)
            env.engine.step(env.action_parser.parse(actions, arenas, n, validate=False))

        started = time.perf_counter()
        step_env()  # compiles the env layer when asked
        first_step_s = time.perf_counter() - started
        for _ in range(3):
            step_env()
            env.engine.step_raw()
        env_s, engine_s, raw_s = alternating_medians(step_env, step_engine, env.engine.step_raw, steps=steps)
    finally:
        env.close()
    ticks = env.config.tick_skip
    return {
        "team_size": f"{team_size}v{team_size}",
        "workers": workers,
        "compiled_env_layer": compile_layer,
        "first_step_s": round(first_step_s, 2),
        "arenas": arenas,
        "raw_arena_ticks_per_s": round(arenas * ticks / raw_s),
        "env_arena_ticks_per_s": round(arenas * ticks / env_s),
        "env_agent_steps_per_s": round(arenas * n / env_s),
        "ratio_env_to_raw": round(raw_s / env_s, 3),
        "ratio_engine_to_raw": round(raw_s / engine_s, 3),
    }


def bench_stepping_modes(arenas: int, workers: int, steps: int) -> list[dict]:
    """Engine step (with readout into the BatchState) against raw stepping, for every mode."""
    rows = []
    controls = torch.zeros(arenas, 2, 8)
    controls[..., 0] = 1.0  # drive forward with boost and a little steer: cars move and collide
    controls[..., 1] = 0.3
    controls[..., 6] = 1.0
    for mode in STEPPING_MODES:
        engine = RocketSimEngine(arenas, 1, 1, num_workers=workers, stepping=mode)  # type: ignore[arg-type]
        try:
            for _ in range(3):
                engine.step(controls)
            step_s, raw_s = alternating_medians(lambda e=engine: e.step(controls), engine.step_raw, steps=steps)
        finally:
            engine.close()
        ticks = engine.tick_skip
        rows.append(
            {
                "stepping": mode,
                "workers": workers if mode in ("threads", "processes") else 1,
                "engine_arena_ticks_per_s": round(arenas * ticks / step_s),
                "raw_arena_ticks_per_s": round(arenas * ticks / raw_s),
            }
        )
    best = max(rows, key=lambda r: r["engine_arena_ticks_per_s"])
    for row in rows:
        row["fastest"] = row is best
    return rows


def bench_readout(arenas: int, team_size: int, steps: int, seed: int = 0) -> dict:
    """Microseconds per arena of physics and of RocketSim's read calls, in this process: what any
    readout through RocketSim's Python bindings costs at least.

    Alternates a raw step of `arenas` arenas (random discrete actions) with one read pass of a kind:
    `Arena.get_gym_state` (every arena), `Car.get_state` (every car), and the block's whole readout
    (gym states, jump flags, events). Medians over `steps` steps.
    """
    import numpy as np

    from rocketrl.env.actions import lookup_table
    from rocketrl.sim.arena import DEFAULT_TICK_SKIP, TICK_TIME
    from rocketrl.sim.rocketsim_block import ArenaBlock, StateLayout

    n = 2 * team_size
    layout = StateLayout(n)
    state = np.zeros((arenas, layout.width), np.float32)
    controls = np.zeros((arenas, n, 8), np.float32)
    reset_rows = np.zeros((arenas, layout.reset_width()), np.float32)
    block = ArenaBlock(0, arenas, team_size, team_size, seed, state, controls, reset_rows)
    table = lookup_table().numpy()
    rng = np.random.default_rng(seed)
    cars = [car for arena_cars in block.cars for car in arena_cars]
    passes = {
        "get_gym_state": lambda: [arena.get_gym_state() for arena in block.arenas],
        "car_get_state": lambda: [car.get_state() for car in cars],
        "block_readout": lambda: block.read_all(dt=DEFAULT_TICK_SKIP * TICK_TIME),
    }
    seconds: dict[str, list[float]] = {"physics": [], **{name: [] for name in passes}}
    names = list(passes)
    for i in range(3 + steps * len(passes)):
        controls[:] = table[rng.integers(0, len(table), (arenas, n))]
        block.apply_controls()
        started = time.perf_counter()
        block.step_raw(DEFAULT_TICK_SKIP)
        physics_s = time.perf_counter() - started
        name = names[i % len(names)]
        started = time.perf_counter()
        passes[name]()
        if i >= 3:  # the first steps of new arenas build RocketSim's collision caches
            seconds["physics"].append(physics_s)
            seconds[name].append(time.perf_counter() - started)
    us = {name: round(1e6 * statistics.median(values) / arenas, 2) for name, values in seconds.items()}
    return {
        "team_size": f"{team_size}v{team_size}",
        "arenas": arenas,
        "us_per_arena": us,
        # The share of raw stepping that the readout alone leaves, whatever the env layer costs.
        "ceiling_engine_to_raw": round(us["physics"] / (us["physics"] + us["block_readout"]), 3),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arenas", type=int, default=256)
    parser.add_argument("--steps", type=int, default=40, help="measured steps per configuration")
    parser.add_argument("--quick", action="store_true", help="32 arenas, 8 steps: a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.arenas, args.steps = 32, 8
    torch.set_num_threads(1)  # the env layer's tensors are small; keep cores for the simulation
    configs = [(team, workers, compiled) for team in (1, 2) for workers in (1, 2) for compiled in (False, True)]
    env_rows = [bench_env(args.arenas, team, workers, args.steps, compiled) for team, workers, compiled in configs]
    result = {
        "benchmark": "env_throughput",
        "machine": machine_info(),
        "tick_skip": 8,
        "env": env_rows,
        "stepping_modes": bench_stepping_modes(args.arenas, 2, args.steps),
        "readout": [bench_readout(min(args.arenas, 128), team, args.steps) for team in (1, 2)],
        "target_ratio": 0.75,
        "min_ratio_eager": min(row["ratio_env_to_raw"] for row in env_rows if not row["compiled_env_layer"]),
        "min_ratio_compiled": min(row["ratio_env_to_raw"] for row in env_rows if row["compiled_env_layer"]),
        # The engine step alone (physics and readout into the BatchState, no env layer) bounds env / raw.
        "max_ratio_engine": max(row["ratio_engine_to_raw"] for row in env_rows),
    }
    # Unitless ratios measured within this run, larger is better: `rocketrl bench --check` compares these.
    eager = {
        (r["team_size"], r["workers"]): r["env_agent_steps_per_s"] for r in env_rows if not r["compiled_env_layer"]
    }
    speedups = [
        r["env_agent_steps_per_s"] / eager[(r["team_size"], r["workers"])] for r in env_rows if r["compiled_env_layer"]
    ]
    result["ratios"] = {
        "env_to_raw_eager": result["min_ratio_eager"],
        "env_to_raw_compiled": result["min_ratio_compiled"],
        "engine_to_raw": min(row["ratio_engine_to_raw"] for row in env_rows),
        "compiled_to_eager": round(statistics.median(speedups), 3),
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
