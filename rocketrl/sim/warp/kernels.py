"""The step kernel: one thread per arena runs every tick of a step (the phases of tick.py in turn), then writes the
cars' forward and up vectors."""

from __future__ import annotations

import os

import warp as wp

from rocketrl.sim.warp.layout import SimState
from rocketrl.sim.warp.tick import ball_and_meetings, begin_step, car_tick_end, car_tick_start, end_step_car, end_tick

INLINING_FLAGS = (
    "-mllvm -inline-threshold=9000 -mllvm -inline-cold-callsite-threshold=3000 -mllvm -slp-recursion-max-depth=4"
)
"""LLVM's inlining raised well past its defaults (Warp 1.19's own default, written out so that it holds on every
Warp version and whatever `wp.config` says): the car's tick is one long chain of small functions, and only heavy
inlining flattens it. LLVM's default inlining steps at 0.38-0.47x, -O3 at 0.60-0.69x (docs/results/speed.md,
Compiler flags; docs/engine_ab_compiler_flags.json). Clang's fast math is left out: it lets the compiler
reorder the arithmetic and drop NaN and signed-zero handling."""


def cpu_compiler_flags(target: str) -> str:
    """Clang flags of the CPU build for `target`: "native" (the host's instruction sets), "generic" (baseline
    x86-64, SSE2) or an LLVM CPU name ("haswell", "x86-64-v3", "znver4", ...), with INLINING_FLAGS.

    The kernels give the same bits for every target (rocketrl.diagnostics.cpu_arithmetic, tests/
    test_cpu_arithmetic.py): the choice is one of speed only. Warp keys cached objects built for "native" by the
    host's instruction sets, so a shared cache never hands one CPU's build to another."""
    if target == "native":
        return f"-march=native {INLINING_FLAGS}"
    if target == "generic":
        return INLINING_FLAGS
    return f"-target-cpu {target} {INLINING_FLAGS}"


CPU_TARGET = os.environ.get("ROCKETRL_WARP_CPU_TARGET", "native")
"""The CPU target of the kernels: $ROCKETRL_WARP_CPU_TARGET where set, else "native" (fastest; speed of each
target in docs/cpu_determinism.json)."""
CPU_COMPILER_FLAGS = cpu_compiler_flags(CPU_TARGET)

MODULE_OPTIONS: dict[str, object] = {"enable_backward": False}
"""Warp module options of the engine's kernel modules (this one and phase_kernels). Nothing differentiates a step:
without the adjoint code a module compiles in a fraction of the time."""
if hasattr(wp.config, "cpu_compiler_flags"):  # Warp versions that take CPU compiler flags
    MODULE_OPTIONS["cpu_compiler_flags"] = CPU_COMPILER_FLAGS
wp.set_module_options(dict(MODULE_OPTIONS))


@wp.kernel
def step_kernel(s: SimState, ticks: int, num_cars: int, num_pads: int, first_arena: int):
    """Advance arena a = first_arena + thread id by `ticks` ticks under the controls in s.controls."""
    a = first_arena + wp.tid()
    begin_step(s, a, num_cars)
    for _t in range(ticks):
        tick = s.tick[a]
        for c in range(num_cars):
            car_tick_start(s, a, c, tick)
        ball_and_meetings(s, a, num_cars, tick)
        for c in range(num_cars):
            car_tick_end(s, a, c)
        end_tick(s, a, num_cars, num_pads, tick)
    for c in range(num_cars):
        end_step_car(s, a, c)
