"""Process trees read from Linux's /proc: which processes sit below a pid, and which are still running; and a
child process that dies with its parent.

Used to check that nothing a run started outlives it (tests, `benchmarks/crash_resume.py`,
`benchmarks/soak.py`). Everything here returns empty answers where /proc is missing.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

PROC = Path("/proc")


def has_proc() -> bool:
    """Whether this system exposes process trees under /proc (Linux)."""
    return (PROC / "self" / "task").is_dir()


def descendants(pid: int) -> set[int]:
    """Every process below pid (children, grandchildren, ...), from /proc/<pid>/task/<tid>/children."""
    found: set[int] = set()
    for task in (PROC / str(pid) / "task").glob("*"):
        try:
            found |= {int(child) for child in (task / "children").read_text().split()}
        except OSError:
            continue
    for child in list(found):
        found |= descendants(child)
    return found


def running(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        state = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def resident_bytes(pid: int) -> int | None:
    """The process's resident set size in bytes (VmRSS), or None when it is gone."""
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def open_descriptors(pid: int) -> int | None:
    """How many file descriptors the process holds open, or None when it is gone or unreadable."""
    try:
        return len(os.listdir(PROC / str(pid) / "fd"))
    except OSError:
        return None


PR_SET_PDEATHSIG = 1
"""prctl option: the signal the kernel sends this process when its parent dies (Linux)."""


def die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux; a no-op elsewhere), and exit at
    once if the parent is already gone (it died before the request took effect)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:
        os._exit(0)


def dies_with_this_process() -> Callable[[], None]:
    """A `preexec_fn` for subprocess.Popen: the child is SIGKILLed when this process dies (Linux), so a measurement
    or test stopped outright leaves no training run behind (its own workers die with it in turn)."""
    return functools.partial(die_with_parent, os.getpid())
