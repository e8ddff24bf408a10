"""Where the runner's rollouts come from: the part the Trainer takes instead of being subclassed.

The Trainer (ppo/trainer.py) owns the loop, checkpoints, signals, league and logging; a Collection fills the
algorithm's storage with one rollout per update. LocalCollection steps this process's arenas (the default);
distributed/learner.py's RayCollection gathers rollouts from Ray workers. Every hook has a default that does
nothing, so a collection names only what it changes:

    trainer = Trainer(cfg, collection=LocalCollection())
    collection.attach(trainer)      # at the end of Trainer.__init__
    collection.start()              # learn(): before the first rollout
    steps = collection.rollout(timings)          # storage full, GAE done; returns its agent-steps
    collection.after_update()       # after each update, before the league's turn
"""

from __future__ import annotations

from typing import Any

from rocketrl.env.config import EnvConfig
from rocketrl.ppo.train_logger import UpdateReport


class Collection:
    """The hooks the Trainer calls; `trainer` (set by attach) is the Trainer that took this collection."""

    trainer: Any
    default_threads: int | None = None
    """torch CPU threads of a phase whose speed setting is null; None: the count torch started with."""

    def learner_env_config(self, stage: EnvConfig) -> EnvConfig:
        """The arenas this process builds for the curriculum stage's `stage` config (before attach)."""
        return stage

    def attach(self, trainer: Any) -> None:
        """The trainer is built (its league, arenas, algorithm and collector); collect for it from now on."""
        self.trainer = trainer

    @property
    def num_agents(self) -> int:
        """Learner agents of one update (the storage's columns)."""
        return self.trainer.collector.num_agents

    def start(self) -> None:
        """Before the first rollout of learn()."""
        self.restart()

    def restart(self) -> None:
        """Every episode starts afresh (start, checkpoint, new curriculum stage)."""

    def rollout(self, timings: dict[str, float]) -> int:
        """Fill the algorithm's storage with the next rollout (GAE done); add to `timings` (s); returns its
        agent-steps."""
        raise NotImplementedError

    def after_update(self) -> None:
        """After each update, before the league's turn."""

    def enter_stage(self) -> None:
        """A new curriculum stage: the arenas take its team sizes (same network)."""
        self.trainer.rebuild_env()

    def amend_report(self, report: UpdateReport) -> None:
        """Change the update's report before the logger gets it."""

    def state_dict(self) -> dict[str, Any]:
        """Entries this collection adds to a checkpoint (taken before the trainer's own)."""
        return {}

    def prepare_load(self, state: dict[str, Any]) -> dict[str, Any]:
        """The checkpoint state the trainer loads, from the one read."""
        return state

    def after_load(self, state: dict[str, Any]) -> None:
        """After the trainer loaded `state`."""

    def describe(self) -> str | None:
        """One line for the start-up summary; None: nothing to add."""
        return None

    def stop(self) -> None:
        """First step of closing: stop whatever collects apart from this process's arenas."""

    def release(self) -> None:
        """Last step of closing (also when the trainer fails to build): release what this collection holds."""


class LocalCollection(Collection):
    """Rollouts from this process's arenas, through the trainer's RolloutCollector."""

    def restart(self) -> None:
        self._state = self.trainer._restart_episodes()

    def rollout(self, timings: dict[str, float]) -> int:
        """Opponents picked, reward schedules at the current progress, then rollout_steps steps of every arena."""
        trainer = self.trainer
        trainer.learner_env.assign_opponents()
        trainer.env.reward_fn.set_progress(trainer.progress())
        trainer._set_threads(trainer.cfg.speed.rollout_threads)
        self._state = trainer._collect(*self._state, timings)
        return trainer.cfg.ppo.rollout_steps * self.num_agents
