"""Which results depend on the CPU, shown on one machine (rocketrl.diagnostics.cpu_arithmetic).

1. warp: the fixed game (`cpu_arithmetic.fixed_game`) with the kernels built for each CPU target
   (ROCKETRL_WARP_CPU_TARGET: native, generic x86-64, AVX2 and AVX-512 CPUs of both makers), and once with glibc's
   math built for CPUs without FMA and AVX2 (GLIBC_TUNABLES): the state's digest per build, and each target's
   speed relative to native, measured in alternating rounds in this one run (arena-ticks per CPU second).
2. RocketSim: the scripted wall cases (rocketrl.diagnostics.car_wall_parity) through RocketSim natively, with
   glibc's non-FMA math, and under `qemu-x86_64` (where installed), whose `rsqrtss` is a correctly rounded
   1 / sqrt instead of this CPU's estimate: per case the first tick where positions differ from the native run,
   the first difference and the largest over 4 s (uu), and warp's largest gap to each.
3. Knife edges: a wall case and a random two-car state whose outcome a 2-ulp nudge of the start changes, in
   RocketSim and in warp alike: how many of 32 nudged starts part from the unnudged run, and how closely the
   unnudged warp run shadows the nearest RocketSim run.

    python benchmarks/cpu_determinism.py [--out docs/cpu_determinism.json] [--record tests/data]

--record writes the reference files the tests read: RocketSim's wall paths under each arithmetic measured here
(tests/data/rocketsim_wall_paths.npz) and the fixed game's digest (tests/data/warp_fixed_game.json).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from rocketrl.diagnostics import cpu_arithmetic
from rocketrl.infra.bench_report import ROOT, emit_report, machine_info

TARGETS = ("native", "generic", "x86-64-v3", "haswell", "skylake-avx512", "znver3", "znver4")
"""CPU targets of the warp kernels compared: this host, baseline x86-64 (SSE2), AVX2 + FMA, and AVX-512."""
SSE2_MATH = {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2,-FMA"}
"""Environment that makes glibc pick its math functions for a CPU without FMA and AVX2."""

WARP_CHILD = r"""
import json, sys, time, torch
from rocketrl.diagnostics import cpu_arithmetic
from rocketrl.sim.warp.engine import WarpEngine
digest = cpu_arithmetic.state_digest(cpu_arithmetic.fixed_game())
arenas = int(sys.argv[1])
e = WarpEngine(arenas, 1, 1, tick_skip=8, device="cpu", num_workers=1)
g = torch.Generator().manual_seed(0)
for _ in range(5):
    e.step_raw()
spent = 0.0
for _ in range(20):
    r = torch.rand(arenas, 2, 8, generator=g) * 2 - 1
    r[..., 5:] = (r[..., 5:] > 0.3).float()
    e.t["controls"].copy_(r)
    t0 = time.process_time()
    e.step_raw()
    spent += time.process_time() - t0
print(json.dumps({"digest": digest, "arena_ticks_per_cpu_s": arenas * 8 * 20 / spent}))
"""

ROCKETSIM_CHILD = r"""
import sys, numpy as np, torch
from rocketrl.diagnostics import car_wall_parity as wall
from rocketrl.sim.rocketsim import RocketSimEngine
from rocketrl.diagnostics.car_air_parity import rotation_matrices
names, state, controls = wall.scripted_wall_cases()
k = state.num_arenas
e = RocketSimEngine(k, 1, 0, tick_skip=1, stepping="serial")
states = [e.reset(torch.ones(k, dtype=torch.bool), state)]
for c in controls:
    states.append(e.step(c))
e.close()
pos = torch.stack([s.car_pos[:, 0] for s in states]).numpy()
rot = torch.stack([rotation_matrices(s)[:, 0] for s in states]).float().numpy()
np.savez(sys.argv[1], names=np.array(names), pos=pos, rot=rot)
"""


def run_child(code: str, args: list[str], env: dict[str, str], prefix: list[str] | None = None) -> str:
    """stdout of `code` run by this Python (under `prefix`, e.g. an emulator) with `env` added."""
    result = subprocess.run(
        [*(prefix or []), sys.executable, "-c", code, *args],
        env={**os.environ, **env}, capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""


def warp_builds(rounds: int, arenas: int) -> dict:
    """Per build: the fixed game's digest and the speed relative to native (median over rounds)."""
    builds = {t: {"ROCKETRL_WARP_CPU_TARGET": t} for t in TARGETS} | {"native+sse2_math": SSE2_MATH}
    rates: dict[str, list[float]] = {name: [] for name in builds}
    digests: dict[str, set[str]] = {name: set() for name in builds}
    for r in range(rounds):
        order = list(builds) if r % 2 == 0 else list(reversed(builds))
        for name in order:
            out = json.loads(run_child(WARP_CHILD, [str(arenas)], builds[name]))
            digests[name].add(out["digest"])
            rates[name].append(out["arena_ticks_per_cpu_s"])
    report = {}
    for name in builds:
        ratios = [a / b for a, b in zip(rates[name], rates["native"])]
        report[name] = {
            "digest": sorted(digests[name]),
            "same_as_native": digests[name] == digests["native"],
            "speed_vs_native": round(statistics.median(ratios), 3),
            "arena_ticks_per_cpu_s": round(statistics.median(rates[name])),
        }
    return report


def rocketsim_arithmetics(folder: Path) -> dict[str, dict[str, np.ndarray]]:
    """RocketSim's wall paths per arithmetic: "native", "sse2_math" and, with qemu-x86_64, "exact_rsqrt"."""
    runs: dict[str, tuple[dict[str, str], list[str] | None]] = {"native": ({}, None), "sse2_math": (SSE2_MATH, None)}
    if shutil.which("qemu-x86_64"):
        runs["exact_rsqrt"] = ({}, ["qemu-x86_64", "-cpu", "max"])
    paths = {}
    for name, (env, prefix) in runs.items():
        out = folder / f"{name}.npz"
        run_child(ROCKETSIM_CHILD, [str(out)], env, prefix)
        with np.load(out) as data:
            paths[name] = {key: data[key] for key in data.files}
    return paths


def warp_wall_paths() -> dict[str, np.ndarray]:
    """The warp engine's wall paths (positions and rotations of car 0) from the same states and controls."""
    from rocketrl.diagnostics import car_wall_parity as wall
    from rocketrl.diagnostics.car_air_parity import rotation_matrices
    from rocketrl.sim.warp.engine import WarpEngine

    names, state, controls = wall.scripted_wall_cases()
    k = state.num_arenas
    e = WarpEngine(k, 1, 0, tick_skip=1)
    try:
        states = [e.reset(torch.ones(k, dtype=torch.bool), state)]
        states += [e.step(c) for c in controls]
    finally:
        e.close()
    pos = torch.stack([s.car_pos[:, 0] for s in states]).numpy()
    rot = torch.stack([rotation_matrices(s)[:, 0] for s in states]).float().numpy()
    return {"names": np.array(names), "pos": pos, "rot": rot}


def compare_rocketsim(paths: dict[str, dict[str, np.ndarray]], warp: dict[str, np.ndarray]) -> dict:
    """Per arithmetic and case: first differing tick, first and largest difference from native (uu), and
    warp's largest gap to it over 4 s (uu)."""
    names = [str(n) for n in paths["native"]["names"]]
    native = paths["native"]["pos"].astype(np.float64)
    report: dict = {}
    for name, run in paths.items():
        pos = run["pos"].astype(np.float64)
        cases = {}
        for i, case in enumerate(names):
            gap = np.linalg.norm(pos[:, i] - native[:, i], axis=-1)
            differ = np.nonzero(gap > 0)[0]
            warp_gap = np.linalg.norm(pos[:, i] - warp["pos"][:, i].astype(np.float64), axis=-1)
            cases[case] = {
                "first_differing_tick": int(differ[0]) if len(differ) else None,
                "first_difference_uu": float(gap[differ[0]]) if len(differ) else 0.0,
                "largest_difference_uu": float(gap.max()),
                "warp_largest_gap_uu": round(float(warp_gap.max()), 4),
            }
        report[name] = cases
    return report


def knife_edges(count: int = 32) -> dict:
    """Nudged ensembles (2 ulps) of back_wall_drive_down and of random two-car state 60 (seed 1), both engines."""
    from rocketrl.diagnostics import car_contact_parity as contact
    from rocketrl.diagnostics import car_wall_parity as wall
    from rocketrl.diagnostics.car_air_parity import car_paths
    from rocketrl.diagnostics.car_ground_parity import select_cases
    from rocketrl.env.setters import RandomStateSetter

    report = {}
    names, state, controls = wall.scripted_wall_cases()
    i = names.index("back_wall_drive_down")
    ensemble = cpu_arithmetic.nudged(select_cases(state, [i]), count)
    paths = car_paths(ensemble, controls[:, [i] * count])
    report["back_wall_drive_down"] = ensemble_summary(paths["rocketsim"][0], paths["warp"][0])

    generator = torch.Generator().manual_seed(1)
    state = RandomStateSetter(1, 1)(contact.RANDOM_SEQUENCES, generator)
    controls = contact.random_controls(contact.RANDOM_SEQUENCES, contact.CONTACT_TIMES[-1], generator)
    one = state.index([60])
    paths = contact.contact_paths(cpu_arithmetic.nudged(one, count), controls[:, [60] * count])
    report["random_state_60_orange"] = ensemble_summary(
        paths["rocketsim"]["pos"][:, :, 1], paths["warp"]["pos"][:, :, 1]
    )
    return report


def ensemble_summary(rocketsim: torch.Tensor, warp: torch.Tensor) -> dict:
    """Parted runs (over 1 uu from the unnudged run at the end) per engine, and the shadow gap of warp's unnudged
    run to RocketSim's ensemble (uu, the largest over the ticks to the nearest member)."""

    def parted(pos: torch.Tensor) -> int:
        return int(((pos[-1] - pos[-1, 0]).norm(dim=-1) > 1.0).sum())

    same_start = (warp[:, 0] - rocketsim[:, 0]).norm(dim=-1).max()
    return {
        "nudged_starts": rocketsim.shape[1] - 1,
        "rocketsim_runs_parted": parted(rocketsim),
        "warp_runs_parted": parted(warp),
        "warp_gap_same_start_uu": round(float(same_start), 4),
        "warp_shadow_gap_uu": round(float(cpu_arithmetic.shadow_gaps(warp[:, 0], rocketsim).min()), 4),
    }


def record(folder: Path, paths: dict[str, dict[str, np.ndarray]], builds: dict) -> None:
    """The reference files the tests read, with the CPU that produced them."""
    folder.mkdir(parents=True, exist_ok=True)
    names = paths["native"]["names"]
    arrays = {"names": names}
    for name, run in paths.items():
        arrays[f"{name}_pos"] = run["pos"].astype(np.float32)
        arrays[f"{name}_rot"] = run["rot"].astype(np.float32)
    np.savez_compressed(folder / "rocketsim_wall_paths.npz", **arrays)
    meta = {
        "recorded_on": cpu_arithmetic.cpu_summary(),
        "arithmetics": {
            "native": "RocketSim on the CPU above",
            "sse2_math": "the same, glibc's math for CPUs without FMA and AVX2 (" + SSE2_MATH["GLIBC_TUNABLES"] + ")",
            "exact_rsqrt": "the same under qemu-x86_64 -cpu max: rsqrtss a correctly rounded 1 / sqrt",
        },
    }
    (folder / "rocketsim_wall_paths.json").write_text(json.dumps(meta, indent=2) + "\n")
    here = {
        "digest": builds["native"]["digest"][0],
        "recorded_on": cpu_arithmetic.cpu_summary(),
        "same_digest_for_targets": [t for t, b in builds.items() if b["same_as_native"]],
    }
    path, warp = folder / "warp_fixed_game.json", cpu_arithmetic.kernel_target()["warp"]
    game = json.loads(path.read_text()) if path.is_file() else {}
    # One digest per CPU maker (Intel and AMD step the game to different bits): replace this maker's, keep the
    # others' while the Warp release is the same (a new release rounds otherwise: every maker records again).
    kept = [e for e in game.get("digests", []) if game.get("warp") == warp]
    kept = [e for e in kept if e["recorded_on"].get("vendor") != here["recorded_on"]["vendor"]]
    game = {**game, "warp": warp, "digests": [*kept, here]}
    path.write_text(json.dumps(game, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of the warp builds")
    parser.add_argument("--arenas", type=int, default=256, help="arenas of each build's timed steps")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON report here")
    parser.add_argument("--record", type=Path, default=None, help="write the tests' reference files here")
    args = parser.parse_args()

    builds = warp_builds(args.rounds, args.arenas)
    with tempfile.TemporaryDirectory() as tmp:
        paths = rocketsim_arithmetics(Path(tmp))
    report = {
        "machine": machine_info() | cpu_arithmetic.cpu_summary(),
        "kernel_target": cpu_arithmetic.kernel_target(),
        "rocketsim_rsqrtss_sites": cpu_arithmetic.rsqrt_sites(cpu_arithmetic.rocketsim_library()),
        "warp_builds": builds,
        "rocketsim_wall_cases": compare_rocketsim(paths, warp_wall_paths()),
        "knife_edges": knife_edges(),
    }
    if args.record:
        record(args.record, paths, builds)
    emit_report(report, args.out)


if __name__ == "__main__":
    main()
