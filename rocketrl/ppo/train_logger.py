"""Training logs: TensorBoard scalars under stable names, and a console view (rich, or plain ASCII).

Scalar names: charts/SPS, charts/episode_return, charts/episode_length, charts/touches_per_minute
(per car, per minute of game time), losses/policy, losses/value,
losses/entropy, losses/approx_kl, losses/clipfrac, losses/explained_variance, losses/grad_norm,
charts/learning_rate, charts/entropy_coef, rewards/<term> (unweighted term means), reward_weights/<term>
(scheduled weights, rewards.weights_end), time/env, time/inference, time/learn, and on
CUDA gpu/util (%) and gpu/memory (GiB) through NVML.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from rocketrl.infra.console import console_can_print_unicode
from rocketrl.infra.gpu import GpuMonitor
from rocketrl.ppo.update import UpdateStats

LOSS_NAMES = ("policy", "value", "entropy", "approx_kl", "clipfrac", "explained_variance", "grad_norm", "imitation")


@dataclass
class UpdateReport:
    """What the runner reports after each update: the hand-off to the logger."""

    step: int
    """Agent-steps so far."""
    updates: int
    skipped_updates: int
    stats: UpdateStats
    """The update's loss terms, grad norm, explained variance, learning rate and entropy weight."""
    timings: dict[str, float]
    """Seconds of the iteration by phase: env, copy, inference, learn (and league)."""
    sps: float
    """Agent-steps per second of the iteration."""
    mean_return: float
    """Mean learner return of the last 100 episodes (nan before the first)."""
    mean_length: float
    """Mean length (steps) of the last 100 episodes (nan before the first)."""
    touch_rate: float
    """Mean touches per car per minute of game time of the last 100 episodes (nan before the first)."""
    reward_terms: dict[str, float] = field(default_factory=dict)
    """Mean of each reward term since the last report."""
    league: dict[str, float] = field(default_factory=dict)
    """The league's scalars (Elo, OpenSkill, win rates), empty without a league."""
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    extra: dict[str, float] = field(default_factory=dict)
    """Further scalars by their TensorBoard name (distributed runs: distributed/policy_lag_max, ...)."""


class TrainLogger:
    """Writes TensorBoard scalars every update and prints one console line (or a rich table)."""

    def __init__(
        self,
        run_dir: Path,
        total_steps: int,
        ascii_only: bool = False,
        quiet: bool = False,
        wandb_config: dict | None = None,
    ) -> None:
        """wandb_config: the run's resolved config, to also log to Weights & Biases (None: don't)."""
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(run_dir))
        self.wandb_run = _start_wandb(run_dir, wandb_config) if wandb_config is not None else None
        self.gpu: GpuMonitor | None = None
        self.total_steps = total_steps
        self.ascii_only = ascii_only or not console_can_print_unicode()
        self.quiet = quiet
        self._console = None
        self._live = None
        if not self.ascii_only and not quiet:
            from rich.console import Console

            self._console = Console(soft_wrap=True)  # one line per update in log files, never wrapped
            if self._console.is_terminal:
                from rich.live import Live

                # A panel redrawn in place on a terminal; plain lines when output goes to a file.
                self._live = Live(console=self._console, refresh_per_second=4, transient=False)
                self._live.start()

    def log_update(self, report: UpdateReport) -> None:
        r, stats, timings = report, report.stats, report.timings
        step = r.step
        self._pending: dict[str, float] = {}
        self._scalar("charts/SPS", r.sps, step)
        for name in LOSS_NAMES:
            if name in stats.values:
                self._scalar(f"losses/{name}", stats.values[name], step)
        self._scalar("charts/learning_rate", stats.values.get("learning_rate", 0.0), step)
        if "entropy_coef" in stats.values:
            self._scalar("charts/entropy_coef", stats.values["entropy_coef"], step)
        if "imitation_coef" in stats.values:
            self._scalar("charts/imitation_coef", stats.values["imitation_coef"], step)
        if not math.isnan(r.mean_return):
            self._scalar("charts/episode_return", r.mean_return, step)
            self._scalar("charts/episode_length", r.mean_length, step)
            self._scalar("charts/touches_per_minute", r.touch_rate, step)
        for term, value in r.reward_terms.items():
            self._scalar(f"rewards/{term}", value, step)
        for phase, seconds in timings.items():
            self._scalar(f"time/{phase}", seconds, step)
        self._scalar("charts/skipped_updates", r.skipped_updates, step)
        for name, value in {**r.league, **r.extra}.items():
            self._scalar(name, value, step)
        if self.gpu is None:
            self.gpu = GpuMonitor(r.device)
        gpu = self.gpu.read()
        if gpu is not None:
            self._scalar("gpu/util", gpu["util"], step)
            self._scalar("gpu/memory", gpu["memory"], step)
        if self.wandb_run is not None:
            self.wandb_run.log(self._pending, step=step)
        if self.quiet:
            return
        done = min(1.0, step / max(1, self.total_steps))
        line = (
            f"{step:>11,}/{self.total_steps:,} ({done:6.1%})  SPS {r.sps:>8,.0f}  return {r.mean_return:8.3f}  "
            f"len {r.mean_length:6.1f}  touch/min {r.touch_rate:5.2f}  kl {stats.values.get('approx_kl', 0.0):.4f}  "
            f"ev {stats.values.get('explained_variance', 0.0):5.2f}  "
            f"env {timings['env']:.2f}s copy {timings.get('copy', 0.0):.2f}s "
            f"inf {timings['inference']:.2f}s learn {timings['learn']:.2f}s"
        )
        if r.league:
            line += f"  elo {r.league['league/elo']:.0f}"
            if "league/win_rate_vs_rule" in r.league:
                line += f"  vs rule {r.league['league/win_rate_vs_rule']:.0%}"
        if self._live is not None:
            self._live.update(self._panel(r, done))
        elif self._console is not None:
            bar = "█" * int(done * 20) + "░" * (20 - int(done * 20))
            self._console.print(f"[bold cyan]{bar}[/] {line}", highlight=False)
        else:
            bar = "#" * int(done * 20) + "-" * (20 - int(done * 20))
            print(f"[{bar}] {line}", flush=True)

    def _scalar(self, tag: str, value: float, step: int) -> None:
        self.writer.add_scalar(tag, value, step)
        self._pending[tag] = float(value)

    def _panel(self, r: UpdateReport, done: float) -> object:
        """The live view: progress bar, then a table of play, losses and where the time goes."""
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        v, timings = r.stats.values, r.timings
        table = Table.grid(padding=(0, 3))
        for _ in range(6):
            table.add_column(justify="right")
        total = sum(timings.values()) or 1.0
        table.add_row("step", f"{r.step:,} / {self.total_steps:,}", "SPS", f"{r.sps:,.0f}", "updates", f"{r.updates}")
        table.add_row(
            "return", f"{r.mean_return:.3f}", "length", f"{r.mean_length:.1f}", "touches/min", f"{r.touch_rate:.2f}"
        )
        table.add_row(
            "policy", f"{v.get('policy', 0.0):.4f}", "value", f"{v.get('value', 0.0):.4f}",
            "entropy", f"{v.get('entropy', 0.0):.3f}",
        )  # fmt: skip
        table.add_row(
            "kl", f"{v.get('approx_kl', 0.0):.4f}", "clipfrac", f"{v.get('clipfrac', 0.0):.3f}",
            "expl. var", f"{v.get('explained_variance', 0.0):.2f}",
        )  # fmt: skip
        table.add_row(
            *(x for phase in ("env", "copy", "inference", "learn")
              for x in (f"time {phase}", f"{timings.get(phase, 0.0):.2f}s ({timings.get(phase, 0.0) / total:.0%})")),
        )  # fmt: skip
        layout = Table.grid()
        layout.add_row(ProgressBar(total=1.0, completed=done, width=60))
        layout.add_row(table)
        return layout

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
        if self.wandb_run is not None:
            self.wandb_run.finish()
        self.writer.close()


def _start_wandb(run_dir: Path, config: dict) -> object:
    """A Weights & Biases run named after the run folder, logging the same scalars."""
    try:
        import wandb
    except ImportError:
        raise RuntimeError("run.wandb=true but the wandb package is not installed: pip install wandb") from None
    return wandb.init(project="rocketrl", name=run_dir.name, dir=str(run_dir), config=config)
