"""Policy inference latency: ActorCritic.act over batch sizes 1, 2, 4, ... up to the rollout batch."""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch

from rocketrl.config import ModelConfig

MIN_REPEATS = 10
MAX_REPEATS = 300
BUDGET_S = 0.25
"""Seconds of timed calls per (device, precision, batch) once MIN_REPEATS are done."""


def batch_sizes(largest: int) -> list[int]:
    """Powers of 2 from 1 below `largest`, then `largest` itself: 64 -> [1, 2, 4, ..., 64], 48 -> [..., 32, 48]."""
    sizes, size = [], 1
    while size < largest:
        sizes.append(size)
        size *= 2
    return [*sizes, largest]


def precisions(device: torch.device) -> list[str]:
    """fp32 everywhere, bf16 autocast on the CPU, bf16 (when supported) and fp16 autocast on CUDA."""
    if device.type != "cuda":
        return ["fp32", "bf16"]
    return ["fp32", *(["bf16"] if torch.cuda.is_bf16_supported() else []), "fp16"]


def _time_calls(call, device: torch.device) -> list[float]:
    """Seconds of each timed call (synchronising CUDA after each), after 3 untimed ones."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(3):
        call()
    sync()
    times: list[float] = []
    spent = 0.0
    while len(times) < MIN_REPEATS or (spent < BUDGET_S and len(times) < MAX_REPEATS):
        t0 = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - t0)
        spent += times[-1]
    return times


def measure_inference(
    model_config: ModelConfig, obs_size: int, num_actions: int, discrete: bool, device: torch.device, largest: int
) -> dict[str, dict[str, dict[str, float]]]:
    """{precision: {batch: stats}} of one sampling forward pass (ActorCritic.act, no grad) on `device`.

    stats: mean_ms, p50_ms, p95_ms, p99_ms per call, and inferences_per_s (agents acted for per second =
    batch / mean seconds).
    """
    from rocketrl.policy.actor_critic import ActorCritic

    model = ActorCritic.from_config(obs_size, num_actions, model_config, discrete=discrete).to(device)
    model.eval()
    generator = torch.Generator().manual_seed(0)
    results: dict[str, dict[str, dict[str, float]]] = {}
    for precision in precisions(device):
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        rows: dict[str, dict[str, float]] = {}
        for batch in batch_sizes(largest):
            obs = torch.randn(batch, obs_size, generator=generator).to(device)
            state = model.initial_state(batch, device)

            def call(obs: torch.Tensor = obs, state: Any = state, dtype: torch.dtype | None = dtype) -> None:
                autocast = torch.autocast(device.type, dtype=dtype) if dtype is not None else nullcontext()
                with torch.no_grad(), autocast:
                    model.act(obs, state)

            seconds = np.asarray(_time_calls(call, device))
            mean = float(seconds.mean())
            rows[str(batch)] = {
                "mean_ms": round(mean * 1e3, 4),
                "p50_ms": round(float(np.percentile(seconds, 50)) * 1e3, 4),
                "p95_ms": round(float(np.percentile(seconds, 95)) * 1e3, 4),
                "p99_ms": round(float(np.percentile(seconds, 99)) * 1e3, 4),
                "inferences_per_s": round(batch / mean, 1),
            }
        results[precision] = rows
    return results


def inference_devices() -> list[torch.device]:
    """The CPU, and the current CUDA device when there is one."""
    devices = [torch.device("cpu")]
    if torch.cuda.is_available():
        devices.append(torch.device("cuda", torch.cuda.current_device()))
    return devices
