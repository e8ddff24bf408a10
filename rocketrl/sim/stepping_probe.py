"""`env.stepping: auto`: a probe of about ten seconds picks how RocketSim's arenas are stepped on this machine.

Which of worker processes, worker threads and one serial loop steps a batch of arenas fastest depends on the
machine (cores, caches, how RocketSim's readout competes for the GIL) and on the batch: on a 2-core machine
threads won some runs and processes others. The probe builds every candidate for the run's team sizes and
arenas (at most PROBE_ARENAS), steps each with random controls in interleaved rounds (so a burst of other
load hits them all alike), and keeps the best round of each. `processes` is kept unless another candidate is
at least MIN_GAIN faster: in training, the env layer and inference then run in the main process without
competing for the GIL, which a probe of the engine alone does not see. The answer is cached per machine
(`infra.machine_cache`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import torch

from rocketrl.infra import machine_cache
from rocketrl.sim.modes import SteppingMode

MIN_GAIN = 0.15
"""Another mode must step at least this much faster than worker processes to be chosen."""
ROUNDS = 3
"""Interleaved timing rounds per candidate; the best round counts."""
SECONDS_PER_ROUND = 0.25
"""Wall time of one candidate's round, after warm-up steps."""
PROBE_ARENAS = 32
"""The probe steps at most this many arenas: building RocketSim arenas (tens of ms each, per candidate) is most
of its time, and past a few dozen arenas per worker the per-arena cost, which all modes share, dominates."""
PROBE = "stepping"


@dataclass(frozen=True)
class SteppingChoice:
    """What `env.stepping: auto` resolved to and why."""

    mode: SteppingMode
    workers: int
    """Worker processes or threads (1 for serial and multi_step)."""
    reason: str
    """One line for the start-up summary: the measured rates, or where they came from."""


def candidates(cores: int, num_arenas: int, workers: int | None) -> list[tuple[SteppingMode, int]]:
    """(mode, workers) pairs worth timing: processes and threads on every core (and on half of them where there
    are 4 or more), and one serial loop. An explicit `workers` fixes the count of the parallel modes."""
    counts = [workers] if workers is not None else sorted({cores, max(1, cores // 2)}, reverse=True)
    counts = sorted({max(1, min(c, num_arenas)) for c in counts}, reverse=True)
    pairs: list[tuple[SteppingMode, int]] = [("processes", c) for c in counts] + [("threads", c) for c in counts]
    return [*pairs, ("serial", 1)]


def _arena_ticks_per_second(engine, controls: torch.Tensor, seconds: float) -> float:
    steps, started = 0, time.perf_counter()
    while True:
        engine.step(controls)
        steps += 1
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return steps * engine.num_arenas * engine.tick_skip / elapsed


def measure(
    num_arenas: int, blue_size: int, orange_size: int, tick_skip: int, pairs: list[tuple[SteppingMode, int]]
) -> dict[tuple[SteppingMode, int], float]:
    """Arena-ticks per second of each (mode, workers), best of ROUNDS interleaved rounds."""
    from rocketrl.sim.rocketsim import RocketSimEngine

    engines = {}
    try:
        for mode, workers in pairs:
            engines[(mode, workers)] = RocketSimEngine(
                num_arenas, blue_size, orange_size, tick_skip=tick_skip, num_workers=workers, stepping=mode
            )
        generator = torch.Generator().manual_seed(0)
        controls = torch.rand(num_arenas, blue_size + orange_size, 8, generator=generator) * 2 - 1
        controls[..., 5:] = (controls[..., 5:] > 0.5).float()  # jump, boost, handbrake are 0/1
        best = dict.fromkeys(engines, 0.0)
        for engine in engines.values():
            for _ in range(3):  # warm-up: first steps touch fresh memory
                engine.step(controls)
        for _ in range(ROUNDS):
            for key, engine in engines.items():
                best[key] = max(best[key], _arena_ticks_per_second(engine, controls, SECONDS_PER_ROUND))
        return best
    finally:
        for engine in engines.values():
            engine.close()


def _label(mode: str, workers: int) -> str:
    return mode if mode in ("serial", "multi_step") else f"{mode} x{workers}"


def choose_stepping(
    num_arenas: int, blue_size: int, orange_size: int, tick_skip: int, workers: int | None
) -> SteppingChoice:
    """Resolve `env.stepping: auto` for this machine and batch: from the cache, else by measuring (then cached)."""
    cores = os.cpu_count() or 1
    num_arenas = min(num_arenas, PROBE_ARENAS)
    fingerprint = machine_cache.machine_fingerprint(torch.device("cpu"))
    subject = {"arenas": num_arenas, "blue": blue_size, "orange": orange_size, "tick_skip": tick_skip,
               "workers": workers, "cores": cores}  # fmt: skip
    cached = machine_cache.read_cached(PROBE, fingerprint, subject)
    if cached is not None and cached.get("mode") in ("processes", "threads", "serial", "multi_step"):
        return SteppingChoice(cached["mode"], int(cached["workers"]), f"{cached['reason']} (cached)")
    pairs = candidates(cores, num_arenas, workers)
    rates = measure(num_arenas, blue_size, orange_size, tick_skip, pairs)
    default = max((key for key in rates if key[0] == "processes"), key=lambda key: rates[key])
    fastest = max(rates, key=lambda key: rates[key])
    mode, count = fastest if rates[fastest] >= (1.0 + MIN_GAIN) * rates[default] else default
    listed = ", ".join(f"{_label(*key)} {rates[key] / 1000:.0f}k" for key in sorted(rates, key=rates.get, reverse=True))
    reason = f"{_label(mode, count)}: arena-ticks/s on this machine {listed}"
    if (mode, count) == default and fastest != default:
        reason += f" (processes kept unless another mode is {100 * MIN_GAIN:.0f}% faster)"
    try:
        machine_cache.write_cached(PROBE, fingerprint, subject, {"mode": mode, "workers": count, "reason": reason})
    except OSError:
        pass  # an unwritable cache only means the next run measures again
    return SteppingChoice(mode, count, reason)
