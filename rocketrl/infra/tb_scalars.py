"""A finished run's TensorBoard scalars, read in one place: records and benchmarks take steps, speeds and curves
from them."""

from __future__ import annotations

import os
from typing import NamedTuple


class Scalar(NamedTuple):
    """One logged value: `step` in agent-steps, `wall_time` in seconds since the epoch."""

    step: int
    value: float
    wall_time: float


def read_scalars(run_dir: str | os.PathLike[str]) -> dict[str, list[Scalar]]:
    """{tag: every value logged under it, in logging order} of the run's TensorBoard events at `run_dir` (empty
    when it has none)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(os.fspath(run_dir), size_guidance={"scalars": 0})  # 0: keep every value
    events.Reload()
    return {
        tag: [Scalar(e.step, e.value, e.wall_time) for e in events.Scalars(tag)]
        for tag in events.Tags().get("scalars", [])
    }
