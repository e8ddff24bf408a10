"""Does a training run repeat? Two runs of one preset and seed, compared update by update at full precision:
the same source tree twice (is training deterministic here?), or two trees, e.g. a commit before an engine
change and after it, each a `git worktree` (does the change leave training the same bit for bit?).

A change that leaves a few hundred engine steps the same bit for bit can still change a rare path (a wheel ray
through an edge two triangles share, say); a training run of a few million agent-steps meets such paths, and
the update where two runs part names when. Each run trains `--minutes` minutes (a `run.max_minutes` stop, so
the schedules are the preset's own and both runs see the same ones); their TensorBoard scalars (losses,
rewards, returns, league figures: every scalar but wall times and speed) are compared over the updates both
reached. Runs go one after the other, each on every core. Prints one JSON object:

    python benchmarks/train_repeat.py [--tree OLD --tree NEW] [--preset vs_rule_imitate] [--seed 0] [--minutes 6]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rocketrl.infra.bench_report import machine_info
from rocketrl.infra.tb_scalars import read_scalars

ROOT = Path(__file__).resolve().parents[1]
UNTIMED = ("time/", "charts/SPS")
"""Scalar tags left out of the comparison: wall times and speed differ between any two runs."""


def train(tree: Path, preset: str, seed: int, minutes: float, logdir: Path, name: str) -> dict:
    """Train `preset` from source tree `tree` for `minutes` into logdir/name; the tree, its commit and the wall
    seconds."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    command = [
        sys.executable, "-m", "rocketrl.cli", "train", "--preset", preset, "--seed", str(seed),
        "--logdir", str(logdir), "--name", name, "--run.max-minutes", str(minutes), "--run.ascii", "true",
    ]  # fmt: skip
    started = time.perf_counter()
    log = logdir / f"{name}.log"
    with log.open("w") as out:
        done = subprocess.run(command, cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = log.read_text().splitlines()[-15:]
        raise SystemExit(f"training from {tree} failed (exit {done.returncode}):\n" + "\n".join(tail))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, text=True).stdout.strip()
    return {"tree": str(tree), "commit": commit or None, "wall_seconds": round(time.perf_counter() - started, 1)}


def scalars(run: Path) -> dict[str, dict[int, float]]:
    """{tag: {global step: value}} of a run's TensorBoard events, the untimed tags only."""
    return {
        tag: {event.step: event.value for event in series}
        for tag, series in read_scalars(run).items()
        if not tag.startswith(UNTIMED)
    }


def first_difference(a: dict[str, dict[int, float]], b: dict[str, dict[int, float]]) -> dict:
    """The updates both runs logged, and the first global step at which any shared tag differs (with the tags
    that differ there), or None."""
    tags = sorted(set(a) & set(b))
    steps = sorted(set(a.get("losses/policy", {})) & set(b.get("losses/policy", {})))
    for update, step in enumerate(steps, start=1):
        differ = [tag for tag in tags if step in a[tag] and step in b[tag] and a[tag][step] != b[tag][step]]
        if differ:
            return {"common_updates": len(steps), "common_steps": steps[-1], "parted_at_step": step,
                    "parted_at_update": update, "tags_that_differ": differ}  # fmt: skip
    return {"common_updates": len(steps), "common_steps": steps[-1] if steps else 0, "parted_at_step": None,
            "parted_at_update": None, "tags_that_differ": []}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=None, help="source tree of a run (twice: two trees; "
                        "default: this tree twice)")  # fmt: skip
    parser.add_argument("--preset", default="vs_rule_imitate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minutes", type=float, default=6.0, help="training minutes per run (default 6)")
    parser.add_argument("--out", default=None, help="also write the JSON report here")
    args = parser.parse_args()
    trees = [Path(t).resolve() for t in (args.tree or [str(ROOT)])]
    if len(trees) == 1:
        trees = trees * 2
    if len(trees) != 2:
        parser.error("--tree: give two source trees, or one (run twice), or none (this tree twice)")
    for tree in trees:
        if not (tree / "rocketrl" / "cli.py").is_file():
            parser.error(f"--tree {tree}: not a rocketrl source tree (no rocketrl/cli.py)")
    with tempfile.TemporaryDirectory(prefix="train_repeat-") as tmp:
        names = ("run0", "run1")
        runs = [train(tree, args.preset, args.seed, args.minutes, Path(tmp), name) for tree, name in zip(trees, names)]
        found = [scalars(Path(tmp) / name) for name in names]
        for run, values in zip(runs, found):
            run["updates"] = len(values.get("losses/policy", {}))
        report = {"benchmark": "train_repeat", "preset": args.preset, "seed": args.seed, "minutes": args.minutes,
                  "runs": runs, **first_difference(*found), "machine": machine_info()}  # fmt: skip
    report["same"] = report["parted_at_step"] is None
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
