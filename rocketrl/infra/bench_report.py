"""What every benchmark shares: one description of the machine, the code's commit, one way to print and
save a JSON report, clean-up of a process group a measurement started, and loading a benchmark's helper
module.

Benchmarks (benchmarks/*.py) each print one JSON object; `machine` and `commit` say where and from what
it was measured, so figures from different machines are never compared as if from one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import signal
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

from rocketrl.infra.atomic_json import write_json_atomic
from rocketrl.infra.machine_cache import cpu_model_and_bf16_flags

ROOT = Path(__file__).resolve().parents[2]
"""The source tree holding the package (its git checkout when run from one)."""


def machine_info() -> dict[str, Any]:
    """CPU model and its bf16 matrix flags, cores, platform, Python, torch, the CUDA device (or None) and
    the 1-minute load average (where the OS has one): what a figure measured here depends on."""
    import torch

    model, flags = cpu_model_and_bf16_flags()
    info: dict[str, Any] = {
        "cpu": model,
        "cpu_bf16_flags": flags,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
    try:
        info["load_average_1m"] = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    return info


def git_commit(root: Path = ROOT) -> str | None:
    """The checkout's commit, with '+dirty' when tracked files outside docs/ have uncommitted changes; None outside
    git. docs/ holds the reports and run records that benchmarks write, so a run's own records (or an earlier
    run's, not yet committed) do not mark the code it ran as changed."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)docs"],
            cwd=root,
            capture_output=True,
            text=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def emit_report(report: dict[str, Any], out: str | os.PathLike[str] | None = None) -> str:
    """Print `report` as indented JSON and, with `out`, write it there atomically; returns the text."""
    text = json.dumps(report, indent=2, default=float)
    print(text, flush=True)
    if out:
        write_json_atomic(out, report)
    return text


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group a measurement started (with start_new_session=True); clean-up only."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def sibling_module(script: str | os.PathLike[str], name: str) -> ModuleType:
    """benchmarks/<name>.py beside `script` (a benchmark's __file__), loaded as a module: the helper modules of
    benchmarks/ (named with a leading '_', which `rocketrl bench` does not run) are not a package."""
    path = Path(script).resolve().with_name(f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"{path}: no such benchmark helper module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
