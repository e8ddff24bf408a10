"""RayConfig: the ray section of a TrainConfig, rollout workers on a Ray cluster (run.distributed='ray').

Plain data that needs no Ray: `ppo/train_config.py` composes it with the other sections, so this module sits on
the learning floor (tests/test_layers.py) and imports nothing above it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocketrl.typecheck import at_least, check_field_types, positive


@dataclass
class RayConfig:
    """Rollout workers on a Ray cluster (run.distributed='ray'): each worker steps its own arenas with a copy of
    the policy; the learner updates on this process's device and sends the new weights after each update."""

    address: str = "local"
    """local: start a one-machine Ray cluster inside this run; auto: join the cluster started on this host
    with `ray start`; HOST:PORT: the head node of a running cluster (`ray start --head --port PORT`)."""
    workers: int = 2
    """Rollout workers (Ray actors); a dead one is replaced with a fresh one."""
    arenas_per_worker: int | None = None
    """Arenas each worker steps; null: env.num_arenas split evenly over the workers."""
    cpus_per_worker: float = 1.0
    """CPUs Ray reserves for each worker (its arenas step in that many threads or processes)."""
    max_policy_lag: int = 1
    """Updates a rollout may lag behind the learner (0: synchronous, every rollout acts with the newest
    weights; 1: workers collect the next rollout during the update). Older rollouts are dropped."""
    start_timeout_s: float = 300.0
    """Seconds to wait for the workers to start (scheduling and building their arenas) before failing."""
    max_worker_restarts: int = 10
    """Replacements of dead workers before the run stops (with a checkpoint)."""
    object_store_mb: int | None = None
    """Object store size in MiB of a local cluster (address=local); null: Ray's default."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first setting out of range."""
        check_field_types(self, "ray")
        if not self.address.strip():
            raise ValueError("ray.address='': give local, auto or the head node as HOST:PORT")
        if self.address not in ("local", "auto") and not re.fullmatch(r"(ray://)?[^\s:]+:\d+", self.address):
            raise ValueError(
                f"ray.address={self.address!r}: give local, auto or the head node as HOST:PORT (e.g. 10.0.0.1:6379)"
            )
        at_least(self.workers, 1, "ray.workers")
        if self.arenas_per_worker is not None:
            at_least(self.arenas_per_worker, 1, "ray.arenas_per_worker")
        positive(self.cpus_per_worker, "ray.cpus_per_worker")
        at_least(self.max_policy_lag, 0, "ray.max_policy_lag")
        positive(self.start_timeout_s, "ray.start_timeout_s")
        at_least(self.max_worker_restarts, 0, "ray.max_worker_restarts")
        if self.object_store_mb is not None:
            at_least(self.object_store_mb, 64, "ray.object_store_mb")
