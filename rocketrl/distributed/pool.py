"""The Ray side: connect to (or start) a cluster, start the rollout workers, wait for their rollouts, and
replace a worker that died (its unfinished rollout was never counted, so no step is lost or counted twice)."""

from __future__ import annotations

import math
import os
import socket
from dataclasses import dataclass
from typing import Any

from rocketrl.distributed.config import RayConfig
from rocketrl.distributed.worker import RolloutWorker, code_version
from rocketrl.league.curriculum import Stage

INSTALL_HINT = 'pip install "rocketrl[distributed]" (or pip install "ray>=2.9")'


def import_ray() -> Any:
    """The ray module, or a RuntimeError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise RuntimeError(f"run.distributed='ray' needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def connect(cfg: RayConfig) -> bool:
    """Join the cluster at ray.address (or start a local one); returns whether this call started Ray (and so
    should shut it down). A head that cannot be reached is a RuntimeError saying how to start one."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    if cfg.address == "local":
        cpus = max(os.cpu_count() or 1, math.ceil(cfg.workers * cfg.cpus_per_worker))
        memory = None if cfg.object_store_mb is None else cfg.object_store_mb * 1024**2
        ray.init(num_cpus=cpus, object_store_memory=memory, include_dashboard=False, log_to_driver=True)
        return True
    try:
        if cfg.address != "auto":
            # Ray's core ends the whole process when it cannot reach the head; ask the port first.
            host, _, port = cfg.address.removeprefix("ray://").rpartition(":")
            socket.create_connection((host, int(port)), timeout=10.0).close()
        ray.init(address=cfg.address, log_to_driver=True)
    except (ConnectionError, OSError, RuntimeError, TimeoutError) as error:
        raise RuntimeError(
            f"ray.address={cfg.address}: cannot reach the Ray cluster ({error}). Start the head node with "
            "`ray start --head --port 6379` and each other node with `ray start --address HEAD_IP:6379`, check that "
            "the port is open between the nodes, or use --ray.address local to run on this machine alone"
        ) from None
    return True


@dataclass
class Rollout:
    """A finished rollout call: the worker, and its bundle (None when the worker died and was replaced)."""

    worker: int
    bundle: dict[str, Any] | None


class WorkerPool:
    """`cfg.ray.workers` RolloutWorker actors, each with at most one rollout in flight."""

    def __init__(self, cfg: RayConfig, config_dict: dict, amp: str) -> None:
        self.ray = import_ray()
        self.cfg, self.config_dict, self.amp = cfg, config_dict, amp
        self.remote = self.ray.remote(num_cpus=cfg.cpus_per_worker, max_restarts=0)(RolloutWorker)
        self.actors: list[Any] = []
        self.generation: list[int] = []
        self.in_flight: dict[Any, int] = {}
        """Object ref of a rollout -> the worker collecting it."""
        self.replaced = 0
        """Workers replaced after they died."""
        self.hosts: list[str] = []
        self.stage: Stage | None = None
        """The curriculum stage workers are started with (the learner updates it at a stage change)."""
        self.pids: list[int] = []
        """Process id of each worker (tests kill one)."""

    # ------------------------------------------------------------------------------ life cycle
    def start(self, stage: Stage | None) -> None:
        """Start every worker and wait until each has built its arenas (ray.start_timeout_s)."""
        self.stage = stage
        self.actors = [self._spawn(i, 0) for i in range(self.cfg.workers)]
        self.generation = [0] * self.cfg.workers
        infos = self._wait_ready(self.actors)
        self.hosts = [info["host"] for info in infos]
        self.pids = [info["pid"] for info in infos]

    def _spawn(self, index: int, generation: int) -> Any:
        return self.remote.remote(self.config_dict, index, generation, self.stage, self.amp, code_version())

    def _wait_ready(self, actors: list[Any]) -> list[dict]:
        ray = self.ray
        try:
            return ray.get([a.ready.remote() for a in actors], timeout=self.cfg.start_timeout_s)
        except ray.exceptions.GetTimeoutError:
            raise RuntimeError(
                f"{len(actors)} rollout worker(s) did not start within "
                f"ray.start_timeout_s={self.cfg.start_timeout_s:g} s; "
                f"each asks for ray.cpus_per_worker={self.cfg.cpus_per_worker:g} CPUs and the cluster has "
                f"{ray.available_resources().get('CPU', 0):g} free of {ray.cluster_resources().get('CPU', 0):g}: "
                "add nodes, lower ray.workers or ray.cpus_per_worker, or raise ray.start_timeout_s"
            ) from None
        except ray.exceptions.RayActorError as error:
            raise RuntimeError(f"a rollout worker failed to start: {_cause(error)}") from None

    def replace(self, index: int) -> None:
        """Start a fresh worker in place of dead worker `index` (its episodes start afresh)."""
        if self.replaced >= self.cfg.max_worker_restarts:
            raise RuntimeError(
                f"rollout worker {index} died and ray.max_worker_restarts={self.cfg.max_worker_restarts} workers "
                "were already replaced; look at the workers' logs (a node out of memory?) or raise the limit"
            )
        self.replaced += 1
        self.generation[index] += 1
        print(f"rollout worker {index} died; starting a replacement ({self.replaced} so far)", flush=True)
        self.actors[index] = self._spawn(index, self.generation[index])
        try:
            info = self.ray.get(self.actors[index].ready.remote(), timeout=self.cfg.start_timeout_s)
        except (self.ray.exceptions.GetTimeoutError, self.ray.exceptions.RayActorError) as error:
            raise RuntimeError(f"the replacement of rollout worker {index} did not start: {_cause(error)}") from None
        self.hosts[index], self.pids[index] = info["host"], info["pid"]

    def shutdown(self) -> None:
        """Stop every worker (their arenas and processes go with them)."""
        for actor in self.actors:
            try:
                self.ray.kill(actor)
            except Exception:  # already gone
                pass
        self.actors, self.in_flight = [], {}

    # ------------------------------------------------------------------------------ calls
    def call_all(self, method: str, *args: Any) -> list[Any]:
        """`method(*args)` on every idle worker, waiting for all; a worker found dead is replaced and called."""
        results: list[Any] = []
        for index in range(len(self.actors)):
            for _ in range(2):
                try:
                    results.append(self.ray.get(getattr(self.actors[index], method).remote(*args)))
                    break
                except self.ray.exceptions.RayActorError:
                    self.replace(index)
            else:
                raise RuntimeError(f"rollout worker {index} died twice in a row during {method}")
        return results

    def launch(
        self, index: int, weights: Any, version: int, opponents: list[str], snapshots: dict, progress: float = 0.0
    ) -> None:
        """Start worker `index` on a rollout with the weights ref of policy `version`, at training `progress`
        (0-1, for the reward weights' schedule)."""
        ref = self.actors[index].collect.remote(weights, version, opponents, snapshots, progress)
        self.in_flight[ref] = index

    def busy(self, index: int) -> bool:
        return index in self.in_flight.values()

    def next_rollout(self) -> Rollout:
        """Wait for the next finished rollout. A worker that died is replaced (bundle None, nothing counted);
        a worker's Python error is raised here. No rollout for ray.start_timeout_s is an error."""
        ray = self.ray
        if not self.in_flight:
            raise RuntimeError("no rollout in flight to wait for")
        ready, _ = ray.wait(list(self.in_flight), num_returns=1, timeout=self.cfg.start_timeout_s)
        if not ready:
            raise RuntimeError(
                f"no rollout arrived within ray.start_timeout_s={self.cfg.start_timeout_s:g} s from "
                f"{len(self.in_flight)} busy workers; cluster CPUs free: {ray.available_resources().get('CPU', 0):g}"
            )
        ref = ready[0]
        index = self.in_flight.pop(ref)
        try:
            return Rollout(index, ray.get(ref))
        except ray.exceptions.RayActorError:
            self.replace(index)
            return Rollout(index, None)

    def drain(self) -> list[Rollout]:
        """Wait for every rollout in flight (workers idle afterwards)."""
        done = []
        while self.in_flight:
            done.append(self.next_rollout())
        return done


def _cause(error: BaseException) -> str:
    """The useful line of a Ray actor error (the worker's own exception message when there is one)."""
    text = str(error)
    for line in reversed(text.splitlines()):
        if "Error:" in line and "RayActorError" not in line:
            return line.strip()
    return text.strip().splitlines()[0] if text.strip() else type(error).__name__


__all__ = ["INSTALL_HINT", "Rollout", "WorkerPool", "connect", "import_ray"]
