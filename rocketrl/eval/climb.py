"""A line of runs from a parent, each judged against it: the recipe that made the shipped bots, as one loop.

Step 1 trains from the parent; its run's second half is averaged (the run average) and that one half each with the
parent is the candidate. Each later step trains from the line's average so far (after step 1, the first run's
average; after step k >= 2, step k's candidate) and its candidate is its run average one half each with that start.
Every candidate is judged against the parent on fresh seeds; the line stops at the first one that ships.

    step 1: start = parent          candidate = avg(run 1, parent)   line = run 1
    step 2: start = run 1           candidate = avg(run 2, run 1)    line = candidate
    step 3: start = step 2's line   candidate = avg(run 3, start)    line = candidate

A line may also go on from a line average made elsewhere (`start`: another line's candidate, judged or not): step 1
then trains from it and averages with it, as a later step does, and every step after it starts from the last
candidate. The bot to beat is still the parent.

Each judged candidate may also be measured against yardstick bots (`ClimbTools.measure`: bots the line is not
judged by, such as the community bots), after its judging and never in it.

This module holds the line's bookkeeping and its loop; `climb_cli` gives it the trainer, `rocketrl average` and
`rocketrl judge`. The record (`climb.json` in the line's folder) is rewritten atomically after every phase, so a
stopped line continues where it stopped: finished phases are kept, an interrupted run resumes from its checkpoint.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocketrl.infra.atomic_json import write_json_atomic

RECORD_NAME = "climb.json"
"""The line's record, in its folder."""
SEED_STRIDE = 1000
"""Step k judges on the given seeds plus (k - 1) x this: every step's games are new."""


@dataclass
class ClimbStep:
    """One step of the line: where its run started, what it made and what the judge said. Paths as strings."""

    step: int
    start: str
    """The bot the run started from (`run.init_from`)."""
    seed: int
    """The run's seed (`run.seed`)."""
    judge_seeds: list[int]
    run: str | None = None
    """The run's folder, once its training ended."""
    trained_steps: int | None = None
    """Agent-steps of its last checkpoint."""
    from_step: int | None = None
    """Its checkpoints from this many agent-steps on are averaged: half the last, down to the checkpoint spacing."""
    run_average: str | None = None
    candidate: str | None = None
    averaged_with: str | None = None
    """The bot the run average was averaged with, one half each (the step's start)."""
    judged: str | None = None
    """The judge's JSON report."""
    ships: bool | None = None
    yardstick: str | None = None
    """The JSON report of its games against the yardstick bots, played after its judging (None: none asked)."""


@dataclass
class ClimbRecord:
    """The whole line: its settings and steps, and the candidate that shipped (None while none has)."""

    parent: str
    train_overrides: list[str]
    seed: int
    judge_seeds: list[int]
    judging: dict = field(default_factory=dict)
    """How every step is judged besides its seeds (rule, field, floor, games): fixed before the first game."""
    steps: list[ClimbStep] = field(default_factory=list)
    shipped: str | None = None
    start: str | None = None
    """Where step 1 starts when not the parent: a line average to go on from (None: the parent)."""

    def settings(self) -> tuple:
        """What a line is continued only with: its parent, training overrides, seed, judging seeds, judging and
        first start."""
        return (self.parent, self.train_overrides, self.seed, self.judge_seeds, self.judging, self.start)

    def save(self, folder: Path) -> None:
        write_json_atomic(folder / RECORD_NAME, asdict(self))

    @classmethod
    def load(cls, folder: Path) -> ClimbRecord | None:
        """The record in `folder`, or None when it holds none."""
        path = folder / RECORD_NAME
        if not path.is_file():
            return None
        data = json.loads(path.read_text())
        steps = [ClimbStep(**step) for step in data.pop("steps")]
        return cls(**data, steps=steps)


def half_way(last_step: int, spacing: int) -> int:
    """The first agent-step of a run's averaged half: half its last checkpoint's step, rounded down to a multiple of
    the checkpoint `spacing` (so that the checkpoint there is kept and averaged), at least `spacing`.

    >>> half_way(56_300_000, 2_000_000)
    28000000
    """
    return max(spacing, last_step // 2 // spacing * spacing)


def step_judge_seeds(seeds: Sequence[int], step: int) -> list[int]:
    """The seeds step `step` (from 1) is judged on: `seeds` moved by SEED_STRIDE per step."""
    return [seed + SEED_STRIDE * (step - 1) for seed in seeds]


def next_start(record: ClimbRecord) -> str:
    """Where the next step's run starts: the parent (or the line's given start), then the first run's average (the
    last candidate where step 1 started from a given line average), then the last candidate."""
    if not record.steps:
        return record.start or record.parent
    last = record.steps[-1]
    if last.step == 1 and record.start is None:
        assert last.run_average is not None
        return last.run_average
    assert last.candidate is not None
    return last.candidate


@dataclass(frozen=True)
class ClimbTools:
    """What the loop calls: train(start, seed, run_name, resume) -> (run folder, last step, stopped); average(specs,
    out, from_step) -> file; judge(candidate, parent, seeds, json_path) -> ships; and, where given, measure."""

    train: Callable[[str, int, str, bool], tuple[Path, int, bool]]
    average: Callable[[Sequence[str], Path, int | None], Path]
    judge: Callable[[str, str, list[int], Path], bool]
    spacing: int
    """The checkpoint spacing the run's half is rounded to (run.keep_every, else run.checkpoint_interval)."""
    measure: Callable[[str, Path], None] | None = None
    """measure(candidate, json_path): its games against the yardstick bots, written to json_path (None: none)."""


def climb(record: ClimbRecord, folder: Path, max_steps: int, tools: ClimbTools) -> ClimbRecord:
    """Run the line in `folder` until a candidate ships or `max_steps` steps are judged, continuing any step the
    record shows unfinished. Returns the record (also saved); a run stopped by a signal stops the line there."""
    folder.mkdir(parents=True, exist_ok=True)
    record.save(folder)
    if record.steps:  # a line stopped between a step's judging and its yardstick games plays those first
        measure_judged(record, record.steps[-1], folder, tools)
    while record.shipped is None:
        if not record.steps or record.steps[-1].ships is not None:
            if len(record.steps) >= max_steps:
                break
            k = len(record.steps) + 1
            record.steps.append(
                ClimbStep(k, next_start(record), record.seed + k - 1, step_judge_seeds(record.judge_seeds, k))
            )
            record.save(folder)
        step = record.steps[-1]
        name = f"step{step.step}"
        if step.run is None:
            resume = (folder / name / "checkpoints").is_dir() and any((folder / name / "checkpoints").iterdir())
            run_dir, last, stopped = tools.train(step.start, step.seed, name, resume)
            if stopped:
                print(f"step {step.step}: the run was stopped; run the same command again to continue it", flush=True)
                return record
            step.run, step.trained_steps = str(run_dir), last
            step.from_step = half_way(last, tools.spacing)
            record.save(folder)
        if step.candidate is None:
            run_average = tools.average([step.run], folder / f"{name}_average.safetensors", step.from_step)
            candidate = tools.average([str(run_average), step.start], folder / f"{name}_candidate.safetensors", None)
            step.run_average, step.candidate, step.averaged_with = str(run_average), str(candidate), step.start
            record.save(folder)
        judged = folder / f"{name}_judged.json"
        step.ships = tools.judge(step.candidate, record.parent, step.judge_seeds, judged)
        step.judged = str(judged)
        if step.ships:
            record.shipped = step.candidate
        record.save(folder)
        print(f"step {step.step}: {step.candidate} {'ships' if step.ships else 'does not ship'}", flush=True)
        measure_judged(record, step, folder, tools)
    return record


def measure_judged(record: ClimbRecord, step: ClimbStep, folder: Path, tools: ClimbTools) -> None:
    """Play a judged step's candidate against the yardstick bots (`tools.measure`) unless it has been, and record
    where its report is. The verdict is already written: these games never change it."""
    if tools.measure is None or step.ships is None or step.yardstick is not None:
        return
    assert step.candidate is not None
    report = folder / f"step{step.step}_yardstick.json"
    tools.measure(step.candidate, report)
    step.yardstick = str(report)
    record.save(folder)
