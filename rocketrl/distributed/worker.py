"""RolloutWorker: one Ray actor's arenas, its copy of the policy, and the single-process collection loop.

A plain class (Ray wraps it in pool.py), so it also runs, and is tested, without Ray. Each `collect` call:
load the learner's weights and statistics, let the league's opponents (names picked by the learner) take
their cars, run `RolloutCollector.collect` (the trainer's own loop: normalisation, reward scaling, GAE),
and return one bundle of numpy arrays with the policy version it was collected under.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import rocketrl
from rocketrl.distributed.batch import load_weights, moments_between, pack_rollout, to_tensors
from rocketrl.env.batched import BatchedEnv
from rocketrl.env.config import EnvConfig
from rocketrl.infra.rng import rng_state, set_rng_state
from rocketrl.league.curriculum import Stage
from rocketrl.league.league import League
from rocketrl.policy.base import Policy
from rocketrl.policy.load import policy_from_state
from rocketrl.ppo.algorithm import PPO
from rocketrl.ppo.collector import EpisodeSummary, RolloutCollector
from rocketrl.ppo.train_config import TrainConfig, config_from_dict

PROTOCOL = 1
"""Version of what learner and workers exchange; both sides must agree (with rocketrl's version)."""


def code_version() -> str:
    """What a worker must share with its learner: rocketrl's version and the exchange protocol."""
    return f"rocketrl {rocketrl.__version__} (protocol {PROTOCOL})"


class WorkerLeague(League):
    """The league as a worker sees it: the stage the learner sends, opponents the learner names, snapshot
    weights from the object store (not the learner's disk), and outcomes counted per rollout for the learner.
    It writes no files: no snapshots, evaluations, curriculum or replays happen on a worker."""

    def __init__(self, cfg: TrainConfig, config_dict: dict, stage: Stage, device: torch.device, seed: int) -> None:
        quiet = dataclasses.replace(cfg.league, curriculum=None, replay_top=0, eval_interval=0)
        super().__init__(quiet, Path(os.devnull), device, seed, compile_rule=cfg.speed.compile_rule)
        self.current_stage, self.config_dict = stage, config_dict
        self.snapshot_states: dict[str, dict] = {}
        """Snapshot tensors by name, from the learner, until their policy is built."""

    def stage(self, env: EnvConfig) -> Stage:
        return self.current_stage

    def snapshot_policy(self, name: str) -> Policy:
        if name not in self._snapshot_policies:
            if len(self._snapshot_policies) >= 8:  # keep a few networks in memory
                self._snapshot_policies.pop(next(iter(self._snapshot_policies)))
            state = self.snapshot_states.pop(name)
            config = state.pop("config", None) or self.config_dict  # the snapshot's own (a fixed opponent's may differ)
            self._snapshot_policies[name] = policy_from_state(state, config, self.device)
        return self._snapshot_policies[name]

    def take_outcomes(self) -> tuple[dict[str, list[int]], dict[str, list[float]]]:
        """Training results and recent scores since the last call, for the learner's league to add."""
        results = {k: list(v) for k, v in self.training_results.items()}
        recent = {k: list(v) for k, v in self.recent.items()}
        self.training_results.clear()
        for scores in self.recent.values():
            scores.clear()
        return results, recent


class RolloutWorker:
    """Arenas and policy copy of worker `index`; `generation` counts its replacements."""

    def __init__(
        self,
        config: dict,
        index: int,
        generation: int,
        stage: Stage | None,
        amp: str,
        learner_version: str,
    ) -> None:
        """config: the run's TrainConfig as a dict; stage: the curriculum stage (None: no league); amp: the
        learner's resolved precision ('off' or 'bf16'); learner_version: `code_version()` of the learner."""
        if learner_version != code_version():
            raise RuntimeError(
                f"rollout worker {index} on {socket.gethostname()} runs {code_version()} but the learner runs "
                f"{learner_version}: install the same rocketrl on every node of the Ray cluster (then restart "
                "`ray start` on the nodes that changed)"
            )
        self.cfg = cfg = config_from_dict(config)
        self.index, self.generation = index, generation
        self.device = torch.device("cpu")
        torch.set_num_threads(cfg.speed.rollout_threads or max(1, int(cfg.ray.cpus_per_worker)))
        # A replacement starts from the seeds of the worker it replaces, as a fresh worker of that index (a
        # resumed run's) would: a checkpoint written after a replacement then resumes exactly.
        seed = cfg.run.seed + 7919 * (index + 1)
        torch.manual_seed(seed)
        np.random.seed(seed % 2**32)
        self.league = WorkerLeague(cfg, config, stage, self.device, seed) if stage is not None else None
        speed = dataclasses.replace(cfg.speed, amp=amp if amp in ("off", "bf16") else "off")
        env = BatchedEnv(self._env_config(stage), device=self.device)
        self.algorithm = PPO(
            cfg.ppo,
            cfg.model,
            speed,
            env.obs_size,
            env.action_parser.num_actions,
            discrete=env.action_parser.kind == "discrete",
            device=self.device,
            seed=seed,
        )
        self.collector = RolloutCollector(env, self.league, self.algorithm, self.device)
        self.algorithm.setup_precision()
        self.restart()

    def _env_config(self, stage: Stage | None) -> EnvConfig:
        """cfg.env with this worker's arenas, seed, stepping threads and the stage's team sizes."""
        env, ray = self.cfg.env, self.cfg.ray
        sizes = {} if stage is None else {"blue_size": stage.blue_size, "orange_size": stage.orange_size}
        return dataclasses.replace(
            env,
            num_arenas=self.cfg.arenas_per_worker,
            seed=env.seed + 1_000_003 * (self.index + 1),
            num_workers=env.num_workers or max(1, int(ray.cpus_per_worker)),
            **sizes,
        )

    # ------------------------------------------------------------------------------ the learner's calls
    def ready(self) -> dict[str, Any]:
        """Started: where it runs and its learner agents."""
        return {"host": socket.gethostname(), "pid": os.getpid(), "agents": self.collector.num_agents}

    def restart(self) -> None:
        """Every episode starts afresh (start, checkpoint, new stage)."""
        self.rollout_state = self.collector.restart()

    def enter_stage(self, stage: Stage) -> None:
        """Rebuild the arenas for a new curriculum stage's team sizes (keeping the arena generator)."""
        assert self.league is not None
        self.league.current_stage = stage
        generator = self.collector.env.generator.get_state()
        self.collector.env.close()
        env = BatchedEnv(self._env_config(stage), device=self.device)
        env.generator.set_state(generator)
        self.collector.set_env(env)

    def collect(
        self, weights: dict, version: int, opponents: list[str], snapshots: dict[str, Any], progress: float = 0.0
    ) -> dict[str, Any]:
        """One rollout with the weights of policy `version`; opponents: a policy name per opponent slot;
        snapshots: object refs of snapshot tensors by name (fetched when not cached); progress: the fraction of
        training done (0-1), for the reward weights' schedule."""
        started = time.perf_counter()
        self.collector.env.reward_fn.set_progress(progress)
        ppo = self.algorithm
        assert ppo.return_scaler is not None and ppo.storage is not None
        load_weights(ppo, weights)
        obs_before, ret_before = ppo.obs_norm.state_dict(), ppo.return_scaler.rms.state_dict()
        if self.league is not None and self.collector.plan is not None:
            self._fetch_snapshots(opponents, snapshots)
            self.league.assign_opponents(self.collector.plan, opponents)
        episodes: list[EpisodeSummary] = []
        timings = {"env": 0.0, "copy": 0.0, "inference": 0.0}
        self.rollout_state = self.collector.collect(*self.rollout_state, 0, timings, episodes.append)
        outcomes, recent = self.league.take_outcomes() if self.league is not None else ({}, {})

        def joined(name: str) -> np.ndarray:
            parts = [getattr(e, name) for e in episodes]
            return torch.cat(parts).numpy() if parts else np.zeros(0, dtype=np.float32)

        timings["collect"] = time.perf_counter() - started
        return {
            "worker": self.index,
            "generation": self.generation,
            "version": version,
            "agents": self.collector.num_agents,
            "steps": ppo.cfg.rollout_steps * self.collector.num_agents,
            "arrays": pack_rollout(ppo.storage),
            "obs_moments": moments_between(obs_before, ppo.obs_norm.state_dict()),
            "return_moments": moments_between(ret_before, ppo.return_scaler.rms.state_dict()),
            "episodes": {name: joined(name) for name in ("returns", "lengths", "touch_rates")},
            "outcomes": outcomes,
            "recent": recent,
            "reward_terms": self.collector.env.reward_fn.term_means(),
            "timings": timings,
        }

    def _fetch_snapshots(self, names: list[str], refs: dict[str, Any]) -> None:
        """Snapshot tensors of the named opponents this worker has no network for yet (from the object store)."""
        assert self.league is not None
        missing = [n for n in set(names) if n in refs and n not in self.league._snapshot_policies]
        if missing:
            import ray

            for name, state in zip(missing, ray.get([refs[n] for n in missing]), strict=True):
                self.league.snapshot_states[name] = to_tensors(state)

    # ------------------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint needs to continue this worker exactly: arena generator, RNG, running returns."""
        assert self.algorithm.return_scaler is not None
        return {
            "env_generator": self.collector.env.generator.get_state(),
            "rng": rng_state(),
            "running_return": self.algorithm.return_scaler.running_return.clone(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        assert self.algorithm.return_scaler is not None
        self.collector.env.generator.set_state(state["env_generator"].cpu())
        set_rng_state(state["rng"])
        if tuple(state["running_return"].shape) == tuple(self.algorithm.return_scaler.running_return.shape):
            self.algorithm.return_scaler.running_return.copy_(state["running_return"])

    def close(self) -> None:
        self.collector.env.close()
        if self.league is not None:
            self.league.close()
