"""Hyperparameter schedules over training progress (fraction of the training budget done, in [0, 1])."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

SCHEDULE_KINDS = ("constant", "linear", "exponential", "cosine")
DEFAULT_END_FRACTION = 0.1
"""For a non-constant schedule without `end`, end = DEFAULT_END_FRACTION * start."""


@dataclass
class Schedule:
    """A value that moves from `start` (progress 0) to `end` (progress 1).

    `end=None` resolves in __post_init__: to `start` for 'constant', to 0.1 * start otherwise.
    """

    start: float
    kind: str = "constant"
    """'constant' | 'linear' | 'exponential' | 'cosine'."""
    end: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in SCHEDULE_KINDS:
            raise ValueError(f"Schedule.kind must be one of {', '.join(SCHEDULE_KINDS)}; got {self.kind!r}")
        for name in ("start", "end"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
                raise ValueError(f"Schedule.{name} must be a finite number; got {v!r}")
        if self.end is None:
            self.end = self.start if self.kind == "constant" else DEFAULT_END_FRACTION * self.start
        if self.kind == "exponential":
            for name in ("start", "end"):
                if getattr(self, name) <= 0:
                    raise ValueError(f"Schedule.{name} must be > 0 for kind 'exponential'; got {getattr(self, name)!r}")

    def value(self, progress: float) -> float:
        """The value at `progress` (fraction of the training budget done; clamped to [0, 1])."""
        if math.isnan(progress):
            raise ValueError("Schedule.value: progress is NaN")
        p = min(max(float(progress), 0.0), 1.0)
        start, end = float(self.start), float(self.end)
        if self.kind == "constant":
            return start
        if self.kind == "linear":
            # start + (end - start) * p
            return start + (end - start) * p
        if self.kind == "exponential":
            # Geometric interpolation: start * (end / start) ** p
            return start * (end / start) ** p
        # cosine: end + 0.5 * (start - end) * (1 + cos(pi * p))
        return end + 0.5 * (start - end) * (1.0 + math.cos(math.pi * p))


def set_learning_rate(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Set `lr` on every param group (in place when the group holds lr as a tensor, e.g. capturable Adam)."""
    for group in optimizer.param_groups:
        if isinstance(group["lr"], torch.Tensor):
            group["lr"].fill_(lr)
        else:
            group["lr"] = lr
