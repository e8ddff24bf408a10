"""The peer of benchmarks/train_throughput.py: rlgym-learn + rlgym-learn-algos training the same PPO
configuration as ours, and that configuration itself (the constants below, which both sides train).

Run by train_throughput.py in a child process (`python benchmarks/_peer_rlgym_learn.py SPEC_JSON`), where
rlgym-learn's env processes build their env with build_peer_env; measure_peer starts that child and turns
the iterations it records into the peer's figures. Needs the `peer` extra (pip install -e .[peer]).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rocketrl.infra.bench_child import package_versions, remove_orphaned_segments, run_script, shm_segments

AGENT_STEPS_PER_ITERATION = 50_000
PEER_MINIBATCH_SIZE = 50_000
"""rlgym-learn-algos' default PPO minibatch: the whole 50,000-step batch (n_minibatches 1)."""
HIDDEN = [1024, 512, 256]
TEAM_SIZE = 1
TICK_SKIP = 8
WORKERS = 2
PEER_PACKAGES = ("rlgym_learn", "rlgym_learn_algos")
PEER_ADJUSTMENT_SCHED = (
    "env processes run under the {policy} scheduling policy (os.sched_setscheduler in the env-creation "
    "function, which runs in each env process): under the default policy rlgym-learn 2.0.0's env processes "
    "stall for 5 s at a time on a 2-core machine (a wake-up between learner and env process is lost); "
    "SCHED_IDLE processes only get CPU time nobody else wants, so other load on the machine starves them"
)
PEER_ADJUSTMENTS_ALWAYS = [
    "metrics go to an in-process recorder of per-iteration agent-steps and wall time instead of a printing or "
    "wandb logger; checkpoints are disabled (save_every_ts beyond the run)",
    "experience buffer max_size 50,000 (one iteration), so each epoch consumes one 50,000-step batch",
]
PEER_ADJUSTMENT_NO_PIN = (
    "pinned memory off: rlgym-learn-algos 0.4.2 allocates its experience buffer's CPU tensors with "
    "pin_memory=True (util/circular_buffers.py TensorCircularBuffer), which fails with a CPU-only torch; "
    "TensorCircularBuffer.__init__ is wrapped to pass pin_memory=False when CUDA is unavailable"
)


def peer_available() -> str | None:
    """None when rlgym-learn and rlgym-learn-algos import, else why not."""
    import importlib.util

    missing = [name for name in PEER_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        return (
            f"{', '.join(missing)} not installed; pip install -e .[peer] (rlgym-learn>=2.0, rlgym-learn-algos>=0.4.2)"
        )
    return None


PEER_SCHED_ENV_VAR = "ROCKETRL_PEER_SCHED"
"""Scheduling policy of the peer's env processes (idle, batch or normal), passed down to them by environment."""
PEER_POLICIES = {"idle": "SCHED_IDLE", "batch": "SCHED_BATCH", "normal": "SCHED_OTHER"}


def build_peer_env() -> Any:
    """The peer's RLGym RocketSim env; runs inside each rlgym-learn env process."""
    policy = PEER_POLICIES.get(os.environ.get(PEER_SCHED_ENV_VAR, "idle"), "SCHED_IDLE")
    if policy != "SCHED_OTHER":
        try:
            os.sched_setscheduler(0, getattr(os, policy), os.sched_param(0))
        except (AttributeError, OSError):
            pass  # not Linux: run with the default policy
    import numpy as np
    from rlgym.api import RLGym
    from rlgym.rocket_league import common_values
    from rlgym.rocket_league.action_parsers import LookupTableAction, RepeatAction
    from rlgym.rocket_league.done_conditions import (
        AnyCondition,
        GoalCondition,
        NoTouchTimeoutCondition,
        TimeoutCondition,
    )
    from rlgym.rocket_league.obs_builders import DefaultObs
    from rlgym.rocket_league.reward_functions import CombinedReward, GoalReward, TouchReward
    from rlgym.rocket_league.sim import RocketSimEngine
    from rlgym.rocket_league.state_mutators import FixedTeamSizeMutator, KickoffMutator, MutatorSequence

    obs_builder = DefaultObs(
        zero_padding=TEAM_SIZE,
        pos_coef=np.asarray([1 / common_values.SIDE_WALL_X, 1 / common_values.BACK_NET_Y, 1 / common_values.CEILING_Z]),
        ang_coef=1 / np.pi,
        lin_vel_coef=1 / common_values.CAR_MAX_SPEED,
        ang_vel_coef=1 / common_values.CAR_MAX_ANG_VEL,
        boost_coef=1 / 100.0,
    )
    return RLGym(
        state_mutator=MutatorSequence(
            FixedTeamSizeMutator(blue_size=TEAM_SIZE, orange_size=TEAM_SIZE), KickoffMutator()
        ),
        obs_builder=obs_builder,
        action_parser=RepeatAction(LookupTableAction(), repeats=TICK_SKIP),
        reward_fn=CombinedReward((GoalReward(), 10.0), (TouchReward(), 0.1)),
        termination_cond=GoalCondition(),
        truncation_cond=AnyCondition(
            NoTouchTimeoutCondition(timeout_seconds=30.0), TimeoutCondition(timeout_seconds=300.0)
        ),
        transition_engine=RocketSimEngine(),
    )


def _peer_actor_critic(
    obs_space: tuple[str, int], action_space: tuple[str, int], dtype: Any, device: Any, name: str | None
) -> Any:
    """The peer's actor (DiscreteFF) and critic (BasicCritic), both with HIDDEN layers."""
    from rlgym_learn_algos.ppo import BasicCritic, DiscreteFF, SeparateActorCritic

    actor = DiscreteFF(obs_space[1], action_space[1], tuple(HIDDEN), dtype, device)
    critic = BasicCritic(obs_space[1], tuple(HIDDEN), dtype, device)
    return SeparateActorCritic(actor, critic, name)


def _peer_optimizers(actor_critic: Any, group_kwargs: dict[str, dict[str, Any]], name: str | None) -> list[Any]:
    """One Adam over the actor and critic parameter groups (learning rates from the learner config)."""
    import torch

    groups = [
        {"params": actor_critic.actor.parameters(), **group_kwargs.get("actor", {})},
        {"params": actor_critic.critic.parameters(), **group_kwargs.get("critic", {})},
    ]
    return [torch.optim.Adam(groups)]


def _disable_cpu_pinning() -> bool:
    """Wrap rlgym-learn-algos' TensorCircularBuffer so it never pins memory without CUDA; True when wrapped."""
    import torch
    from rlgym_learn_algos.util import circular_buffers

    if torch.cuda.is_available():
        return False
    original = circular_buffers.TensorCircularBuffer.__init__

    def __init__(self: Any, capacity: int, device: Any, pin_memory: bool, forced_dtype: Any) -> None:
        original(self, capacity, device, False, forced_dtype)

    circular_buffers.TensorCircularBuffer.__init__ = __init__  # type: ignore[method-assign]
    return True


def run_peer_child(iterations: int, results_path: str, workdir: str) -> None:
    """Train the peer for 1 warm-up + `iterations` iterations, appending one JSON line per iteration."""
    import numpy as np
    import torch
    from rlgym_learn import (
        BaseConfigModel,
        LearningCoordinator,
        LearningCoordinatorConfigModel,
        ProcessConfigModel,
        SerdeTypesModel,
    )
    from rlgym_learn.pyany_serde import PyAnySerdeType
    from rlgym_learn_algos.ppo import (
        ExperienceBufferConfigModel,
        GAETrajectoryProcessor,
        GAETrajectoryProcessorConfigModel,
        NumpyExperienceBuffer,
        PPOAgentController,
        PPOAgentControllerConfigModel,
        PPOLearnerConfigModel,
        PPOMetricsLogger,
    )

    unpinned = _disable_cpu_pinning()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    total = iterations + 1

    class IterationRecorder(PPOMetricsLogger):
        """Writes each iteration's agent-steps and timings; stops the coordinator after the last one."""

        def __init__(self) -> None:
            super().__init__()
            self.count = 0
            self.coordinator: Any = None
            self.data: Any = None

        def collect_agent_metrics(self, data: Any) -> None:
            self.data = data

        def report_metrics(self) -> None:
            data, self.count = self.data, self.count + 1
            line = {
                "iteration": self.count,
                "agent_steps": data.timesteps_collected,
                "iteration_s": data.iteration_time,
                "collection_s": data.timestep_collection_time,
                "learn_s": data.ppo_data.batch_consumption_time,
                "cumulative_steps": data.cumulative_timesteps,
                "wall": time.time(),
                "device": device,
                "torch_threads": torch.get_num_threads(),
                "unpinned": unpinned,
            }
            with open(results_path, "a") as handle:
                handle.write(json.dumps(line) + "\n")
            if self.count >= total and self.coordinator is not None:
                self.coordinator.config.base_config.timestep_limit = 0  # the loop ends after this step

    space = PyAnySerdeType.TUPLE((PyAnySerdeType.STRING(), PyAnySerdeType.INT()))
    config = LearningCoordinatorConfigModel(
        base_config=BaseConfigModel(
            serde_types=SerdeTypesModel(
                agent_id_serde_type=PyAnySerdeType.STRING(),
                action_serde_type=PyAnySerdeType.NUMPY(np.int64),
                obs_serde_type=PyAnySerdeType.NUMPY(np.float64),
                reward_serde_type=PyAnySerdeType.FLOAT(),
                obs_space_serde_type=space,
                action_space_serde_type=space,
            ),
            timestep_limit=10 * total * AGENT_STEPS_PER_ITERATION,
            flinks_folder=os.path.join(workdir, "shmem_flinks"),
        ),
        process_config=ProcessConfigModel(n_proc=WORKERS),
        agent_controller_config=PPOAgentControllerConfigModel(
            timesteps_per_iteration=AGENT_STEPS_PER_ITERATION,
            save_every_ts=100 * total * AGENT_STEPS_PER_ITERATION,
            save_mid_iteration_data_in_checkpoint=False,
            learner_config=PPOLearnerConfigModel(
                n_epochs=1,
                batch_size=AGENT_STEPS_PER_ITERATION,
                n_minibatches=AGENT_STEPS_PER_ITERATION // PEER_MINIBATCH_SIZE,
                ent_coef=0.01,
                device=device,
            ),
            experience_buffer_config=ExperienceBufferConfigModel(
                max_size=AGENT_STEPS_PER_ITERATION,
                device=device,
                trajectory_processor_config=GAETrajectoryProcessorConfigModel(),
                save_experience_buffer_in_checkpoint=False,
            ),
        ),
        agent_controller_save_folder=os.path.join(workdir, "checkpoints"),
    )
    recorder = IterationRecorder()
    controller = PPOAgentController(
        actor_critic_factory=_peer_actor_critic,
        optimizers_factory=_peer_optimizers,
        experience_buffer=NumpyExperienceBuffer(GAETrajectoryProcessor()),
        metrics_logger=recorder,
        obs_standardizer=None,
    )
    coordinator = LearningCoordinator(build_peer_env, agent_controller=controller, config=config)
    recorder.coordinator = coordinator
    coordinator.start()


def measure_peer(iterations: int, timeout_s: float, sched: str = "idle") -> dict[str, Any]:
    """The peer's steady-state agent-steps/s from a subprocess, or {skipped: why} / {error: ...}."""
    why = peer_available()
    if why is not None:
        return {"skipped": why}
    segments_before = shm_segments("shmem_*")
    with tempfile.TemporaryDirectory(prefix="rocketrl-peer-") as workdir:
        results = Path(workdir) / "iterations.jsonl"
        outcome = run_script(
            __file__,
            [json.dumps({"iterations": iterations, "results": str(results), "workdir": workdir})],
            timeout_s,
            "peer",
            cwd=workdir,
            expect_json=False,
            extra_env={"OPENBLAS_NUM_THREADS": "1", PEER_SCHED_ENV_VAR: sched},
            done=lambda: results.exists() and len(results.read_text().splitlines()) > iterations,
        )
        lines = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    remove_orphaned_segments(shm_segments("shmem_*") - segments_before)
    versions = package_versions(("rlgym-learn", "rlgym-learn-algos", "rlgym", "rocketsim"))
    policy = PEER_POLICIES[sched]
    adjustments = list(PEER_ADJUSTMENTS_ALWAYS)
    if policy != "SCHED_OTHER":
        adjustments.insert(0, PEER_ADJUSTMENT_SCHED.format(policy=policy))
    import torch

    if not torch.cuda.is_available():  # the child wraps TensorCircularBuffer in the same case
        adjustments.insert(1, PEER_ADJUSTMENT_NO_PIN)
    timed = lines[1:]
    result: dict[str, Any] = {
        "versions": versions,
        "env_process_policy": policy,
        "timeout_s": timeout_s,
        "peer_adjustments": adjustments,
    }
    if not timed:
        result["error"] = outcome.get("error", "no timed iteration finished")
        result["iterations"] = 0
        result["warmup_finished"] = bool(lines)
        if "output_tail" in outcome:
            result["output_tail"] = outcome["output_tail"][-600:]
        return result
    steps = sum(line["agent_steps"] for line in timed)
    seconds = sum(line["iteration_s"] for line in timed)
    collection = sum(line["collection_s"] for line in timed)
    learn = sum(line["learn_s"] for line in timed)
    result.update(
        device=timed[0]["device"],
        torch_threads=timed[0]["torch_threads"],
        workers=WORKERS,
        batch=AGENT_STEPS_PER_ITERATION,
        minibatch=PEER_MINIBATCH_SIZE,
        iterations=len(timed),
        warmup_iterations=1,
        sps=round(steps / seconds, 1),
        sps_per_iteration=[round(line["agent_steps"] / line["iteration_s"], 1) for line in timed],
        warmup_sps=round(lines[0]["agent_steps"] / lines[0]["iteration_s"], 1),
        phase_split={
            "collection": round(collection / seconds, 4),
            "learn": round(learn / seconds, 4),
            "other": round(max(0.0, 1 - (collection + learn) / seconds), 4),
        },
    )
    if len(timed) < iterations:
        result["note"] = f"{len(timed)} of {iterations} timed iterations finished: {outcome.get('error', '')}"
    return result


if __name__ == "__main__":
    spec = json.loads(sys.argv[1])
    run_peer_child(spec["iterations"], spec["results"], spec["workdir"])
