"""The library's entry point for a training run: `train(cfg)` builds the Trainer with the collection the config
asks for (this process's arenas, or Ray workers with run.distributed='ray'), resumes or initialises it, prints
the start-up summary, trains with a TrainLogger and returns where the run went:

    from rocketrl.config import load_config
    from rocketrl.training import train

    result = train(load_config("configs/presets/vs_rule.yaml", ["--run.timesteps", "1_000_000"]))
    print(result.run_dir, result.steps, result.stopped)

`rocketrl train` is a thin command over it (cli.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from rocketrl.config import TrainConfig, config_to_dict
from rocketrl.policy.load import resolve_checkpoint
from rocketrl.ppo.summary import summarize
from rocketrl.ppo.train_logger import TrainLogger
from rocketrl.ppo.trainer import Trainer


class RunResult(NamedTuple):
    """What a training run left behind."""

    run_dir: Path
    """The run's folder: config, checkpoints, logs."""
    steps: int
    """Agent-steps trained."""
    stopped: bool
    """True when a signal (Ctrl-C, SIGTERM) stopped the run before run.timesteps; a checkpoint was saved."""


def make_trainer(cfg: TrainConfig) -> Trainer:
    """The Trainer of `cfg`: rollouts from this process's arenas, or from Ray workers (run.distributed='ray')."""
    if cfg.run.distributed == "ray":
        from rocketrl.distributed.learner import ray_trainer  # Ray is optional: imported only when asked for

        return ray_trainer(cfg)
    return Trainer(cfg)


def train(
    cfg: TrainConfig,
    *,
    wrap_logger: Callable[[TrainLogger], object] | None = None,
    at_end: Callable[[Trainer], None] | None = None,
) -> RunResult:
    """Train one run to its end (run.timesteps or run.max_minutes) or a stop signal.

    `wrap_logger` receives the run's TrainLogger and returns the logger `Trainer.learn` reports to (one that hands
    every update on to it: a benchmark's sampler, say); `at_end` runs once the run has ended well, with the trainer
    and everything it built still alive.
    """
    if cfg.run.init_from and not cfg.run.resume:
        try:  # a start that is not there is named before the run's folder is made
            resolve_checkpoint(cfg.run.init_from)
        except FileNotFoundError as missing:
            raise FileNotFoundError(f"run.init_from: {missing}") from None
    trainer = make_trainer(cfg)
    try:
        if cfg.run.resume:
            path = trainer.resume(cfg.run.resume)
            trained = f"{trainer.train_seconds / 60.0:.1f}"
            left = "" if cfg.run.max_minutes is None else f" of run.max_minutes={cfg.run.max_minutes:g}"
            print(f"resumed from {path} at step {trainer.counters.global_step:,} ({trained} minutes trained{left})")
        elif cfg.run.init_from:
            print(f"network and observation normalizer start from {trainer.init_from(cfg.run.init_from)}")
            if trainer.init_widened:
                print("its hidden layers widened to this run's: the new units start silent, so it plays as that bot")
        print(summarize(trainer))
        described = trainer.describe()
        if described is not None:
            print(described)
        trainer.verify()
        logger = TrainLogger(
            trainer.run_dir,
            cfg.run.timesteps,
            ascii_only=cfg.run.ascii,
            wandb_config=config_to_dict(cfg) if cfg.run.wandb else None,
        )
        try:
            counters = trainer.learn(logger if wrap_logger is None else wrap_logger(logger))
        finally:
            logger.close()
        if at_end is not None:
            at_end(trainer)
        how = "stopped by signal" if trainer.stopped_by_signal is not None else "finished"
        print(
            f"{how} at step {counters.global_step:,} after {counters.updates} updates; "
            f"checkpoint: {trainer.checkpoints.latest()}; logs: {trainer.run_dir}"
        )
        return RunResult(trainer.run_dir, counters.global_step, trainer.stopped_by_signal is not None)
    finally:
        trainer.close()
