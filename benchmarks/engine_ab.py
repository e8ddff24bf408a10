"""Paired A/B of the warp engine's CPU step: two source trees (e.g. a commit before a change and after it, each a
`git worktree`) stepped at the same time, one per core, swapping cores every round.

On a shared machine a run's speed drifts by tens of percent from minute to minute, more than most changes
are worth, so rates measured one after the other do not compare. Run at once, both trees see the same drift
(and each its own core); the per-round ratio new / old is the figure. Each side: one launch thread, the
engine_throughput game (full throttle, boost, a steady steer) for 40 steps, then 20 timed steps of it
("bench_game") and 20 steps of random controls ("random"), rates in arena-ticks per CPU second; both sides
warm up, then start their timed steps together. Needs two cores and `taskset`. Give the same tree twice for
the noise floor (new / old should be 1). Prints one JSON object.

    python benchmarks/engine_ab.py OLD_TREE NEW_TREE [--rounds 2] [--arenas 1024] [--teams 1,2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from rocketrl.infra.bench_report import machine_info

CHILD = r"""
import sys, time, torch
sys.path.insert(0, sys.argv[1])
from rocketrl.sim.warp.engine import WarpEngine
team, arenas = int(sys.argv[2]), int(sys.argv[3])
e = WarpEngine(arenas, team, team, tick_skip=8, device="cpu", num_workers=1)
c = torch.zeros(arenas, 2 * team, 8)
c[..., 0] = 1.0
c[..., 1] = torch.linspace(-0.5, 0.5, arenas * 2 * team).view(arenas, 2 * team)
c[..., 6] = 1.0
e.t["controls"].copy_(c)
for _ in range(40):
    e.step_raw()
print("ready", flush=True)
sys.stdin.readline()  # both sides start their timed steps together
t0 = time.process_time()
for _ in range(20):
    e.step_raw()
bench = arenas * 8 * 20 / (time.process_time() - t0)
g = torch.Generator().manual_seed(0)
spent = 0.0
for _ in range(20):
    r = torch.rand(arenas, 2 * team, 8, generator=g) * 2 - 1
    r[..., 5:] = (r[..., 5:] > 0.3).float()
    e.t["controls"].copy_(r)
    t0 = time.process_time()
    e.step_raw()
    spent += time.process_time() - t0
print(bench, arenas * 8 * 20 / spent)
"""


def paired_round(old: Path, new: Path, team: int, arenas: int, swap: bool) -> dict[str, tuple[float, float]]:
    """One round: both trees at once, old on core 0 and new on core 1 (swapped when `swap`)."""
    cores = ("1", "0") if swap else ("0", "1")
    procs = {
        name: subprocess.Popen(
            ["taskset", "-c", core, sys.executable, "-c", CHILD, str(tree), str(team), str(arenas)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for name, tree, core in (("old", old, cores[0]), ("new", new, cores[1]))
    }
    for proc in procs.values():  # each has warmed up (imports, kernel load, 40 steps)
        proc.stdout.readline()
    for proc in procs.values():
        proc.stdin.write("go\n")
        proc.stdin.flush()
    out = {}
    for name, proc in procs.items():
        text, _ = proc.communicate()
        if proc.returncode != 0 or not text.split():
            raise SystemExit(f"engine_ab: the {name} tree's run failed (exit {proc.returncode}); run its child by hand")
        bench, rand = (float(x) for x in text.split()[:2])
        out[name] = (bench, rand)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="source tree (repository root) of the engine before")
    parser.add_argument("new", type=Path, help="source tree of the engine after")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--arenas", type=int, default=1024)
    parser.add_argument("--teams", default="1,2", help="team sizes, comma separated")
    args = parser.parse_args()
    for tree in (args.old, args.new):
        if not (tree / "rocketrl" / "sim" / "warp" / "engine.py").is_file():
            raise SystemExit(f"engine_ab: {tree} is not a rocketrl source tree (no rocketrl/sim/warp/engine.py)")
    report: dict = {"old": str(args.old), "new": str(args.new), "arenas": args.arenas, "rows": []}
    for team in (int(t) for t in args.teams.split(",")):
        rounds = [paired_round(args.old, args.new, team, args.arenas, swap=r % 2 == 1) for r in range(args.rounds)]
        row: dict = {"team_size": team, "rounds": rounds}
        for k, measure in enumerate(("bench_game", "random")):
            ratios = [r["new"][k] / r["old"][k] for r in rounds]
            row[f"{measure}_new_over_old"] = ratios
            row[f"{measure}_new_over_old_median"] = statistics.median(ratios)
        report["rows"].append(row)
    report["machine"] = machine_info()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
