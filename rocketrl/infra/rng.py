"""Random generator states (Python, numpy, torch CPU and CUDA) as checkpointable data."""

from __future__ import annotations

import random
import warnings
from typing import Any

import numpy as np
import torch


def rng_state() -> dict:
    """Capture Python ``random``, numpy's global RNG, torch's CPU RNG and (if available) every CUDA RNG.

    The result is plain flatten-able data: tuples of ints, JSON scalars and uint8 tensors.
    """
    kind, key, pos, has_gauss, cached_gaussian = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {
            "bit_generator": str(kind),
            "key": [int(k) for k in key],
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = list(torch.cuda.get_rng_state_all())
    return state


def set_rng_state(state: dict) -> None:
    """Restore RNG state captured by :func:`rng_state` (also accepts it after a checkpoint round trip)."""
    if "python" in state:
        version, internal, gauss_next = state["python"]
        random.setstate((int(version), tuple(int(x) for x in internal), gauss_next))
    if "numpy" in state:
        np_state = state["numpy"]
        np.random.set_state(
            (
                np_state["bit_generator"],
                np.asarray(np_state["key"], dtype=np.uint32),
                int(np_state["pos"]),
                int(np_state["has_gauss"]),
                float(np_state["cached_gaussian"]),
            )
        )
    if "torch" in state:
        torch.set_rng_state(torch.as_tensor(state["torch"]).to("cpu", torch.uint8))
    cuda_states = state.get("cuda")
    if cuda_states:
        if not torch.cuda.is_available():
            warnings.warn("checkpoint holds CUDA RNG state but CUDA is not available; not restored", stacklevel=2)
            return
        count = torch.cuda.device_count()
        if len(cuda_states) != count:
            warnings.warn(
                f"checkpoint holds CUDA RNG state for {len(cuda_states)} devices, this machine has "
                f"{count}; restoring the first {min(count, len(cuda_states))}",
                stacklevel=2,
            )
        for index, cuda_state in enumerate(cuda_states[:count]):
            torch.cuda.set_rng_state(torch.as_tensor(cuda_state).to("cpu", torch.uint8), device=index)
