"""The learners of a learning benchmark run (trained by `rocketrl.training.train`), or runs trained earlier and
checked before reuse.

A benchmark seed may train several learners one after another (`benchmarks/learn_vs_rule.py --learners L`) and
choose the bot among them all (`rocketrl.eval.selection`). A learner trained earlier by the same command (the same
preset, changes and run seed) can stand in for training it again: its run folder's config.json must match the
config this learner would train with, field by field, and the runs record must hold its training's steps and time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rocketrl.ppo.train_config import TrainConfig, config_to_dict


@dataclass
class Learner:
    """One trained learner of a benchmark run: its run folder, agent-steps and training wall time."""

    seed: int
    run_dir: Path
    steps: int
    train_seconds: float
    reused: bool = False

    def row(self) -> dict:
        return {
            "seed": self.seed,
            "run": str(self.run_dir),
            "steps": self.steps,
            "train_wall_seconds": round(self.train_seconds, 1),
            **({"reused": True} if self.reused else {}),
        }


def learner_seeds(seed: int, count: int) -> list[int]:
    """Run seeds of the benchmark's learners: the benchmark seed alone, or seeds seed*count .. seed*count+count-1
    (so the learners of benchmark seeds 0, 1, 2 with --learners 2 are the runs of seeds 0-1, 2-3, 4-5)."""
    return [seed] if count == 1 else [seed * count + k for k in range(count)]


def portable(value: object) -> object:
    """A config value as it compares between checkouts: a path into the package's configs/ folder (the
    absolute path a config records for a reward file) becomes its part from configs/ on."""
    if isinstance(value, str) and "/rocketrl/configs/" in value:
        return "configs/" + value.rsplit("/rocketrl/configs/", 1)[1]
    return value


def reused_learner(cfg: TrainConfig, run_dir: Path, records: Path) -> Learner:
    """A learner trained earlier: its run folder must hold cfg exactly (run name and logdir aside; files of the
    package's configs/ compare by their place there, `portable`, whatever the checkout) and `records` a record of
    its training (one whose bot is one of its checkpoints: steps and wall time). Raises ValueError saying what
    differs."""
    saved_path = run_dir / "config.json"
    if not saved_path.is_file():
        raise ValueError(f"--learner-runs {run_dir}: no config.json; give a run folder this benchmark trained")
    saved, wanted = json.loads(saved_path.read_text()), json.loads(json.dumps(config_to_dict(cfg)))
    for section, fields in wanted.items():
        for key, value in fields.items():
            if section == "run" and key in ("name", "logdir"):
                continue
            if portable(saved.get(section, {}).get(key)) != portable(value):
                raise ValueError(
                    f"--learner-runs {run_dir}: {section}.{key} is {saved.get(section, {}).get(key)!r} there but "
                    f"{value!r} for this learner (seed {cfg.run.seed}); give the run trained with this preset and seed"
                )
    lines = records.read_text().splitlines() if records.is_file() else []
    mine = [
        record
        for record in (json.loads(line) for line in lines if line.strip())
        if str(record.get("bot", "")).endswith(".safetensors")
        and Path(record["bot"]).parent.parent.resolve() == run_dir.resolve()
        and not record.get("learners")
    ]
    if not mine:
        raise ValueError(f"--learner-runs {run_dir}: no record of its training in {records}")
    record = mine[0]
    return Learner(cfg.run.seed, run_dir, record["steps"], record["train_wall_seconds"], True)
