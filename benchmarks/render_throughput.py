"""Render throughput: how much faster than real time a whole game renders to MP4 at 30 fps on one core.

Plays one full 1v1 game (RulePolicy against BallChaser, `--seconds` of clock, default 300, no overtime) and
saves its replay, then renders it with `rocketrl.render` to MP4 at `--fps` (default 30) in each view. The
process is pinned to one CPU core before rendering, and ffmpeg, its child, inherits the pin, so drawing and
encoding share that one core. Reported per view: frames, wall seconds, CPU seconds (this process and ffmpeg),
frames per second, and the realtime factor = game seconds / wall seconds (target: at least 10 for the default
"top" view; "both" draws twice the picture and is reported beside it). The "ratios" map holds the realtime
factors, so `rocketrl bench --check` catches a slowdown.

    python benchmarks/render_throughput.py [--seconds 300] [--fps 30] [--views top,both] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import torch

from rocketrl.infra.bench_report import machine_info


def cpu_seconds() -> float:
    """CPU seconds of this process and its waited-for children (ffmpeg), user + system."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="game clock of the rendered game (default 300)")
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--views", default="top,both")
    parser.add_argument("--quick", action="store_true", help="a 30-second game")
    args = parser.parse_args()
    if args.quick:
        args.seconds = 30.0
    torch.set_num_threads(1)
    from rocketrl.league.match import MatchConfig, play_match
    from rocketrl.league.replay import load_replay
    from rocketrl.policy.rule import RulePolicy
    from rocketrl.policy.scripted import BallChaser
    from rocketrl.render.frames import render_frames
    from rocketrl.render.video import X264, write_frames

    tmp = tempfile.TemporaryDirectory(prefix="rocketrl-render-bench-")
    folder = Path(tmp.name)
    config = MatchConfig.games(
        num_games=1, game_seconds=args.seconds, overtime=False, num_arenas=1, seed=7, kickoff_jitter=5.0,
        stepping="serial", num_workers=1, replay_games="all", replay_dir=str(folder),
    )  # fmt: skip
    started = time.perf_counter()
    result = play_match(RulePolicy(), BallChaser(), config, "rule_policy", "ball_chaser")
    play_seconds = time.perf_counter() - started
    replay = load_replay(folder / "game_0000.safetensors")
    core = sorted(os.sched_getaffinity(0))[-1] if hasattr(os, "sched_getaffinity") else None
    if core is not None:
        os.sched_setaffinity(0, {core})
    rows, ratios = [], {}
    for view in [v.strip() for v in args.views.split(",") if v.strip()]:
        out = folder / f"game_{view}.mp4"
        wall0, cpu0 = time.perf_counter(), cpu_seconds()
        _, frames = write_frames(render_frames(replay, view, args.fps, 1.0), out, args.fps)
        wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
        factor = replay.duration_seconds / wall
        rows.append(
            {
                "view": view, "frames": frames, "game_seconds": round(replay.duration_seconds, 2),
                "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
                "frames_per_second": round(frames / wall, 1),
                "realtime_factor": round(factor, 2), "realtime_factor_cpu": round(replay.duration_seconds / cpu, 2),
                "mp4_bytes": out.stat().st_size,
            }
        )  # fmt: skip
        ratios[f"realtime_factor_{view}"] = round(factor, 2)
    tmp.cleanup()
    report = {
        "benchmark": "render_throughput",
        "game": result.summary(),
        "play_wall_seconds": round(play_seconds, 1),
        "fps": args.fps,
        "encoder": ["libx264", *X264],
        "pinned_core": core,
        "load_average_at_start": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "views": rows,
        "target": {"view": "top", "realtime_factor": 10.0},
        "met": any(row["view"] == "top" and row["realtime_factor"] >= 10.0 for row in rows),
        "ratios": ratios,
        "machine": machine_info(),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
