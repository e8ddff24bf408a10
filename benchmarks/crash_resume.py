"""Crash sweep: a small training run killed with SIGKILL at random moments, resumed with `--resume latest`
after each kill, as a user on a preemptible machine (or one hit by the out-of-memory killer) would.

Each cycle starts `rocketrl train` (the first fresh, the others with `--resume latest`), waits until it trains
(its first progress line), lets it run for a random 0 to `--max-seconds` seconds, notes the last agent-step it
printed and the processes below it, and kills it with SIGKILL: the trainer alone, as the kernel would, never
its process group. (A run killed before its first checkpoint starts afresh, as a user's restart script would.)
Then it checks what the kill left:

- stray processes: any process that was below the trainer and still runs 2 seconds after the kill;
- temporary files: half-written files (`.*.tmp`) in the run folder right after the kill (the next start
  removes them) and after the last, clean run;
- checkpoints that fail to load: every checkpoint in the folder is loaded in full after each kill;
- step counters that went back: the newest checkpoint's step must never fall, and each resumed run must
  start from that step;
- steps lost per kill: the last step the killed run printed minus the newest checkpoint's step (the work a
  resume repeats; the run prints once per update, so this is a floor).

A last cycle resumes and trains a short while to the end of `--timesteps`, exiting cleanly. Prints one JSON
object; "ok" is true when every resume worked and nothing above went wrong. `--kills 3` runs in the test
suite (tests/test_crash_resume.py).

    python benchmarks/crash_resume.py [--kills 20] [--max-seconds 20] [--arenas 4] [--workers 2]
    [--checkpoint-interval 5000] [--seed 0] [--after-new-checkpoint] [--out docs/crash_resume.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rocketrl.infra.bench_report import kill_group, machine_info
from rocketrl.infra.checkpoint import load_checkpoint
from rocketrl.infra.proctree import descendants, dies_with_this_process, has_proc, running

PROGRESS = re.compile(r"([\d,]+)/[\d,]+ \(")
RESUMED = re.compile(r"resumed from \S+ at step ([\d,]+)")
STEP_FILE = re.compile(r"step_(\d+)\.safetensors$")


def train_command(args: argparse.Namespace, logdir: Path, timesteps: int, resume: bool) -> list[str]:
    """The `rocketrl train` command of one cycle: a small 1v1 run with RocketSim worker processes."""
    command = [
        sys.executable, "-m", "rocketrl.cli", "train", "--logdir", str(logdir), "--name", "crash", "--ascii",
        "--device", "cpu", "--timesteps", str(timesteps), "--seed", str(args.seed),
        "--env.num-arenas", str(args.arenas), "--env.stepping", "processes", "--env.num-workers", str(args.workers),
        "--ppo.rollout-steps", "32", "--model.actor-hidden", "64,64", "--model.critic-hidden", "64,64",
        "--run.checkpoint-interval", str(args.checkpoint_interval),
    ]  # fmt: skip
    return [*command, "--resume", "latest"] if resume else command


def last_progress(text: str) -> int | None:
    """The agent-step of the last progress line in a training log."""
    steps = PROGRESS.findall(text)
    return int(steps[-1].replace(",", "")) if steps else None


def checkpoint_steps(folder: Path) -> list[int]:
    """Steps of the checkpoints in a run's checkpoint folder, sorted."""
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := STEP_FILE.search(p.name)))


def temporary_files(run: Path) -> list[str]:
    """Half-written files (atomic writes' `.<name>.<pid>.<token>.tmp`) anywhere in the run folder."""
    return sorted(str(p.relative_to(run)) for p in run.rglob(".*.tmp")) if run.is_dir() else []


def unloadable(folder: Path) -> list[str]:
    """Checkpoints that fail to load in full, with the error."""
    failed = []
    for step in checkpoint_steps(folder):
        path = folder / f"step_{step:012d}.safetensors"
        try:
            load_checkpoint(path)
        except Exception as error:  # noqa: BLE001 - any failure to load is what this counts
            failed.append(f"{path.name}: {type(error).__name__}: {error}")
    return failed


def start(command: list[str], log: Path) -> subprocess.Popen:
    with log.open("w") as out:  # a file, not a pipe: a surviving worker must not hold a pipe open
        return subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True, preexec_fn=dies_with_this_process(),
        )  # fmt: skip


def wait_for_training(proc: subprocess.Popen, log: Path, timeout: float) -> bool:
    """Wait for the run's first progress line; False if it exited or timed out first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if last_progress(log.read_text(errors="replace")) is not None:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.2)
    return False


def wait_for_checkpoint(proc: subprocess.Popen, folder: Path, newer_than: int, timeout: float) -> bool:
    """Wait until the run has written a checkpoint past step `newer_than`; False if it exited or timed out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        steps = checkpoint_steps(folder)
        if steps and steps[-1] > newer_than:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.1)
    return False


def sweep(args: argparse.Namespace, logdir: Path) -> dict:
    """Run the kills and the final clean resume; returns the report."""
    rng = random.Random(args.seed)
    run, folder = logdir / "crash", logdir / "crash" / "checkpoints"
    big = 10**12  # the killed runs never finish
    kills: list[dict] = []
    newest_before = 0
    for cycle in range(args.kills):
        log = logdir / f"cycle_{cycle:03d}.log"
        resume = bool(checkpoint_steps(folder))  # a run killed before its first checkpoint starts afresh
        proc = start(train_command(args, logdir, big, resume=resume), log)
        row: dict = {"cycle": cycle, "resume": resume}
        try:
            row["resumed"] = wait_for_training(proc, log, args.start_timeout)
            text = log.read_text(errors="replace")
            if resume:
                resumed_at = RESUMED.search(text)
                row["resumed_at"] = int(resumed_at.group(1).replace(",", "")) if resumed_at else None
                row["resumed"] = row["resumed"] and row["resumed_at"] == newest_before
            if not row["resumed"]:
                row["log_tail"] = text[-1500:]
                kills.append(row)
                break
            if args.after_new_checkpoint:
                row["waited_for_checkpoint"] = wait_for_checkpoint(proc, folder, newest_before, args.start_timeout)
            row["ran_seconds"] = round(rng.uniform(0.0, args.max_seconds), 2)
            time.sleep(row["ran_seconds"])
            below = descendants(proc.pid)
            row["last_printed_step"] = last_progress(log.read_text(errors="replace"))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            deadline = time.monotonic() + 2.0
            while any(running(p) for p in below) and time.monotonic() < deadline:
                time.sleep(0.05)
            row["processes_below"] = len(below)
            row["stray_processes"] = sum(running(p) for p in below)
        finally:
            kill_group(proc)
        row["temporary_files"] = temporary_files(run)
        row["unloadable_checkpoints"] = unloadable(folder)
        steps = checkpoint_steps(folder)
        newest = steps[-1] if steps else 0
        row["newest_checkpoint"] = newest
        row["counter_went_back"] = newest < newest_before
        row["steps_lost"] = max((row["last_printed_step"] or 0) - newest, 0)
        newest_before = max(newest, newest_before)
        kills.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "log_tail"}), file=sys.stderr, flush=True)

    final: dict = {"resumed": False}
    if all(row["resumed"] for row in kills):
        log = logdir / "final.log"
        target = newest_before + 2 * args.checkpoint_interval
        resume = bool(checkpoint_steps(folder))
        proc = start(train_command(args, logdir, target, resume=resume), log)
        try:
            code = proc.wait(timeout=args.start_timeout + 600)
        finally:
            kill_group(proc)
        text = log.read_text(errors="replace")
        resumed_at = RESUMED.search(text)
        steps = checkpoint_steps(folder)
        final = {
            "resumed": code == 0 and (resumed_at is not None or not resume),
            "resume": resume,
            "exit_code": code,
            "resumed_at": int(resumed_at.group(1).replace(",", "")) if resumed_at else None,
            "finished_at": steps[-1] if steps else None,
            "temporary_files": temporary_files(run),
            "unloadable_checkpoints": unloadable(folder),
        }
        if not final["resumed"]:
            final["log_tail"] = text[-1500:]
    lost = [row["steps_lost"] for row in kills if "steps_lost" in row]
    report = {
        "benchmark": "crash_resume",
        "kills": len([row for row in kills if "stray_processes" in row]),
        "kills_asked": args.kills,
        "resumes_worked": sum(bool(row["resumed"]) for row in kills if row["resume"])
        + int(bool(final.get("resume")) and final["resumed"]),
        "resumes_tried": sum(row["resume"] for row in kills) + int(bool(final.get("resume"))),
        "starts_failed": sum(not row["resumed"] for row in kills),
        "unloadable_checkpoints": sum(len(row.get("unloadable_checkpoints", [])) for row in kills)
        + len(final.get("unloadable_checkpoints", [])),
        "temporary_files_after_kills": sum(len(row.get("temporary_files", [])) for row in kills),
        "temporary_files_left": len(final.get("temporary_files", [])),
        "counters_went_back": sum(bool(row.get("counter_went_back")) for row in kills),
        "stray_processes": sum(row.get("stray_processes", 0) for row in kills),
        "steps_lost_per_kill": {
            "mean": round(sum(lost) / len(lost)) if lost else None,
            "max": max(lost) if lost else None,
            "checkpoint_interval": args.checkpoint_interval,
        },
        "settings": {
            "arenas": args.arenas,
            "workers": args.workers,
            "max_seconds": args.max_seconds,
            "seed": args.seed,
        },  # fmt: skip
        "cycles": kills,
        "final": final,
        "machine": machine_info(),
    }
    report["ok"] = (
        report["kills"] == args.kills
        and report["resumes_worked"] == report["resumes_tried"]
        and not report["starts_failed"]
        and final["resumed"]
        and not report["unloadable_checkpoints"]
        and not report["temporary_files_left"]
        and not report["counters_went_back"]
        and not report["stray_processes"]
        and all(row.get("waited_for_checkpoint", True) for row in kills)
    )
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs, each followed by a resume (default 20)")
    parser.add_argument("--max-seconds", type=float, default=20.0, help="a run trains 0 to this long (default 20)")
    parser.add_argument("--arenas", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2, help="RocketSim worker processes (default 2)")
    parser.add_argument("--checkpoint-interval", type=int, default=5_000, help="agent-steps (default 5,000)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the kill moments and the runs")
    parser.add_argument(
        "--after-new-checkpoint", action="store_true",
        help="start each cycle's random wait only once the run has written a new checkpoint, so every kill "
        "but a slow machine's still tests a resume (the test suite's setting)",
    )  # fmt: skip
    parser.add_argument("--start-timeout", type=float, default=240.0, help="seconds a run may take to start")
    parser.add_argument("--logdir", default=None, help="keep the run and its logs here (default: a temporary one)")
    parser.add_argument("--out", default=None, help="also write the JSON report here")
    args = parser.parse_args(argv)
    if args.kills < 1:
        parser.error("--kills must be at least 1")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if not has_proc():
        raise SystemExit("crash_resume reads process trees from /proc: it runs on Linux")
    with tempfile.TemporaryDirectory(prefix="rocketrl-crash-") as tmp:
        logdir = Path(args.logdir) if args.logdir else Path(tmp)
        logdir.mkdir(parents=True, exist_ok=True)
        report = sweep(args, logdir)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return report


if __name__ == "__main__":
    sys.exit(0 if main()["ok"] else 1)
