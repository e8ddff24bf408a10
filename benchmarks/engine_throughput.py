"""Engine throughput: the warp engine against RocketSim, arena-ticks/s and car-ticks/s, 1v1 and 2v2.

Warp runs 1,024 to 65,536 arenas per step (on CUDA up to 262,144; `--quick`: 1,024 and 4,096); on the CPU
once with one launch thread and once with one per core, on CUDA as one launch. RocketSim is measured at a smaller
count (its cost grows linearly with arenas) in each of its stepping modes (serial in this process,
worker processes, worker threads, Arena.multi_step; one worker per core), and reported per
arena-tick. Controls are fixed per car (full throttle, boost, a steady steer) so cars drive, turn,
touch and collide; both engines first play `--warmup-steps` steps from the kickoff (default 40,
2.7 s) so the timed steps have the ball in play rather than resting on its spot. Prints one JSON
object with a "ratios" map: the best warp mode's rate / the best RocketSim mode's rate, per team
size and arena count, and on the CPU "ratios_one_core": warp on one thread / RocketSim serial.

What the cars' collision-mesh queries (wheel rays and body against goals, back walls, ramps, corners)
cost is measured in the same run: each warp row also runs with WarpEngine(plane_only_cars=True), the
cars meeting only the four arena planes ("arena_ticks_per_s_plane_only_cars"), and "car_mesh_query_share"
gives 1 - rate / plane-only rate of the best warp mode per team size and arena count: the share of a
step's time those queries take. The plane-only cars leave the field through the back walls, so the two
runs play different (similar) games; `--no-plane-only` skips them. On the CPU "phase_share" splits a step's time
among the phases of a tick (rocketrl/sim/warp/tick.py: the cars' starts with their wheel rays, the ball and the
meetings, the cars' ends with the body's arena contact, the arena's end), timed kernel by kernel with the step
run as phase kernels (WarpEngine(split_step=True), one thread, the first arena count).

    python benchmarks/engine_throughput.py [--quick] [--steps 5] [--rocketsim-arenas 256] [--warmup-steps 40]
    [--device cpu|cuda] [--no-plane-only] [--arenas 1024,4096] [--block-dims 64,128,256 (CUDA)]
    [--step-kinds whole,split,whole_graph,split_graph]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
import warp as wp

from rocketrl.infra.bench_report import machine_info
from rocketrl.sim.rocketsim import RocketSimEngine
from rocketrl.sim.warp.engine import WarpEngine

TICK_SKIP = 8
ROCKETSIM_MODES = ("serial", "processes", "threads", "multi_step")
STEP_KINDS = ("whole", "split", "whole_graph", "split_graph")


def _controls(arenas: int, cars: int) -> torch.Tensor:
    c = torch.zeros(arenas, cars, 8)
    c[..., 0] = 1.0
    c[..., 1] = torch.linspace(-0.5, 0.5, arenas * cars).view(arenas, cars)
    c[..., 6] = 1.0
    return c


def _time_steps(step, steps: int) -> float:
    """Seconds per step: the best of `steps` timed steps after one warm-up step."""
    step()
    best = float("inf")
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_warp(
    arenas: int,
    team: int,
    steps: int,
    device: str,
    threads: int,
    warmup: int,
    plane_only_cars: bool = False,
    block_dim: int | None = None,
    step_kind: str = "whole",
) -> dict:
    engine = WarpEngine(
        arenas,
        team,
        team,
        tick_skip=TICK_SKIP,
        device=device,
        num_workers=threads,
        plane_only_cars=plane_only_cars,
        block_dim=block_dim,
        split_step=step_kind.startswith("split"),
        cuda_graph=step_kind.endswith("_graph"),
    )
    engine.t["controls"].copy_(_controls(arenas, 2 * team))
    wp_device = wp.device_from_torch(engine.device)

    def step() -> None:
        engine.step_raw()
        wp.synchronize_device(wp_device)

    def step_with_state() -> None:
        engine.step(engine.t["controls"].clone())
        wp.synchronize_device(wp_device)

    for _ in range(warmup):
        engine.step_raw()
    seconds = _time_steps(step, steps)
    with_state = _time_steps(step_with_state, max(1, steps // 2))
    launch_threads = engine.num_workers
    engine.close()
    rate = arenas * TICK_SKIP / seconds
    return {
        "arenas": arenas,
        "launch_threads": launch_threads,
        "block_dim": block_dim,
        "step_kind": step_kind,
        "arena_ticks_per_s": rate,
        "car_ticks_per_s": rate * 2 * team,
        "arena_ticks_per_s_with_state_snapshot": arenas * TICK_SKIP / with_state,
    }


def bench_phases(arenas: int, team: int, steps: int, warmup: int) -> dict[str, float]:
    """On the CPU, the share of a step's time in each phase kernel (WarpEngine(split_step=True), one launch
    thread, the same game as the other rows): where the time of the one-kernel step goes, phase by phase."""
    engine = WarpEngine(arenas, team, team, tick_skip=TICK_SKIP, device="cpu", num_workers=1, split_step=True)
    engine.t["controls"].copy_(_controls(arenas, 2 * team))
    for _ in range(warmup):
        engine.step_raw()
    engine.phase_seconds.clear()
    for _ in range(steps):
        engine.step_raw()
    total = sum(engine.phase_seconds.values())
    engine.close()
    return {name: round(seconds / total, 4) for name, seconds in sorted(engine.phase_seconds.items())}


def bench_rocketsim(arenas: int, team: int, steps: int, stepping: str, warmup: int) -> dict:
    workers = os.cpu_count() or 1
    engine = RocketSimEngine(arenas, team, team, tick_skip=TICK_SKIP, stepping=stepping, num_workers=workers)
    try:
        controls = _controls(arenas, 2 * team)
        engine.step(controls)
        for _ in range(warmup):
            engine.step_raw()
        seconds = _time_steps(engine.step_raw, steps)
    finally:
        engine.close()
    rate = arenas * TICK_SKIP / seconds
    return {"arenas": arenas, "stepping": stepping, "arena_ticks_per_s": rate, "car_ticks_per_s": rate * 2 * team}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,024 and 4,096 warp arenas, fewer steps")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rocketsim-arenas", type=int, default=256)
    parser.add_argument("--device", default="cpu", help="warp's device: cpu or cuda")
    parser.add_argument("--warmup-steps", type=int, default=40, help="steps played before timing")
    parser.add_argument(
        "--no-plane-only", action="store_true", help="skip the plane-only-cars runs (car_mesh_query_share)"
    )
    parser.add_argument("--no-rocketsim", action="store_true", help="warp rows only (no ratios)")
    parser.add_argument("--arenas", help="warp arena counts, comma-separated (default: see above)")
    parser.add_argument(
        "--block-dims",
        help="on CUDA, threads per block of the step kernel to try, comma-separated (default: Warp's 256); "
        "each is its own row and the ratios take the best",
    )
    parser.add_argument(
        "--step-kinds",
        default="whole",
        help="how warp steps, comma-separated, each its own rows: whole (one kernel per step), split (phase "
        "kernels), whole_graph / split_graph (on CUDA, replayed as a CUDA graph); default whole",
    )
    args = parser.parse_args()
    on_cpu = torch.device(args.device).type == "cpu"
    counts = [1024, 4096] if args.quick else [1024, 4096, 16384, 65536] + ([] if on_cpu else [262144])
    if args.arenas:
        counts = [int(n) for n in args.arenas.split(",")]
    if args.block_dims and on_cpu:
        parser.error("--block-dims: only on CUDA (the CPU launches one thread per chunk of arenas)")
    block_dims: list[int | None] = [int(b) for b in args.block_dims.split(",")] if args.block_dims else [None]
    step_kinds = args.step_kinds.split(",")
    unknown = set(step_kinds) - set(STEP_KINDS)
    if unknown:
        parser.error(f"--step-kinds: {sorted(unknown)} unknown; choose from {', '.join(STEP_KINDS)}")
    steps = 2 if args.quick else args.steps
    cores = os.cpu_count() or 1
    thread_counts = sorted({1, cores}) if on_cpu else [1]
    result: dict = {
        "machine": machine_info(),
        "tick_skip": TICK_SKIP,
        "warmup_steps": args.warmup_steps,
        "warp_device": args.device,
        "rocketsim": {},
        "warp": {},
        "ratios": {},
        "car_mesh_query_share": {},
    }
    if on_cpu:
        result["ratios_one_core"] = {}
        result["phase_share"] = {}
    for team in (1, 2):
        key = f"{team}v{team}"
        rs = [
            bench_rocketsim(args.rocketsim_arenas, team, 2 * steps, mode, args.warmup_steps)
            for mode in ([] if args.no_rocketsim else ROCKETSIM_MODES)
        ]
        result["rocketsim"][key] = rs
        rows = [
            bench_warp(n, team, steps, args.device, t, args.warmup_steps, block_dim=b, step_kind=kind)
            for n in counts
            for t in thread_counts
            for b in block_dims
            for kind in step_kinds
        ]
        if not args.no_plane_only:
            for row in rows:
                n, threads, b, kind = row["arenas"], row["launch_threads"], row["block_dim"], row["step_kind"]
                plane = bench_warp(
                    n, team, steps, args.device, threads, args.warmup_steps, True, block_dim=b, step_kind=kind
                )
                row["arena_ticks_per_s_plane_only_cars"] = plane["arena_ticks_per_s"]
            result["car_mesh_query_share"][key] = {
                str(n): 1.0
                - max(w["arena_ticks_per_s"] for w in rows if w["arenas"] == n)
                / max(w["arena_ticks_per_s_plane_only_cars"] for w in rows if w["arenas"] == n)
                for n in counts
            }
        result["warp"][key] = rows
        if on_cpu:
            result["phase_share"][key] = bench_phases(counts[0], team, 2 * steps, args.warmup_steps)
        if not rs:
            continue
        best = max(r["arena_ticks_per_s"] for r in rs)
        result["ratios"][key] = {
            str(n): max(w["arena_ticks_per_s"] for w in rows if w["arenas"] == n) / best for n in counts
        }
        if on_cpu:
            serial = next(r["arena_ticks_per_s"] for r in rs if r["stepping"] == "serial")
            result["ratios_one_core"][key] = {
                str(w["arenas"]): w["arena_ticks_per_s"] / serial for w in rows if w["launch_threads"] == 1
            }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
