"""A measurement in a child process: a script run in its own session under a time limit, stopped with
everything it started, and the shared-memory segments it left behind unlinked.

Benchmarks that train (benchmarks/train_throughput.py and the rlgym-learn peer it measures) run each
configuration this way, so one configuration's hang, crash or leaked env process cannot spoil the next.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketrl.infra.bench_report import kill_group
from rocketrl.infra.proctree import dies_with_this_process

SHM_DIR = Path("/dev/shm")


def shm_segments(pattern: str) -> set[str]:
    """Names of the shared-memory segments in /dev/shm matching `pattern` (rlgym-learn: shmem_*, ours: psm_*)."""
    return {path.name for path in SHM_DIR.glob(pattern)} if SHM_DIR.is_dir() else set()


def remove_orphaned_segments(names: set[str]) -> None:
    """Unlink those of `names` that no process maps: what a stopped child left behind."""
    if not names:
        return
    mapped: set[str] = set()
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            text = maps.read_text(errors="replace")
        except OSError:
            continue
        mapped.update(name for name in names if name in text)
    for name in names - mapped:
        (SHM_DIR / name).unlink(missing_ok=True)


def run_script(
    script: str | Path,
    args: list[str],
    timeout_s: float,
    what: str,
    cwd: str | None = None,
    expect_json: bool = True,
    extra_env: dict[str, str] | None = None,
    done: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Run `python script *args` in its own session, killed (with its children) after `timeout_s` seconds or as
    soon as `done()` is true (a child whose clean-up can block, e.g. joining env processes without a limit).

    Returns the last line of its output that starts with "{" parsed as JSON (expect_json), {} when it stopped
    early by `done` or exited 0 without expect_json, else {"error": "<what>: ...", "output_tail": last 2,000
    characters of its output}.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(extra_env or {})}
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            [sys.executable, os.path.abspath(script), *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=cwd,
            env=env,
            start_new_session=True,
            preexec_fn=dies_with_this_process(),  # stopped outright, this process takes the child with it
        )
        deadline = time.monotonic() + timeout_s
        timed_out = finished_early = False
        try:
            while process.poll() is None:
                if done is not None and done():
                    finished_early = True
                    break
                if time.monotonic() >= deadline:
                    timed_out = True
                    break
                time.sleep(0.5)
        finally:
            kill_group(process)  # env processes and anything else the child left behind
            process.wait()
        log.seek(0)
        output = log.read()
    tail = output[-2000:]
    if timed_out:
        return {"error": f"{what}: stopped after the {timeout_s:g} s time limit", "output_tail": tail}
    if finished_early:
        return {}
    failed = {"error": f"{what}: exit status {process.returncode}", "output_tail": tail}
    if not expect_json:
        return {} if process.returncode == 0 else failed
    for line in reversed(output.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return failed


def package_versions(names: tuple[str, ...]) -> dict[str, str | None]:
    """{distribution name: installed version, or None when it is not installed}."""
    from importlib import metadata

    found: dict[str, str | None] = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found
