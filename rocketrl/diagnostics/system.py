"""Machine facts for diagnostics: CPU count, torch threads, process memory, and the GPU through NVML."""

from __future__ import annotations

import os
import platform
import resource
import sys
from typing import Any

import torch


def _rss_mib() -> float | None:
    """Resident memory of this process now, in MiB (None where /proc is missing)."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


def _peak_mib(who: int) -> float:
    """Peak resident memory of this process (RUSAGE_SELF) or of its ended children, in MiB."""
    peak = resource.getrusage(who).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, KiB on Linux


def system_info() -> dict[str, Any]:
    """CPU count, torch threads, versions and process memory (MiB): RSS now, peak, peak of ended children.

    Children are the env worker processes once they have been closed.
    """
    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda_available": torch.cuda.is_available(),
        "peak_rss_mib": round(_peak_mib(resource.RUSAGE_SELF), 1),
        "children_peak_rss_mib": round(_peak_mib(resource.RUSAGE_CHILDREN), 1),
    }
    rss = _rss_mib()
    if rss is not None:
        info["rss_mib"] = round(rss, 1)
    return info


def gpu_info() -> dict[str, Any]:
    """The GPU through NVML: name, utilisation (%), memory used and total (GiB), torch's peak allocation.

    Without a CUDA device: {"available": False, "reason": ...}; never raises.
    """
    if not torch.cuda.is_available():
        built = torch.version.cuda
        reason = "torch has no CUDA device" + (
            f" (built for CUDA {built}; is the driver loaded?)" if built else " (a CPU-only torch build)"
        )
        return {"available": False, "reason": reason}
    index = torch.cuda.current_device()
    info: dict[str, Any] = {
        "available": True,
        "name": torch.cuda.get_device_name(index),
        "count": torch.cuda.device_count(),
        "torch_peak_allocated_gib": round(torch.cuda.max_memory_allocated(index) / 2**30, 3),
        "bf16_supported": bool(torch.cuda.is_bf16_supported()),
    }
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        util = pynvml.nvmlDeviceGetUtilizationRates(handle)
        memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
        info.update(
            {
                "util_percent": float(util.gpu),
                "memory_used_gib": round(memory.used / 2**30, 3),
                "memory_total_gib": round(memory.total / 2**30, 3),
                "driver": str(pynvml.nvmlSystemGetDriverVersion()),
            }
        )
    except Exception as error:  # NVML missing or failing: torch's own numbers still stand
        info["nvml_error"] = f"{type(error).__name__}: {error} (pip install nvidia-ml-py for utilisation)"
    return info
