"""RayCollection: the Trainer's loop, checkpoints, signals, league and logging, with rollouts from Ray workers
instead of local arenas (`ray_trainer(cfg)` builds that Trainer).

    start:    connect to the cluster, start ray.workers RolloutWorkers, put the weights once
    gather:   launch a rollout on every idle worker, take finished rollouts until every worker has delivered
              one (policy lag = updates now - updates when its weights were sent); a rollout lagging more
              than ray.max_policy_lag updates is dropped (its steps go to dropped_steps, never to
              global_step); a dead worker is replaced
    update:   the bundles side by side in the learner's storage, GAE per agent column (each worker's trajectories
              are contiguous), statistics merged, one PPO update
    publish:  ray.put the new weights once; every later rollout gets that ref

max_policy_lag 0 is synchronous: workers wait during the update, every rollout is on-policy and a resumed
run continues exactly (worker arena generators, RNG and running returns are in the checkpoint). With 1
(the default) workers collect the next rollout during the update; PPO's clipped ratio against the stored
behaviour log-probs corrects that one update of lag, as in asynchronous PPO (APPO).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rocketrl.distributed.batch import ingest, to_numpy, weights_payload
from rocketrl.distributed.pool import Rollout, WorkerPool, connect, import_ray
from rocketrl.env.config import EnvConfig
from rocketrl.infra.checkpoint import load_checkpoint
from rocketrl.league.curriculum import Stage
from rocketrl.league.plan import ArenaPlan
from rocketrl.policy.load import checkpoint_config
from rocketrl.ppo.collection import Collection
from rocketrl.ppo.train_config import TrainConfig
from rocketrl.ppo.train_logger import UpdateReport
from rocketrl.ppo.trainer import Trainer


def gather(
    next_rollout: Callable[[], Rollout],
    launch: Callable[[int], None],
    busy: Callable[[int], bool],
    workers: int,
    version: int,
    max_lag: int,
    agents: int,
) -> tuple[list[Rollout], int, int]:
    """Take finished rollouts until `workers` of them are fresh enough; returns (kept ordered by worker, agent-steps
    dropped, rollouts lost with dead workers).

    Policy lag = `version` (updates so far) - the version a rollout's weights had. Lag > max_lag, or a rollout of
    other than `agents` learner agents (an old curriculum stage), is dropped. A worker is relaunched on the
    current weights when its rollout was lost (a replacement) or dropped, and, when asynchronous
    (max_lag >= 1), as soon as it delivers, so it collects during the update."""
    kept: list[Rollout] = []
    dropped = lost = 0
    while len(kept) < workers:
        rollout = next_rollout()
        if rollout.bundle is None:  # the worker died; its replacement starts on the current weights
            lost += 1
            launch(rollout.worker)
            continue
        fresh = version - rollout.bundle["version"] <= max_lag and rollout.bundle["agents"] == agents
        if (max_lag > 0 or not fresh) and not busy(rollout.worker):
            launch(rollout.worker)
        if not fresh:
            dropped += int(rollout.bundle["steps"])
            continue
        kept.append(rollout)
    return sorted(kept, key=lambda r: (r.worker, r.bundle["version"])), dropped, lost  # type: ignore[index]


def ray_trainer(cfg: TrainConfig, run_dir: Path | None = None) -> Trainer:
    """A Trainer whose rollouts come from Ray workers (run.distributed='ray'); see the module docstring."""
    return Trainer(cfg, run_dir, collection=RayCollection(cfg))


class RayCollection(Collection):
    """Rollouts from ray.workers RolloutWorkers, gathered with bounded policy lag (the module docstring)."""

    def __init__(self, cfg: TrainConfig) -> None:
        """Connects to (or starts) the cluster; the workers start with the trainer's first rollout."""
        if cfg.run.distributed != "ray":
            raise ValueError(f"run.distributed={cfg.run.distributed!r}: RayCollection needs 'ray'")
        self.cfg = cfg
        self.ray = import_ray()
        self._started_ray = connect(cfg.ray)
        self.pool: WorkerPool | None = None
        self.dropped_steps = 0
        """Agent-steps collected but not trained on (too stale, or collected for an old stage)."""
        self.lost_rollouts = 0
        """Rollouts lost with a worker that died (never counted)."""
        self._pending: list[Rollout] = []
        self._weights: Any = None
        self._snapshot_refs: dict[str, Any] = {}
        self._worker_states: list[dict] | None = None
        self._plan: ArenaPlan | None = None
        self._last: dict[str, Any] = {}
        self.default_threads: int | None = None
        """speed.learn_threads when unset and the workers share this machine (ray.address local): the cores
        they leave, so torch's threads do not fight them (oversubscribed, an update can take 20x longer)."""
        if cfg.ray.address == "local":
            spare = (os.cpu_count() or 1) - math.ceil(cfg.ray.workers * cfg.ray.cpus_per_worker)
            self.default_threads = max(1, spare)

    def attach(self, trainer: Any) -> None:
        super().attach(trainer)
        self._size_storage()

    # ------------------------------------------------------------------------------ shapes
    def learner_env_config(self, stage: EnvConfig) -> EnvConfig:
        """The learner keeps one serial arena of the current stage: for verify() and the network's sizes."""
        return dataclasses.replace(stage, num_arenas=1, stepping="serial", num_workers=1)

    def _worker_env_config(self) -> EnvConfig:
        """The arenas of one worker at the current stage (what its plan is made from)."""
        return dataclasses.replace(self.trainer._stage_env_config(), num_arenas=self.cfg.arenas_per_worker)

    def _stage(self) -> Stage | None:
        league = self.trainer.league
        return league.stage(self.cfg.env) if league is not None else None

    @property
    def agents_per_worker(self) -> int:
        env, league = self._worker_env_config(), self.trainer.league
        if league is None:
            return env.num_arenas * (env.blue_size + env.orange_size)
        return league.make_plan(env).num_learners

    @property
    def num_agents(self) -> int:
        """Learner agents of one update: every worker's."""
        return self.cfg.ray.workers * self.agents_per_worker

    def _size_storage(self) -> None:
        league = self.trainer.league
        self.trainer.algorithm.resize(self.num_agents)
        plan = league.make_plan(self._worker_env_config()) if league is not None else None
        self._plan = None if plan is None or plan.pure_selfplay else plan

    def enter_stage(self) -> None:
        """A new curriculum stage: rollouts of the old team sizes are dropped, every worker rebuilds its arenas."""
        if self.pool is not None:
            for rollout in self._pending + self.pool.drain():
                self._drop(rollout)
            self._pending = []
        self.trainer.rebuild_env()
        self._size_storage()
        if self.pool is not None:
            self.pool.stage = self._stage()  # a replacement started from now on builds the new stage's arenas
            self.pool.call_all("enter_stage", self.pool.stage)

    # ------------------------------------------------------------------------------ the loop's hooks
    def start(self) -> None:
        trainer = self.trainer
        self.pool = WorkerPool(self.cfg.ray, trainer.config_dict, trainer.amp_mode)
        self.pool.start(self._stage())
        print(f"{self.cfg.ray.workers} rollout workers ready on {', '.join(sorted(set(self.pool.hosts)))}", flush=True)
        if self._worker_states is not None:
            for actor, state in zip(self.pool.actors, self._worker_states, strict=True):
                self.ray.get(actor.load_state_dict.remote(state))
            self._worker_states = None
        self._publish()
        self.restart()

    def restart(self) -> None:
        assert self.pool is not None
        self._quiesce()
        self.pool.call_all("restart")

    def rollout(self, timings: dict[str, float]) -> int:
        """Gather one rollout per worker (policy lag bounded), side by side into the storage; returns their
        agent-steps."""
        trainer, algorithm = self.trainer, self.trainer.algorithm
        t0 = time.perf_counter()
        self._launch_idle()  # synchronous: every worker; asynchronous: those that were not relaunched
        kept = self._gather()
        t1 = time.perf_counter()
        bundles = [r.bundle for r in kept]
        assert algorithm.storage is not None and algorithm.return_scaler is not None
        ingest(algorithm.storage, [b["arrays"] for b in bundles])  # type: ignore[index]
        algorithm.estimate_advantages()
        steps = 0
        for b in bundles:
            assert b is not None
            for merge, key in (
                (trainer.obs_norm.merge, "obs_moments"),
                (algorithm.return_scaler.rms.merge, "return_moments"),
            ):
                n, mean, var = b[key]
                merge(n, torch.from_numpy(mean), torch.from_numpy(var))  # the observations' raw columns stay raw
            self._record_bundle(b)
            steps += b["steps"]
        trainer.counters.global_step += steps
        for phase in ("env", "copy", "inference", "collect"):
            timings[phase] = float(np.mean([b["timings"][phase] for b in bundles]))  # type: ignore[index]
        timings["wait"], timings["ingest"] = t1 - t0, time.perf_counter() - t1
        lags = [trainer.counters.updates - b["version"] for b in bundles]  # type: ignore[index]
        terms = [b["reward_terms"] for b in bundles]  # type: ignore[index]
        self._last = {
            "lags": lags,
            "reward_terms": {k: float(np.mean([t[k] for t in terms if k in t])) for k in terms[0]} if terms else {},
        }
        return steps

    def after_update(self) -> None:
        """The new weights go into the object store once; the next rollouts get that ref."""
        self._publish()

    # ------------------------------------------------------------------------------ rollouts
    def _gather(self) -> list[Rollout]:
        """One fresh-enough rollout per worker slot (see `gather`)."""
        assert self.pool is not None
        pool = self.pool

        def next_rollout() -> Rollout:
            return self._pending.pop(0) if self._pending else pool.next_rollout()

        kept, dropped, lost = gather(
            next_rollout, self._launch, pool.busy, self.cfg.ray.workers, self.trainer.counters.updates,
            self.cfg.ray.max_policy_lag, self.agents_per_worker,
        )  # fmt: skip
        self.dropped_steps += dropped
        self.lost_rollouts += lost
        return kept

    def _drop(self, rollout: Rollout) -> None:
        if rollout.bundle is not None:
            self.dropped_steps += int(rollout.bundle["steps"])

    def _launch(self, index: int) -> None:
        assert self.pool is not None
        trainer = self.trainer
        league = trainer.league
        names = league.opponent_names(self._plan) if league is not None and self._plan else []
        pool = set(league.pool_names()) if league is not None else set()
        snapshots = {name: self._snapshot_ref(name) for name in set(names) if name in pool}
        self.pool.launch(index, self._weights, trainer.counters.updates, names, snapshots, trainer.progress())

    def _launch_idle(self) -> None:
        assert self.pool is not None
        for index in range(self.cfg.ray.workers):
            if not self.pool.busy(index):
                self._launch(index)

    def _quiesce(self) -> None:
        """Wait for every rollout in flight and keep them for the next update (workers idle afterwards)."""
        if self.pool is not None:
            self._pending += self.pool.drain()

    def _publish(self) -> None:
        self._weights = self.ray.put(weights_payload(self.trainer.algorithm))

    def _snapshot_ref(self, name: str) -> Any:
        """An object ref of a league snapshot's tensors, read from this run's folder once."""
        if name not in self._snapshot_refs:
            league = self.trainer.league
            assert league is not None
            pool = set(league.pool_names())
            for old in [n for n in self._snapshot_refs if n not in pool]:
                del self._snapshot_refs[old]
            entry = next(s for s in league.snapshots if s["name"] == name)
            path = self.trainer.run_dir / entry["path"]
            state, meta = load_checkpoint(path)
            payload = {key: state[key] for key in ("model", "obs_norm") if key in state}
            payload["config"] = checkpoint_config(path, meta)  # a fixed opponent's network may differ from the run's
            self._snapshot_refs[name] = self.ray.put(to_numpy(payload))
        return self._snapshot_refs[name]

    def _record_bundle(self, bundle: dict[str, Any]) -> None:
        """Episode statistics and league outcomes of one worker's rollout."""
        trainer, episodes = self.trainer, bundle["episodes"]
        trainer.counters.episodes += int(len(episodes["returns"]))
        trainer.recent_returns.extend(episodes["returns"].tolist())
        trainer.recent_lengths.extend(episodes["lengths"].tolist())
        trainer.recent_touch_rates.extend(episodes["touch_rates"].tolist())
        league = trainer.league
        if league is not None:
            for name, counts in bundle["outcomes"].items():
                total = league.training_results.setdefault(name, [0, 0, 0])
                for i in range(3):
                    total[i] += counts[i]
                league.rate_training_counts(name, *counts)
            for kind, scores in bundle["recent"].items():
                league.recent[kind].extend(scores)

    # ------------------------------------------------------------------------------ reports and state
    def amend_report(self, report: UpdateReport) -> None:
        report.reward_terms = self._last.get("reward_terms", {})
        lags = self._last.get("lags") or [0]
        report.extra = {
            **report.extra,
            "distributed/policy_lag_mean": float(np.mean(lags)),
            "distributed/policy_lag_max": float(max(lags)),
            "distributed/dropped_steps": float(self.dropped_steps),
            "distributed/lost_rollouts": float(self.lost_rollouts),
            "distributed/replaced_workers": float(self.pool.replaced if self.pool is not None else 0),
        }

    def state_dict(self) -> dict[str, Any]:
        """Every worker's state (taken with no rollout in flight) and the drop counters."""
        workers = None
        if self.pool is not None:
            self._quiesce()
            workers = self.pool.call_all("state_dict")
        return {
            "distributed": {
                "workers": workers,
                "dropped_steps": self.dropped_steps,
                "lost_rollouts": self.lost_rollouts,
                "replaced_workers": self.pool.replaced if self.pool is not None else 0,
            },
        }

    def prepare_load(self, state: dict[str, Any]) -> dict[str, Any]:
        """The learner's per-agent running returns are unused (each worker keeps its own), so a checkpoint of
        another agent count (a single-process run, other workers) loads too."""
        return_scaler = self.trainer.algorithm.return_scaler
        assert return_scaler is not None
        running = return_scaler.running_return
        return {**state, "return_scaler": {**state["return_scaler"], "running_return": torch.zeros_like(running)}}

    def after_load(self, state: dict[str, Any]) -> None:
        self._size_storage()
        saved = state.get("distributed") or {}
        self.dropped_steps = int(saved.get("dropped_steps", 0))
        self.lost_rollouts = int(saved.get("lost_rollouts", 0))
        workers = saved.get("workers")
        # Worker states continue a run exactly when the workers are the same; otherwise workers start fresh.
        self._worker_states = workers if workers is not None and len(workers) == self.cfg.ray.workers else None

    def stop(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    def release(self) -> None:
        if self._started_ray:
            self.ray.shutdown()
            self._started_ray = False

    def describe(self) -> str:
        """One line for the start-up summary."""
        r = self.cfg.ray
        return (
            f"distributed   ray at {r.address}: {r.workers} workers x {self.cfg.arenas_per_worker} arenas "
            f"({r.cpus_per_worker:g} CPUs each), max policy lag {r.max_policy_lag} update(s)"
            + (
                f", learner torch threads {self.default_threads}"
                if self.default_threads and not self.cfg.speed.learn_threads
                else ""
            )
        )
