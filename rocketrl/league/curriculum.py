"""Team-size curriculum: stages read from a YAML file, advanced by steps or by a rating gate.

A stage names its team sizes and its opponent mix. It ends when `until_steps` (agent-steps since
the run began) is reached, or when its `gate` holds (`win_rate_vs_rule` and/or `elo`, from the
latest evaluation), whichever comes first; a stage with neither is the last one. One network
serves every stage: the observation is padded for up to 3v3.

    stages:
      - name: 1v1-selfplay
        blue_size: 1
        orange_size: 1
        opponents: {selfplay: 1.0}
        until_steps: 2_000_000
        gate: {win_rate_vs_rule: 0.7}   # optional
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rocketrl.league.config import validate_opponents

GATE_KEYS = ("win_rate_vs_rule", "elo")


@dataclass
class Stage:
    """One curriculum stage."""

    name: str
    blue_size: int = 1
    orange_size: int = 1
    opponents: dict[str, float] = field(default_factory=lambda: {"selfplay": 1.0})
    until_steps: int | None = None
    """Advance once the run reaches this many agent-steps."""
    gate: dict[str, float] = field(default_factory=dict)
    """Advance once every listed measure reaches its value: win_rate_vs_rule (0-1), elo."""

    def validate(self, where: str) -> None:
        if not 1 <= self.blue_size <= 3 or not 0 <= self.orange_size <= 3:
            raise ValueError(
                f"{where}: blue_size must be 1..3 and orange_size 0..3, got {self.blue_size}v{self.orange_size}"
            )
        validate_opponents(self.opponents, f"{where}.opponents")
        if self.until_steps is not None and self.until_steps < 1:
            raise ValueError(f"{where}.until_steps={self.until_steps}: must be positive or left out")
        for key in self.gate:
            if key not in GATE_KEYS:
                raise ValueError(f"{where}.gate.{key} is not a gate; allowed: {', '.join(GATE_KEYS)}")

    def gate_passed(self, measures: dict[str, float]) -> bool:
        """True when a gate is set and every gated measure is present and at least its value."""
        return bool(self.gate) and all(
            key in measures and measures[key] is not None and measures[key] >= value for key, value in self.gate.items()
        )


@dataclass
class Curriculum:
    """Stages in order and where the run is among them."""

    stages: list[Stage]
    index: int = 0
    started_at: int = 0
    """Agent-step at which the current stage began."""
    history: list[dict] = field(default_factory=list)
    """One entry per change: {'step', 'from', 'to', 'reason'}."""

    @property
    def stage(self) -> Stage:
        return self.stages[self.index]

    @property
    def is_last(self) -> bool:
        return self.index == len(self.stages) - 1

    def advance_reason(self, step: int, measures: dict[str, float]) -> str | None:
        """Why the current stage should end now ('steps' or 'gate'), or None to stay."""
        if self.is_last:
            return None
        stage = self.stage
        if stage.until_steps is not None and step >= stage.until_steps:
            return "steps"
        if stage.gate_passed(measures):
            return "gate"
        return None

    def maybe_advance(self, step: int, measures: dict[str, float]) -> str | None:
        """Move to the next stage when due; returns the reason, or None when nothing changed."""
        reason = self.advance_reason(step, measures)
        if reason is None:
            return None
        self.history.append(
            {"step": step, "from": self.stage.name, "to": self.stages[self.index + 1].name, "reason": reason}
        )
        self.index += 1
        self.started_at = step
        return reason

    def state_dict(self) -> dict:
        return {
            "index": self.index,
            "started_at": self.started_at,
            "history": list(self.history),
            "names": [s.name for s in self.stages],
        }

    def load_state_dict(self, state: dict) -> None:
        names = [s.name for s in self.stages]
        if state.get("names") and state["names"] != names:
            raise ValueError(
                f"the checkpoint's curriculum has stages {state['names']} but the config's has {names}; "
                "resume with the curriculum file the run started with"
            )
        self.index = int(state["index"])
        self.started_at = int(state["started_at"])
        self.history = list(state.get("history", []))


def load_curriculum(path: str | Path) -> Curriculum:
    """Read and check a curriculum YAML; errors name the file, the stage and the field."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"league.curriculum={str(path)!r}: no such file (see configs/curriculum.yaml)")
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("stages"), list) or not data["stages"]:
        raise ValueError(f"{path}: expected a mapping with a non-empty list 'stages'")
    allowed = {"name", "blue_size", "orange_size", "opponents", "until_steps", "gate"}
    stages: list[Stage] = []
    for i, raw in enumerate(data["stages"]):
        where = f"{path}: stages[{i}]"
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: expected a mapping of {', '.join(sorted(allowed))}")
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise ValueError(f"{where}.{unknown[0]} is not a stage field; allowed: {', '.join(sorted(allowed))}")
        stage = Stage(
            name=str(raw.get("name", f"stage-{i}")),
            blue_size=int(raw.get("blue_size", 1)),
            orange_size=int(raw.get("orange_size", 1)),
            opponents=dict(raw.get("opponents") or {"selfplay": 1.0}),
            until_steps=None if raw.get("until_steps") is None else int(raw["until_steps"]),
            gate=dict(raw.get("gate") or {}),
        )
        stage.validate(where)
        stages.append(stage)
    for i, (a, b) in enumerate(zip(stages, stages[1:])):
        if a.until_steps is None and not a.gate:
            raise ValueError(f"{path}: stages[{i}] ({a.name}) has neither until_steps nor gate, so it never ends")
        if a.until_steps is not None and b.until_steps is not None and b.until_steps <= a.until_steps:
            raise ValueError(f"{path}: stages[{i + 1}].until_steps must be above stages[{i}].until_steps")
    return Curriculum(stages)
