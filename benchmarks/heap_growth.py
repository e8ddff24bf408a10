"""Heap growth: where a long training run's slowly rising memory goes.

Every soak on file shows the trainer's memory rising by 1-5% an hour after the warm-up, all of it anonymous memory
inside regions already mapped (docs/results/reliability.md, "How growth is read"). This benchmark trains a preset in
this process through `rocketrl train`'s own `train()` (the same start-up, checks and TrainLogger) and, every
`--every` seconds, reads the C allocator's own account (glibc `mallinfo2`) beside the resident memory:

- in use: bytes the program holds (`uordblks` + `hblkhd`, the heap's and the large blocks' own mappings);
- free in the heap: bytes freed but still held by the allocator (`fordblks`); fragmentation shows as this rising
  while "in use" stays flat;
- traced: with `--trace`, what Python objects hold (`tracemalloc`), and at the end the 15 source lines whose
  allocations grew most between the warm-up's end and the end; torch's tensors are not traced (they are in use).

At the end it calls `malloc_trim(0)` and samples once more: what the allocator then gives back was free, not held.
With `--trim` it trims after every sample, so two runs, with and without, show what trimming would do to the trend.
Each figure is summarised as soak.py does (medians over `--window-minutes` windows at the warm-up's end and at the
end, their growth in percent, the least-squares trend after the warm-up).

    python benchmarks/heap_growth.py --preset league_1v1_next --init-from gauntlet_v20 --minutes 60 \\
        [--trace] [--trim] [--seed 0] [--logdir runs/gen28] [--out docs/heap_growth.json]

The run's TrainLogger, TensorBoard included, is measured with it; the sampler sees every update on its way there.
With `--logdir` the run is kept (checkpoints and TensorBoard in LOGDIR/heap), so a league generation's run can be
this measurement.

Linux with glibc only (mallinfo2, glibc 2.33 or newer); elsewhere it says so and exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import os
import tempfile
import time
import tracemalloc

from rocketrl.config import load_config, preset_config_path
from rocketrl.infra.bench_report import emit_report, machine_info, sibling_module
from rocketrl.infra.proctree import resident_bytes
from rocketrl.training import train

MIB = 1024 * 1024
FIELDS = ("rss_mib", "in_use_mib", "heap_free_mib", "traced_mib")


class MallInfo2(ctypes.Structure):
    """glibc's struct mallinfo2: ten size_t counters (bytes or counts)."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )  # fmt: skip
    ]


def load_libc() -> ctypes.CDLL:
    """The C library, with mallinfo2 and malloc_trim typed; SystemExit(2) naming what is missing otherwise."""
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    if libc is None or not hasattr(libc, "mallinfo2") or not hasattr(libc, "malloc_trim"):
        print("heap_growth reads glibc's allocator (mallinfo2, glibc 2.33 or newer): not available here", flush=True)
        raise SystemExit(2)
    libc.mallinfo2.restype = MallInfo2
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    return libc


def sample(libc: ctypes.CDLL, tracing: bool) -> dict[str, float | None]:
    """Resident memory and the allocator's account of this process now, MiB."""
    info = libc.mallinfo2()
    return {
        "rss_mib": (resident_bytes(os.getpid()) or 0) / MIB,
        "in_use_mib": (info.uordblks + info.hblkhd) / MIB,
        "heap_free_mib": info.fordblks / MIB,
        "traced_mib": tracemalloc.get_traced_memory()[0] / MIB if tracing else None,
    }


class Sampler:
    """A trainer logger (`Trainer.learn(logger)` calls log_update after every update) that samples on a clock, after
    handing the update to `inner` (the TrainLogger `rocketrl train` uses, so its TensorBoard writer is measured too)."""

    def __init__(
        self, libc: ctypes.CDLL, every: float, warmup: float, tracing: bool, trim: bool = False, inner: object = None
    ) -> None:
        self.libc, self.every, self.warmup, self.tracing, self.trim = libc, every, warmup, tracing, trim
        self.inner = inner
        self.began = time.monotonic()
        self.rows: list[tuple[float, int, dict]] = []
        self.step = 0
        self.snapshot_at_warmup: tracemalloc.Snapshot | None = None

    def log_update(self, report: object) -> None:
        if self.inner is not None:
            self.inner.log_update(report)  # type: ignore[attr-defined]
        self.step = int(getattr(report, "step", self.step))
        if not self.rows or time.monotonic() - self.began - self.rows[-1][0] >= self.every:
            self.take()

    def take(self) -> None:
        """One sample now (and, tracing, the snapshot at the warm-up's end once it has passed)."""
        now = time.monotonic() - self.began
        self.rows.append((now, self.step, sample(self.libc, self.tracing)))
        if self.tracing and self.snapshot_at_warmup is None and now >= self.warmup:
            self.snapshot_at_warmup = tracemalloc.take_snapshot()
        if self.trim:
            self.libc.malloc_trim(0)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="league_1v1_next")
    parser.add_argument("--init-from", default=None, help="a bot to start from instead of the preset's run.init_from")
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--warmup-minutes", type=float, default=7.0)
    parser.add_argument("--window-minutes", type=float, default=5.0)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--trace", action="store_true", help="trace Python allocations (slower training)")
    parser.add_argument(
        "--trim", action="store_true", help="malloc_trim(0) after every sample: the run as if the trainer trimmed"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logdir", default=None, help="keep the run in LOGDIR/heap (default: a temporary folder)")
    parser.add_argument("--out", default=None)
    return parser.parse_args(argv)


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def steps_per_second(rows: list[tuple[float, int, dict]], warmup: float) -> float | None:
    """Agent-steps a second from the first sample at or after the warm-up's end to the last sample."""
    after = [(t, step) for t, step, _ in rows if t >= warmup]
    if len(after) < 2 or after[-1][0] <= after[0][0]:
        return None
    return round((after[-1][1] - after[0][1]) / (after[-1][0] - after[0][0]), 1)


def top_growth(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, count: int = 15) -> list[dict]:
    """The `count` source lines whose live Python allocations grew most between two snapshots (tracemalloc's own
    and the import machinery's left out)."""
    own = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap*>")]
    stats = after.filter_traces(own).compare_to(before.filter_traces(own), "lineno")
    grown = sorted((s for s in stats if s.size_diff > 0), key=lambda s: s.size_diff, reverse=True)[:count]
    return [
        {
            "where": f"{s.traceback[0].filename}:{s.traceback[0].lineno}",
            "grew_kib": round(s.size_diff / 1024, 1),
            "blocks_grew": s.count_diff,
        }  # fmt: skip
        for s in grown
    ]


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    libc = load_libc()
    summarize = sibling_module(__file__, "soak").summarize
    if args.trace:
        tracemalloc.start(1)
    kept = contextlib.nullcontext(args.logdir) if args.logdir else None
    with kept or tempfile.TemporaryDirectory(prefix="rocketrl-heap-") as logdir:
        os.makedirs(logdir, exist_ok=True)
        overrides = ["--run.logdir", logdir, "--run.name", "heap", "--run.device", "cpu", "--run.ascii", "true",
                     "--run.timesteps", str(10**12), "--run.max-minutes", str(args.minutes),
                     "--run.seed", str(args.seed)]  # fmt: skip
        if args.init_from:
            overrides += ["--run.init-from", args.init_from]
        samplers: list[Sampler] = []
        ends: dict[str, object] = {}

        def sampling(logger: object) -> Sampler:
            samplers.append(Sampler(libc, args.every, 60.0 * args.warmup_minutes, args.trace, args.trim, inner=logger))
            return samplers[0]

        def at_end(_trainer: object) -> None:  # everything the run built still alive
            samplers[0].take()
            ends["snapshot"] = tracemalloc.take_snapshot() if args.trace else None
            ends["before_trim"] = sample(libc, args.trace)
            libc.malloc_trim(0)
            ends["after_trim"] = sample(libc, args.trace)

        train(load_config(preset_config_path(args.preset), overrides), wrap_logger=sampling, at_end=at_end)
    sampler, end_snapshot = samplers[0], ends["snapshot"]
    before_trim, after_trim = ends["before_trim"], ends["after_trim"]
    warmup = next((t for t, _, _ in sampler.rows if t >= sampler.warmup), float("inf"))
    end, window = sampler.rows[-1][0], 60.0 * args.window_minutes
    summaries = {
        name: summarize([(t, row[name]) for t, _, row in sampler.rows if row[name] is not None], warmup, end, window)
        for name in FIELDS
        if any(row[name] is not None for _, _, row in sampler.rows)
    }
    report = {
        "benchmark": "heap_growth",
        "settings": vars(args),
        "minutes": round(end / 60.0, 2),
        "steps": sampler.step,
        "agent_steps_per_second_after_warmup": steps_per_second(sampler.rows, warmup),
        "warmup_seconds": round(warmup, 1) if warmup != float("inf") else None,
        "growth": summaries,
        "malloc_trim": {
            "rss_before_mib": round(before_trim["rss_mib"], 1),
            "rss_after_mib": round(after_trim["rss_mib"], 1),
            "returned_mib": round(before_trim["rss_mib"] - after_trim["rss_mib"], 1),
            "heap_free_before_mib": round(before_trim["heap_free_mib"], 1),
        },
        "top_python_growth": (
            top_growth(sampler.snapshot_at_warmup, end_snapshot)
            if end_snapshot is not None and sampler.snapshot_at_warmup is not None
            else None
        ),
        "series": {
            "seconds": [round(t, 1) for t, _, _ in sampler.rows],
            "steps": [step for _, step, _ in sampler.rows],
            **{name: [rounded(row[name]) for _, _, row in sampler.rows] for name in FIELDS},
        },
        "machine": machine_info(),
    }
    emit_report(report, args.out)
    return report


if __name__ == "__main__":
    main()  # it measures and does not judge: exit 0 with its report, 2 where glibc's mallinfo2 is missing
