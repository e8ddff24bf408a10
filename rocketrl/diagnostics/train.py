"""A short training run, to split an update's time between env, copy, inference and learn."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from rocketrl.config import TrainConfig, config_from_dict, config_to_dict
from rocketrl.infra.gpu import GpuMonitor
from rocketrl.ppo.train_logger import UpdateReport

STAGES = ("env", "copy", "inference", "learn")
NO_NOTICES_ENV_VAR = "ROCKETRL_DIAGNOSE_NOTICES"
"""Webhook variable of the diagnostic run: an unset name, so a measurement never posts notices."""


class TimingRecorder:
    """A logger for Trainer.learn that keeps each update's timings (seconds per stage), SPS and GPU reads."""

    def __init__(self) -> None:
        self.timings: list[dict[str, float]] = []
        self.sps: list[float] = []
        self.gpu: list[dict[str, float]] = []
        self._monitor: GpuMonitor | None = None

    def log_update(self, report: UpdateReport) -> None:
        self.timings.append(dict(report.timings))
        self.sps.append(float(report.sps))
        if self._monitor is None:
            self._monitor = GpuMonitor(report.device)
        reading = self._monitor.read()
        if reading is not None:
            self.gpu.append(reading)


def short_run_config(cfg: TrainConfig, updates: int, run_dir: Path) -> TrainConfig:
    """cfg trimmed to `updates` updates with no checkpoint until the end and no notices."""
    data = config_to_dict(cfg)
    batch = cfg.batch_size
    data["run"].update(
        timesteps=updates * batch,
        checkpoint_interval=10 * updates * batch,
        logdir=str(run_dir.parent),
        name=run_dir.name,
        resume=None,
        debug=False,
        wandb=False,
        discord_webhook_env=NO_NOTICES_ENV_VAR,
    )
    return config_from_dict(data)


def measure_training(cfg: TrainConfig, updates: int = 3) -> dict[str, Any]:
    """Run `updates` PPO updates (the first is a warm-up and not counted) and split their time.

    Returns seconds per update of each stage in `seconds` ({env, copy, inference, learn}), their
    fractions of the total in `shares` (0..1), agent_steps_per_s, the batch size and, on CUDA, the
    mean GPU utilisation (%) and memory (GiB) read after each update.
    """
    from rocketrl.ppo.trainer import Trainer

    updates = max(2, updates)
    recorder = TimingRecorder()
    with tempfile.TemporaryDirectory(prefix="rocketrl-diagnose-") as tmp:
        run_dir = Path(tmp) / "run"
        run_dir.mkdir()
        small = short_run_config(cfg, updates, run_dir)
        started = time.perf_counter()
        trainer = Trainer(small, run_dir=run_dir)
        build_s = time.perf_counter() - started
        try:
            trainer.learn(recorder)
            device, workers = str(trainer.device), trainer.env.engine.num_workers
            agents = trainer.num_agents
        finally:
            trainer.close()
    counted = recorder.timings[1:] or recorder.timings
    seconds = {stage: sum(t.get(stage, 0.0) for t in counted) / len(counted) for stage in STAGES}
    total = sum(seconds.values()) or 1.0
    sps = recorder.sps[1:] or recorder.sps
    result: dict[str, Any] = {
        "device": device,
        "engine": small.env.engine,
        "workers": workers,
        "agents": agents,
        "batch": small.ppo.rollout_steps * agents,
        "updates_timed": len(counted),
        "build_s": round(build_s, 3),
        "seconds": {stage: round(value, 4) for stage, value in seconds.items()},
        "shares": {stage: round(value / total, 4) for stage, value in seconds.items()},
        "agent_steps_per_s": round(sum(sps) / len(sps), 1),
    }
    if recorder.gpu:
        result["gpu_util_percent"] = round(sum(g["util"] for g in recorder.gpu) / len(recorder.gpu), 1)
        result["gpu_memory_gib"] = round(max(g["memory"] for g in recorder.gpu), 3)
    return result
