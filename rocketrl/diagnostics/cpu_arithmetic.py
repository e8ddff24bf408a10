"""What of the physics depends on the CPU, and tools to show it.

Three sources were measured (`benchmarks/cpu_determinism.py`, `docs/cpu_determinism.json`):

- RocketSim's Bullet normalises vectors with the SSE estimate `rsqrtss` and one Newton step. The estimate's last
  bits are the CPU maker's own (the instruction only promises a relative error under 1.5 * 2^-12), so RocketSim's
  states differ between Intel and AMD processors from the first ticks on, by rounding (about 1e-4 uu).
- glibc picks its `sinf`, `cosf`, `atan2f`, ... by the CPU: one build for CPUs with FMA and AVX2, another
  without. They differ on a few inputs in ten million, by one unit in the last place. RocketSim and the warp
  kernels (`sincosf`, `atan2f`) both call them.
- The warp kernels themselves give the same bits whatever target LLVM builds them for (no FMA contraction, no
  reordered reductions): the same state from a generic x86-64 build as from an AVX-512 one.

Yet the fixed game (`fixed_game`) steps to different bits on an Intel Xeon (AVX-512) and an AMD EPYC (AVX2), each
the same for every kernel target on its own CPU. The cause is not yet found: neither kernel holds an approximate
instruction (`rsqrtss`, `rcpss`), and the AMD digest stays the same without numpy's or torch's SIMD paths. So the
recorded digest is one per CPU maker (tests/data/warp_fixed_game.json), and a parity test against a live
RocketSim compares with whichever RocketSim this CPU makes. Where a
state sits on a knife edge (a contact that a rounding difference makes or misses), a 2-ulp nudge of the start
sends either engine one way or the other; `nudged` builds such an ensemble, `shadow_gaps` measures how far
a path lies from the nearest member of one.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import torch

from rocketrl.infra.machine_cache import cpu_model_and_flags, cpu_vendor
from rocketrl.sim.state import ResetState

RSQRTSS = b"\xf3\x0f\x52"
"""Opcode bytes of SSE's `rsqrtss` (a REX prefix may sit between F3 and 0F)."""


def rsqrt_sites(library: Path) -> int:
    """How many register-to-register `rsqrtss` instructions the machine code of `library` holds (a byte scan:
    F3 [REX] 0F 52 with a register ModRM byte)."""
    data = library.read_bytes()
    count = 0
    for i in range(len(data) - 4):
        if data[i] != 0xF3:
            continue
        j = i + 2 if 0x40 <= data[i + 1] <= 0x4F else i + 1
        if data[j : j + 2] == RSQRTSS[1:] and data[j + 2] >= 0xC0:
            count += 1
    return count


def rocketsim_library() -> Path:
    """The RocketSim extension module that the `rocketsim` package loads."""
    import RocketSim

    return Path(RocketSim.__file__)


def kernel_target() -> dict[str, object]:
    """The CPU target of the warp engine's CPU kernels: the compiler flags, LLVM's name for the host CPU and
    the instruction sets it builds for (with -march=native), and Warp's cache key for that target (objects
    built for one CPU target are never loaded on another)."""
    import warp as wp

    from rocketrl.sim.warp.engine import init_warp
    from rocketrl.sim.warp.kernels import CPU_COMPILER_FLAGS, CPU_TARGET

    init_warp()
    target: dict[str, object] = {
        "warp": wp.config.version,
        "cpu_target": CPU_TARGET,
        "cpu_compiler_flags": CPU_COMPILER_FLAGS,
    }
    context = getattr(wp, "_src", None) and getattr(wp._src, "context", None)
    if context is not None and hasattr(context, "_get_host_cpu_name"):
        target["llvm_host_cpu"] = context._get_host_cpu_name()
        features = sorted(context._get_cpu_feature_set()) if "-march=native" in CPU_COMPILER_FLAGS.split() else []
        target["instruction_sets"] = [f for f in features if f.startswith(("avx", "fma", "sse", "amx"))]
    if hasattr(wp, "get_cpu_kernel_cache_key"):
        target["cache_key"] = wp.get_cpu_kernel_cache_key(cpu_compiler_flags=CPU_COMPILER_FLAGS)
    return target


def fixed_game(arenas: int = 8, team_size: int = 1, steps: int = 120, seed: int = 0) -> list:
    """The states of a fixed warp game on the CPU: `arenas` kickoffs with jittered spawns, then `steps` steps
    (tick skip 8, 8 s at the default 120) of seeded random controls that change every step."""
    from rocketrl.sim.warp.engine import WarpEngine

    generator = torch.Generator().manual_seed(seed)
    engine = WarpEngine(arenas, team_size, team_size, tick_skip=8, device="cpu", num_workers=1)
    try:
        states = [engine.reset_kickoff_native(torch.ones(arenas, dtype=torch.bool), seed=seed)]
        for _ in range(steps):
            controls = torch.rand(arenas, 2 * team_size, 8, generator=generator) * 2 - 1
            controls[..., 5:] = (controls[..., 5:] > 0.3).float()
            states.append(engine.step(controls))
    finally:
        engine.close()
    return states


def state_digest(states: list) -> str:
    """SHA-256 of every float and integer tensor of every BatchState in `states`, bit for bit."""
    digest = hashlib.sha256()
    for state in states:
        for field in dataclasses.fields(state):
            value = getattr(state, field.name)
            if isinstance(value, torch.Tensor):
                digest.update(field.name.encode())
                digest.update(value.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def nudged(state: ResetState, count: int, ulps: int = 2, seed: int = 0) -> ResetState:
    """`count` copies of a one-arena `state` whose car positions are moved by up to `ulps` float32 steps per
    coordinate at random (copy 0 unmoved): starts that no engine can tell apart from rounding alone."""
    assert state.num_arenas == 1, "nudged takes one arena"
    copies = {
        f.name: getattr(state, f.name).expand(count, *getattr(state, f.name).shape[1:]).clone()
        for f in dataclasses.fields(state)
        if isinstance(getattr(state, f.name), torch.Tensor)
    }
    position = copies["car_pos"]
    steps = torch.randint(-ulps, ulps + 1, position.shape, generator=torch.Generator().manual_seed(seed))
    steps[0] = 0
    for _ in range(ulps):
        position = torch.where(steps > 0, torch.nextafter(position, torch.full_like(position, 1e9)), position)
        position = torch.where(steps < 0, torch.nextafter(position, torch.full_like(position, -1e9)), position)
        steps = steps - steps.sign()
    copies["car_pos"] = position
    return dataclasses.replace(state, **copies)


def shadow_gaps(path: torch.Tensor, ensemble: torch.Tensor) -> torch.Tensor:
    """(M,) per member of `ensemble` (ticks, M, 3) the largest distance (uu) over the ticks to `path`
    (ticks, 3): the smallest of them is how closely `path` shadows a run of the ensemble."""
    return (ensemble - path[:, None]).norm(dim=-1).amax(0)


def cpu_summary() -> dict[str, object]:
    """The CPU's maker, model and the instruction-set flags that decide the arithmetic above."""
    model, flags = cpu_model_and_flags()
    wanted = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile")
    return {"vendor": cpu_vendor(), "cpu": model, "flags": [f for f in wanted if f in flags]}


def recorded_digest(record: dict, vendor: str) -> dict | None:
    """The fixed game's digest entry recorded on a CPU of `vendor` in a tests/data/warp_fixed_game.json `record`
    ({"digests": [{"digest", "recorded_on": {"vendor", ...}, ...}]}), or None when none was."""
    for entry in record.get("digests", []):
        if entry["recorded_on"].get("vendor") == vendor:
            return entry
    return None
