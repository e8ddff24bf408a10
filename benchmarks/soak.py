"""Soak: a long training run, league and evaluation on, watched for memory that grows and descriptors that leak.

Starts `rocketrl train` with the vs_rule preset (128 arenas; RulePolicy, self-play and past-snapshot opponents;
league evaluations every `--eval-interval` agent-steps with replays of the evaluation games; snapshots every
`--snapshot-interval`, so the opponent pool fills and then turns over; RocketSim worker processes) for
`--minutes` (default 30), and every `--every` seconds (default 10) samples the resident memory (VmRSS) and the
open file descriptors of the trainer and of every process below it. At the end it stops the run with SIGTERM
(a clean stop with a checkpoint) and reports:

- per process role (trainer, each long-lived worker, the whole tree): resident MiB at the end of the warm-up
  and at the end, the growth between them in percent, and the largest value;
- open descriptors of the trainer and the workers at the end of the warm-up, at the end, and the largest;
- "met": after the warm-up the tree's memory and the trainer's each grew by less than 5%, and no process's
  descriptors grew.

The warm-up lasts `--warmup-minutes` (default 5) and, on a machine slow enough to need longer, until the run
has passed the agent-step where everything has been allocated once: the snapshot pool full (pool size x
snapshot interval) and one evaluation and checkpoint after that. Its end is read from the run's progress
lines, so the figures do not depend on the machine's speed.

The value at the end of the warm-up is the median of the samples over the `--window-minutes` (default 5) after
it, the value at the end the median over the last `--window-minutes` (each window a quarter of the span after the
warm-up when that is shorter). A training process's memory swings by several percent from one sample to the next
(league games, evaluations, snapshot loads: 697 to 772 MiB within one 56-minute run), so two single samples can
differ by more than the 5% target without anything growing; the window medians and the least-squares trend after
the warm-up ("trend_percent_per_hour", reported beside them) tell a leak from a swing. The series themselves go
into the JSON too, with the warm-up's end ("warmup_seconds", the sample it ended at), so any summary can be
recomputed (`--reread`).

With `--preset NAME` it soaks a packaged preset as users run it instead (`rocketrl train --preset NAME`, its own
arenas, engine, league and checkpoints; only the step budget is lifted so that it runs for `--minutes`). Its
warm-up then ends once the run has passed its first opponent snapshot, its first checkpoint and its first league
evaluation (where it has them).

    python benchmarks/soak.py [--minutes 30] [--warmup-minutes 5] [--every 10] [--out docs/soak.json]
    python benchmarks/soak.py --preset league_1v1 --minutes 95 --out docs/soak_league_1v1.json \
        [--init-from gauntlet_v6] [--logdir runs/soak]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rocketrl.infra.bench_report import emit_report, machine_info
from rocketrl.infra.proctree import descendants, dies_with_this_process, has_proc, open_descriptors, resident_bytes

PRESET = Path(__file__).resolve().parent.parent / "configs" / "presets" / "vs_rule.yaml"
MIB = 1024 * 1024
POOL_SIZE = 5
PROGRESS = re.compile(r"([\d,]+)/[\d,]+ \(")


def last_step(log: Path) -> int | None:
    """The agent-step of the run's last progress line."""
    steps = PROGRESS.findall(log.read_text(errors="replace"))
    return int(steps[-1].replace(",", "")) if steps else None


def warmup_steps(args: argparse.Namespace) -> int:
    """Agent-steps after which every allocation a run makes has happened once: pool full, then an evaluation
    (with `--preset`: its first snapshot, checkpoint and evaluation)."""
    if args.preset:
        from rocketrl.config import load_config, preset_config_path

        cfg = load_config(preset_config_path(args.preset))
        return max(cfg.league.snapshot_interval, cfg.run.checkpoint_interval, cfg.league.eval_interval)
    return POOL_SIZE * args.snapshot_interval + args.eval_interval


def train_command(args: argparse.Namespace, logdir: Path) -> list[str]:
    """The `rocketrl train` command line: the preset as users run it, or vs_rule with the soak's own settings."""
    source = ["--preset", args.preset] if args.preset else ["--config", str(PRESET)]
    command = [
        sys.executable, "-m", "rocketrl.cli", "train", *source, "--logdir", str(logdir),
        "--name", "soak", "--ascii", "--device", "cpu", "--timesteps", str(10**12), "--seed", str(args.seed),
    ]  # fmt: skip
    if args.preset:
        return command + (["--run.init-from", args.init_from] if args.init_from else [])
    return command + [
        "--env.num-arenas", str(args.arenas), "--env.stepping", "processes",
        "--league.eval-interval", str(args.eval_interval), "--league.eval-games", "8",
        "--league.eval-replays", "true", "--league.snapshot-interval", str(args.snapshot_interval),
        "--league.pool-size", str(POOL_SIZE), "--run.checkpoint-interval", str(args.eval_interval),
    ]  # fmt: skip


def sample(trainer: int) -> dict:
    """One sample: {pid: (rss bytes, open fds)} for the trainer and every process below it."""
    rows = {}
    for pid in [trainer, *sorted(descendants(trainer))]:
        rss, fds = resident_bytes(pid), open_descriptors(pid)
        if rss is not None:
            rows[pid] = (rss, fds)
    return rows


def window_median(series: list[tuple[float, float]], first: float, last: float) -> float | None:
    """Median of the values sampled from `first` to `last` seconds into the run."""
    inside = [v for t, v in series if first <= t <= last]
    return statistics.median(inside) if inside else None


def trend_percent_per_hour(series: list[tuple[float, float]], warmup: float) -> float | None:
    """Least-squares slope of the values after the warm-up, in percent of their median per hour of run."""
    after = [(t, v) for t, v in series if t >= warmup]
    if len(after) < 3 or after[-1][0] - after[0][0] <= 0:
        return None
    mean_t = statistics.fmean(t for t, _ in after)
    mean_v = statistics.fmean(v for _, v in after)
    spread = sum((t - mean_t) ** 2 for t, _ in after)
    slope = sum((t - mean_t) * (v - mean_v) for t, v in after) / spread  # per second
    middle = statistics.median(v for _, v in after)
    return round(100.0 * slope * 3600.0 / middle, 2) if middle else None


def summarize(series: list[tuple[float, float]], warmup: float, end: float, window: float) -> dict:
    """The value at the end of the warm-up and at the end, each the median over a window of `window` seconds (a
    quarter of the span after the warm-up when that is shorter), their growth, the largest value and the trend."""
    width = min(window, max(0.0, end - warmup) / 4.0)
    start, last = window_median(series, warmup, warmup + width), window_median(series, max(warmup, end - width), end)
    after = [v for t, v in series if t >= warmup]
    return {
        "at_warmup": start,
        "at_end": last,
        "growth_percent": None if not start or last is None else round(100.0 * (last - start) / start, 2),
        "max_after_warmup": max(after) if after else None,
        "trend_percent_per_hour": trend_percent_per_hour(series, warmup),
        "window_s": round(width, 1),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--warmup-minutes", type=float, default=5.0)
    parser.add_argument("--every", type=float, default=10.0, help="seconds between samples (default 10)")
    parser.add_argument(
        "--window-minutes", type=float, default=5.0,
        help="the values at the end of the warm-up and at the end are medians over this many minutes (default 5)",
    )  # fmt: skip
    parser.add_argument(
        "--preset", default=None,
        help="soak this packaged preset with its own settings (e.g. league_1v1); --arenas, --eval-interval and "
        "--snapshot-interval then do not apply",
    )  # fmt: skip
    parser.add_argument(
        "--init-from", default=None,
        help="with --preset: start from these weights (a run folder, checkpoint or packaged name such as "
        "gauntlet_v6) instead of the preset's run.init_from",
    )  # fmt: skip
    parser.add_argument("--arenas", type=int, default=128)
    parser.add_argument("--eval-interval", type=int, default=250_000, help="agent-steps between evaluations")
    parser.add_argument(
        "--snapshot-interval", type=int, default=100_000,
        help=f"agent-steps between snapshots; the pool holds {POOL_SIZE}, so it fills early and then turns over",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logdir", default=None, help="keep the run here (default: a temporary folder)")
    parser.add_argument("--out", default=None, help="also write the JSON report here")
    parser.add_argument(
        "--reread", default=None, metavar="REPORT",
        help="no run: recompute a saved report's figures from its series with --window-minutes (its worker "
        "processes' figures are not in the series and are left out)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.init_from and not args.preset:
        parser.error("--init-from needs --preset NAME (the vs_rule soak trains from scratch)")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.reread:
        report = reread(json.loads(Path(args.reread).read_text()), args.window_minutes)
        emit_report(report, args.out)
        return report
    if not has_proc():
        raise SystemExit("soak reads process memory from /proc: it runs on Linux")
    with tempfile.TemporaryDirectory(prefix="rocketrl-soak-") as tmp:
        logdir = Path(args.logdir) if args.logdir else Path(tmp)
        logdir.mkdir(parents=True, exist_ok=True)
        log = logdir / "soak.log"
        with log.open("w") as out:
            proc = subprocess.Popen(
                train_command(args, logdir), stdout=out, stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
                preexec_fn=dies_with_this_process(),
            )  # fmt: skip
        samples: list[tuple[float, dict]] = []
        steps: list[tuple[float, int | None]] = []
        began = time.monotonic()
        try:
            while time.monotonic() - began < 60.0 * args.minutes and proc.poll() is None:
                now = time.monotonic() - began
                samples.append((now, sample(proc.pid)))
                steps.append((now, last_step(log)))
                time.sleep(args.every)
            crashed = proc.poll() is not None
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=300)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        text = log.read_text(errors="replace")
    report = analyse(samples, proc.pid, args, warmup_end(steps, args))
    report.update(
        {
            "run_exit_code": code,
            "run_ended_early": crashed,
            "log_tail": text[-600:] if crashed or code != 0 else None,
            "last_progress": next((line for line in reversed(text.splitlines()) if "SPS" in line), None),
            "machine": machine_info(),
        }
    )
    report["met"] = bool(report["met"]) and not crashed and code == 0
    emit_report(report, args.out)
    return report


def recorded_warmup(report: dict) -> float:
    """Seconds into the run when a saved report's warm-up ended (infinity when it never did): `warmup_seconds`, or in
    older reports the first sample at `warmup_minutes`, which was rounded to 0.01 minute (0.3 s either way)."""
    if report.get("warmup_seconds") is not None:
        return float(report["warmup_seconds"])
    if report.get("warmup_minutes") is None:
        return float("inf")
    floor = 60.0 * report["warmup_minutes"] - 0.31
    return next((t for t in report["series"]["seconds"] if t >= floor), float("inf"))


def reread(report: dict, window_minutes: float) -> dict:
    """`report` (a saved soak report) with its tree, trainer and process figures recomputed from its series by
    today's summary; "reread" names the window and what could not be recomputed."""
    series, window = report["series"], 60.0 * window_minutes
    seconds = series["seconds"]
    warmup = recorded_warmup(report)
    end = seconds[-1] if seconds else 0.0

    def summary(key: str) -> dict:
        return summarize([(t, v) for t, v in zip(seconds, series[key]) if v is not None], warmup, end, window)

    tree, trainer, fds = summary("tree_rss_mib"), summary("trainer_rss_mib"), summary("trainer_fds")
    fd_growth = None if fds["at_end"] is None or fds["at_warmup"] is None else fds["at_end"] - fds["at_warmup"]
    met = (
        fd_growth is not None
        and growth_met(tree["growth_percent"], trainer["growth_percent"], [fd_growth], report.get("targets", TARGETS))
        and report.get("run_exit_code") == 0
        and not report.get("run_ended_early")
    )
    return {
        **report,
        "tree_rss_mib": tree,
        "processes": summary("processes"),
        "roles": {"trainer": {"rss_mib": trainer, "open_fds": fds}},
        "met": met,
        "reread": {
            "window_minutes": window_minutes,
            "before": {"tree_growth_percent": report["tree_rss_mib"]["growth_percent"], "met": report["met"]},
            "left_out": sorted(name for name in report.get("roles", {}) if name != "trainer"),
        },
    }


TARGETS = {"tree_growth_percent_below": 5.0, "trainer_growth_percent_below": 5.0, "fd_growth": 0}


def growth_met(tree: float | None, trainer: float | None, fd_growths: list[float], targets: dict = TARGETS) -> bool:
    """The pass rule: the tree's and the trainer's memory growth after the warm-up (percent) each below its target,
    and no process's open descriptors grown by more than `targets["fd_growth"]`."""
    return (
        tree is not None
        and tree < targets["tree_growth_percent_below"]
        and trainer is not None
        and trainer < targets["trainer_growth_percent_below"]
        and all(g <= targets["fd_growth"] for g in fd_growths)
    )


def warmup_end(steps: list[tuple[float, int | None]], args: argparse.Namespace) -> float:
    """Seconds into the run when the warm-up ends: `--warmup-minutes`, or later when the run had not yet passed
    `warmup_steps` by then (infinity when it never did)."""
    floor, needed = 60.0 * args.warmup_minutes, warmup_steps(args)
    return next((t for t, step in steps if t >= floor and step is not None and step >= needed), float("inf"))


def analyse(samples: list[tuple[float, dict]], trainer: int, args: argparse.Namespace, warmup: float) -> dict:
    """Growth after the warm-up (ending `warmup` seconds in) per role: trainer, each process alive in every sample
    after it, the tree."""
    window = 60.0 * args.window_minutes
    end = samples[-1][0] if samples else 0.0
    late = [rows for t, rows in samples if t >= warmup]
    steady = set.intersection(*(set(rows) for rows in late)) - {trainer} if late else set()
    roles: dict[str, dict] = {}
    for name, pids in [("trainer", [trainer]), *[(f"worker_{p}", [p]) for p in sorted(steady)]]:
        rss = [(t, sum(rows[p][0] for p in pids if p in rows) / MIB) for t, rows in samples if pids[0] in rows]
        fds = [(t, rows[pids[0]][1]) for t, rows in samples if pids[0] in rows and rows[pids[0]][1] is not None]
        roles[name] = {"rss_mib": summarize(rss, warmup, end, window), "open_fds": summarize(fds, warmup, end, window)}
    tree = [(t, sum(r for r, _ in rows.values()) / MIB) for t, rows in samples]
    count = [(t, float(len(rows))) for t, rows in samples]
    growth = summarize(tree, warmup, end, window)["growth_percent"]
    trainer_growth = roles["trainer"]["rss_mib"]["growth_percent"]
    fd_growth = [
        role["open_fds"]["at_end"] - role["open_fds"]["at_warmup"]
        for role in roles.values()
        if role["open_fds"]["at_end"] is not None and role["open_fds"]["at_warmup"] is not None
    ]
    return {
        "benchmark": "soak",
        "minutes": round(end / 60.0, 2),
        "warmup_minutes": round(warmup / 60.0, 2) if late else None,
        "warmup_seconds": round(warmup, 1) if late else None,
        "warmup_steps": warmup_steps(args),
        "samples": len(samples),
        "settings": (
            {
                "preset": args.preset,
                "init_from": args.init_from,
                "every": args.every,
                "seed": args.seed,
                "window_minutes": args.window_minutes,
            }
            if args.preset
            else {
                k: getattr(args, k)
                for k in ("arenas", "eval_interval", "snapshot_interval", "every", "window_minutes", "seed")
            }
        ),
        "tree_rss_mib": summarize(tree, warmup, end, window),
        "processes": summarize(count, warmup, end, window),
        "roles": roles,
        "targets": dict(TARGETS),
        "met": growth_met(growth, trainer_growth, fd_growth) and bool(late),
        "series": {
            "seconds": [round(t, 1) for t, _ in samples],
            "tree_rss_mib": [round(v, 1) for _, v in tree],
            "trainer_rss_mib": [round(rows[trainer][0] / MIB, 1) if trainer in rows else None for _, rows in samples],
            "trainer_fds": [rows[trainer][1] if trainer in rows else None for _, rows in samples],
            "processes": [len(rows) for _, rows in samples],
        },
    }


if __name__ == "__main__":
    sys.exit(0 if main()["met"] else 1)
