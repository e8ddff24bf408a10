"""GPU utilisation and memory through NVML (nvidia-ml-py), for logging; None without a GPU."""

from __future__ import annotations

import torch


class GpuMonitor:
    """Reads utilisation (%) and memory used (GiB) of one CUDA device. `read()` gives None when
    there is no CUDA device or NVML cannot be loaded (no driver), so callers need no special case."""

    def __init__(self, device: torch.device) -> None:
        self._handle = None
        self._nvml = None
        if device.type != "cuda" or not torch.cuda.is_available():
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            index = device.index if device.index is not None else torch.cuda.current_device()
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self._nvml = pynvml
        except Exception:  # no NVML library or driver: monitoring is optional
            self._handle = None

    @property
    def available(self) -> bool:
        return self._handle is not None

    def read(self) -> dict[str, float] | None:
        """{'util': percent busy, 'memory': GiB used} or None."""
        if self._handle is None or self._nvml is None:
            return None
        util = self._nvml.nvmlDeviceGetUtilizationRates(self._handle)
        memory = self._nvml.nvmlDeviceGetMemoryInfo(self._handle)
        return {"util": float(util.gpu), "memory": memory.used / 2**30}
