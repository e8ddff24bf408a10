"""`rocketrl bench`: run the scripts in benchmarks/ and gather their JSON into one report.

Every benchmark is a script that prints one JSON object on stdout. A benchmark may give a top-level
"ratios" map {name: number}: unitless throughput ratios measured within one run (e.g. env rate / raw
engine rate, compiled / eager), larger is better. Ratios travel between machines far better than
absolute rates, so `--check BASELINE.json` compares them only: a ratio more than `--tolerance`
(a fraction) below the baseline's is a regression and the command exits 1.

Report (SCHEMA): {"schema", "created", "machine", "quick", "benchmarks": {name: {"ok", "seconds",
"returncode", "result" (the benchmark's JSON), "ratios" ({name: float}, nested maps flattened to dotted
names), "error" (when not ok)}},
"skipped": {name: why}}.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SCHEMA = "rocketrl.bench/1"
LONG_BENCHMARKS = frozenset({"learn_vs_rule"})
"""Learning benchmarks that take long; they run only when named in --only."""
LONG_MARKER = re.compile(r"^LONG_BENCHMARK\s*=\s*True", re.MULTILINE)
"""A benchmark script with this line at top level is long too."""


def benchmarks_dir(folder: str | Path | None = None) -> Path:
    """`folder`, else ./benchmarks, else the benchmarks/ folder beside the rocketrl package."""
    candidates = (
        [Path(folder)] if folder else [Path.cwd() / "benchmarks", Path(__file__).resolve().parents[2] / "benchmarks"]
    )
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    where = candidates[0] if folder else "./benchmarks"
    raise FileNotFoundError(f"--dir {where}: no benchmarks folder; run from the repository root or pass --dir PATH")


def discover(folder: Path) -> dict[str, Path]:
    """{name: script} of every benchmarks/*.py not starting with '_', by name."""
    return {path.stem: path for path in sorted(folder.glob("*.py")) if not path.name.startswith("_")}


def is_long(path: Path) -> bool:
    return path.stem in LONG_BENCHMARKS or bool(LONG_MARKER.search(path.read_text(errors="replace")))


def supports_quick(path: Path) -> bool:
    """Whether the script takes a --quick flag (it is named in its source)."""
    return "--quick" in path.read_text(errors="replace")


def select(found: dict[str, Path], only: list[str] | None) -> tuple[dict[str, Path], dict[str, str]]:
    """(benchmarks to run, {name: why skipped}). Without `only`, every benchmark but the long ones."""
    if only:
        unknown = [name for name in only if name not in found]
        if unknown:
            raise ValueError(
                f"--only {','.join(only)}: no benchmark named {unknown[0]!r}; available: {', '.join(found) or 'none'}"
            )
        return {name: found[name] for name in only}, {}
    chosen, skipped = {}, {}
    for name, path in found.items():
        if is_long(path):
            skipped[name] = f"a long learning benchmark; run it with --only {name}"
        else:
            chosen[name] = path
    return chosen, skipped


def parse_output(stdout: str) -> dict[str, Any]:
    """The JSON object a benchmark printed: all of stdout, or from the last line that starts with '{'."""
    text = stdout.strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        starts = [m.start() for m in re.finditer(r"^\{", text, re.MULTILINE)]
        for start in reversed(starts):
            try:
                value = json.loads(text[start:])
                break
            except json.JSONDecodeError:
                continue
        else:
            raise ValueError("printed no JSON object on stdout") from None
    if not isinstance(value, dict):
        raise ValueError("printed JSON that is not an object")
    return value


def ratios_of(result: dict[str, Any]) -> dict[str, float]:
    """The finite numbers of result["ratios"], nested maps flattened: {"1v1": {"1024": 3.0}} -> {"1v1.1024": 3.0}."""

    def flat(value: Any, prefix: str) -> dict[str, float]:
        if isinstance(value, dict):
            out: dict[str, float] = {}
            for key, item in value.items():
                out.update(flat(item, f"{prefix}{key}."))
            return out
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return {prefix.rstrip("."): float(value)}
        return {}

    raw = result.get("ratios")
    return flat(raw, "") if isinstance(raw, dict) else {}


def run_benchmark(path: Path, quick: bool, timeout_s: float | None = None) -> dict[str, Any]:
    """Run one script with this interpreter (from its folder's parent); its report entry."""
    command = [sys.executable, str(path), *(["--quick"] if quick and supports_quick(path) else [])]
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command, cwd=path.parent.parent, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "seconds": round(time.perf_counter() - started, 2), "returncode": None,
                "error": f"ran past --timeout {timeout_s} s"}  # fmt: skip
    entry: dict[str, Any] = {
        "ok": False,
        "seconds": round(time.perf_counter() - started, 2),
        "returncode": done.returncode,
        "quick": "--quick" in command,
    }
    if done.returncode != 0:
        entry["error"] = f"exit status {done.returncode}: {done.stderr.strip()[-2000:]}"
        return entry
    try:
        entry["result"] = parse_output(done.stdout)
    except ValueError as error:
        entry["error"] = f"{error}; stdout ended with: {done.stdout.strip()[-500:]!r}"
        return entry
    entry["ok"] = True
    entry["ratios"] = ratios_of(entry["result"])
    return entry


def run_all(chosen: dict[str, Path], skipped: dict[str, str], quick: bool, timeout_s: float | None) -> dict[str, Any]:
    """Run the chosen benchmarks one after another (progress on stderr); the report."""
    import torch

    report: dict[str, Any] = {
        "schema": SCHEMA,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
                    "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None},
        "quick": quick,
        "benchmarks": {},
        "skipped": skipped,
    }  # fmt: skip
    for name, path in chosen.items():
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        entry = run_benchmark(path, quick, timeout_s)
        report["benchmarks"][name] = entry
        status = "ok" if entry["ok"] else f"FAILED ({entry['error'][:300]})"
        print(f"bench: {name} {status} in {entry['seconds']:.1f} s", file=sys.stderr, flush=True)
    return report


def check(baseline: dict[str, Any], report: dict[str, Any], tolerance: float) -> tuple[list[str], list[str]]:
    """Compare every ratio of the baseline with the report: (failures, all lines).

    A ratio fails when new < old * (1 - tolerance), or when it is missing from a benchmark that ran;
    a benchmark of the baseline that failed now fails; one not run now is noted, not failed.
    """
    failures, lines = [], []
    ran = report.get("benchmarks", {})
    for name, old in baseline.get("benchmarks", {}).items():
        old_ratios = old.get("ratios") or {}
        if not old_ratios:
            continue
        new = ran.get(name)
        if new is None:
            lines.append(f"skip  {name}: not run this time")
            continue
        if not new.get("ok"):
            failures.append(f"FAIL  {name}: the benchmark failed: {new.get('error', '')[:300]}")
            lines.append(failures[-1])
            continue
        new_ratios = new.get("ratios") or {}
        for key, before in old_ratios.items():
            after = new_ratios.get(key)
            if after is None:
                failures.append(f"FAIL  {name}.ratios.{key}: missing now (baseline {before:.3f})")
            elif after < before * (1.0 - tolerance):
                failures.append(
                    f"FAIL  {name}.ratios.{key}: {after:.3f} < baseline {before:.3f} - {tolerance:.0%} "
                    f"(= {before * (1 - tolerance):.3f}), {after / before - 1:+.1%}"
                )
            else:
                lines.append(
                    f"ok    {name}.ratios.{key}: {after:.3f} (baseline {before:.3f}, {after / before - 1:+.1%})"
                )
                continue
            lines.append(failures[-1])
    return failures, lines


def _read_json(path: str, option: str) -> dict[str, Any]:
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(
            f"{option} {path}: no such file; write a report first with `rocketrl bench --out {path}`"
        )
    try:
        data = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(
            f"{option} {path}: not a JSON file ({error}); give a report written by `rocketrl bench --out`"
        ) from None
    if not isinstance(data, dict) or "benchmarks" not in data:
        raise ValueError(
            f"{option} {path}: not a bench report (no 'benchmarks'); give one written by `rocketrl bench --out`"
        )
    return data


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give a fraction such as 0.2") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"{value} must lie in [0, 1): a fraction such as 0.2 for 20%")
    return value


def add_parser(sub: Any) -> None:
    """Register `rocketrl bench` on the CLI's subparsers."""
    p = sub.add_parser(
        "bench",
        help="run the benchmarks/ scripts into one JSON report; --check compares ratios with a baseline",
        description="Run every script in benchmarks/ (each prints JSON) and write one report. Long learning "
        "benchmarks run only when named in --only.",
    )
    p.add_argument("--only", default=None, metavar="NAME[,NAME]", help="run these benchmarks (file names without .py)")
    p.add_argument("--quick", action="store_true", help="pass --quick to the benchmarks that take it")
    p.add_argument("--out", default=None, metavar="PATH", help="write the report here (default: print it)")
    p.add_argument("--check", default=None, metavar="BASELINE.json", help="exit 1 when a ratio fell below this")
    p.add_argument("--tolerance", type=_tolerance, default=0.2, help="allowed fall of a ratio, a fraction (0.2)")
    p.add_argument("--report", default=None, metavar="PATH", help="check this report instead of running benchmarks")
    p.add_argument("--dir", default=None, help="folder of benchmark scripts (default ./benchmarks)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds one benchmark may run (default 3600)")
    p.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    """Run (or read with --report) a report, write it, and with --check compare its ratios."""
    baseline = _read_json(args.check, "--check") if args.check else None
    if args.report:
        if baseline is None:
            raise ValueError("--report needs --check BASELINE.json: it checks an existing report")
        report = _read_json(args.report, "--report")
    else:
        only = (
            [name.strip().removesuffix(".py") for name in args.only.split(",") if name.strip()] if args.only else None
        )
        chosen, skipped = select(discover(benchmarks_dir(args.dir)), only)
        for name, why in skipped.items():
            print(f"bench: skipping {name}: {why}", file=sys.stderr)
        report = run_all(chosen, skipped, args.quick, args.timeout)
        text = json.dumps(report, indent=2) + "\n"
        if args.out:
            Path(args.out).write_text(text)
            print(f"bench: report written to {args.out}", file=sys.stderr)
        else:
            sys.stdout.write(text)
    failed_runs = [name for name, entry in report["benchmarks"].items() if not entry.get("ok")]
    if baseline is None:
        return 1 if failed_runs else 0
    failures, lines = check(baseline, report, args.tolerance)
    for line in lines:
        print(line, file=sys.stderr)
    if failures:
        print(
            f"bench --check: {len(failures)} ratio(s) below {args.check} by more than {args.tolerance:.0%}",
            file=sys.stderr,
        )
        return 1
    print(f"bench --check: every ratio within {args.tolerance:.0%} of {args.check}", file=sys.stderr)
    return 1 if failed_runs else 0
