"""End-to-end training throughput: rocketrl's PPO trainer against rlgym-learn + rlgym-learn-algos, in one run.

Both sides train the same PPO configuration: 1v1 from kickoffs, tick skip 8, the 90-entry lookup-table
action, actor and critic MLPs [1024, 512, 256], 50,000 agent-steps per iteration, 1 epoch over them in
minibatches of PEER_MINIBATCH_SIZE samples, 2 environment worker processes.

ours   rocketrl.ppo.trainer.Trainer built from rocketrl.config.load_config(None, overrides), run for a
       warm-up iteration and then --iterations timed ones, with torch.set_num_threads 1 and 2 on the CPU
       and once on CUDA when torch sees a GPU, each configuration in a fresh subprocess. Trainer.learn
       reports each update to a logger: agent-steps/s of the update and seconds per stage (env, copy,
       inference, learn); the steady-state figure is the timed updates' agent-steps over their summed wall
       time, and the phase split is each stage's share of the summed stage seconds (outside_stages_share:
       the wall time outside them, e.g. GAE). With CUDA it also trains on the warp engine on the GPU
       (--warp-cuda-arenas), the env, network and update all on the device: rows cuda_warp_arenas_N.
       `--cpu-engines rocketsim,warp` also runs each CPU configuration on the warp engine (rows ..._warp,
       ratios ..._warp_vs_rocketsim); `--profile-learn FILE` trains the last configuration that ran once more under
       torch's profiler (row "profiled").
peer   rlgym-learn's LearningCoordinator with rlgym-learn-algos' PPOAgentController and a RocketSim
       RLGym env (DefaultObs, RepeatAction(LookupTableAction(), 8), goal + touch reward, KickoffMutator,
       GoalCondition, NoTouchTimeout 30 s, Timeout 300 s), run in a subprocess with a time limit and
       stopped, env processes included, as soon as its last iteration is recorded (they cannot hang this
       benchmark). A metrics logger records each iteration's collected agent-steps and wall time as the PPO
       agent controller reports them; the steady-state figure is the timed iterations' agent-steps over
       their wall time, the warm-up iteration left out. The changes it needs to run here are listed in
       "peer_adjustments". Without the packages (the `peer` extra: pip install -e .[peer]) the peer is
       skipped and the JSON says why.

Prints one JSON object: machine, ours {label: {sps, phase_split, ...}}, peer {sps, ...} or {skipped},
ratios {"ours_vs_peer": best of our RocketSim rows / peer, ...} and the targets.

    python benchmarks/train_throughput.py [--quick] [--iterations N] [--threads 1,2] [--arenas 50,100]
        [--amp off,bf16] [--rollout-threads 1,all] [--cpu-engines rocketsim,warp] [--profile-learn FILE]
        [--no-ours] [--no-cuda] [--no-rocketsim-cuda] [--warp-cuda-arenas 4096,16384] [--no-warp-cuda]
        [--no-peer] [--peer-timeout S] [--peer-sched idle|batch|normal]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketrl.infra.bench_report import kill_group, machine_info

AGENT_STEPS_PER_ITERATION = 50_000
PEER_MINIBATCH_SIZE = 50_000
"""rlgym-learn-algos' default PPO minibatch: the whole 50,000-step batch (n_minibatches 1)."""
HIDDEN = [1024, 512, 256]
TEAM_SIZE = 1
WARP_MIN_ROLLOUT_STEPS = 16
"""Rollout steps of the warp-on-CUDA runs at least: thousands of arenas would otherwise collect 50,000 agent-steps in
a few steps, too short a rollout for PPO's advantages."""
TICK_SKIP = 8
WORKERS = 2
TARGETS = {
    "ours_vs_peer_min": 2.0,
    "ours_vs_peer_where": "this 2-core CPU machine, 1v1, the configuration above",
    "agent_steps_per_s_min": 300_000,
    "agent_steps_per_s_where": "16 CPU cores + 1 H100, RocketSim engine",
}
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


# ------------------------------------------------------------------------------------------- ours


def rollout_steps_for(arenas: int) -> int:
    """Steps per agent that make one iteration about AGENT_STEPS_PER_ITERATION agent-steps with `arenas` 1v1s."""
    return max(1, round(AGENT_STEPS_PER_ITERATION / (arenas * 2 * TEAM_SIZE)))


def our_overrides(arenas: int, rollout_steps: int, device: str, engine: str = "rocketsim") -> list[str]:
    """CLI-style overrides of rocketrl's config for the shared PPO configuration (on RocketSim, or on the
    warp engine, which steps on the run's device)."""
    agents = arenas * 2 * TEAM_SIZE
    minibatches = max(1, round(agents * rollout_steps / PEER_MINIBATCH_SIZE))
    hidden = "[" + ",".join(str(width) for width in HIDDEN) + "]"
    return [
        "--env.num-arenas", str(arenas),
        "--env.blue-size", str(TEAM_SIZE),
        "--env.orange-size", str(TEAM_SIZE),
        "--env.tick-skip", str(TICK_SKIP),
        "--env.action", "discrete",
        "--env.num-workers", str(WORKERS),
        "--env.state-setter", "kickoff=1.0",
        "--ppo.rollout-steps", str(rollout_steps),
        "--ppo.epochs", "1",
        "--ppo.minibatches", str(minibatches),
        "--ppo.target-kl", "null",
        "--model.actor-hidden", hidden,
        "--model.critic-hidden", hidden,
        "--run.device", device,
        "--env.engine", engine,
    ]  # fmt: skip


class UpdateRecorder:
    """A logger for Trainer.learn: each update's seconds per stage and agent-steps/s."""

    def __init__(self) -> None:
        self.timings: list[dict[str, float]] = []
        self.sps: list[float] = []

    def log_update(self, report: Any) -> None:
        """report: rocketrl.ppo.train_logger.UpdateReport."""
        self.timings.append(dict(report.timings))
        self.sps.append(float(report.sps))


def measure_ours(
    arenas: int,
    rollout_steps: int,
    iterations: int,
    device: str,
    threads: int | None,
    amp: str = "off",
    rollout_threads: int | None = 1,
    engine: str = "rocketsim",
    profile_path: str | None = None,
) -> dict[str, Any]:
    """Train 1 warm-up + `iterations` updates; steady-state agent-steps/s and the phase split of the timed ones.

    amp: speed.amp (off | bf16 | fp16); rollout_threads: speed.rollout_threads (None: torch's count).
    profile_path: run the whole training under torch's profiler and write its tables there (the operations by
    self device time, then by self CPU time); the rates then include the profiler's cost.
    """
    import torch

    from rocketrl.config import load_config
    from rocketrl.diagnostics.train import NO_NOTICES_ENV_VAR
    from rocketrl.ppo.trainer import Trainer

    if threads is not None:
        torch.set_num_threads(threads)
    updates = iterations + 1
    with tempfile.TemporaryDirectory(prefix="rocketrl-train-throughput-") as tmp:
        run_dir = Path(tmp) / "run"
        run_dir.mkdir()
        batch = arenas * 2 * TEAM_SIZE * rollout_steps
        cfg = load_config(
            None,
            [
                *our_overrides(arenas, rollout_steps, device, engine),
                "--run.timesteps", str(updates * batch),
                "--run.checkpoint-interval", str(100 * updates * batch),
                "--run.logdir", tmp,
                "--run.name", "run",
                "--run.discord-webhook-env", NO_NOTICES_ENV_VAR,
                "--speed.amp", amp,
                "--speed.rollout-threads", "null" if rollout_threads is None else str(rollout_threads),
            ],
        )  # fmt: skip
        recorder = UpdateRecorder()
        started = time.perf_counter()
        trainer = Trainer(cfg, run_dir=run_dir)
        build_s = time.perf_counter() - started
        try:
            if profile_path is None:
                trainer.learn(recorder)
            else:
                _learn_profiled(trainer, recorder, Path(profile_path))
            used_device = str(trainer.device)
        finally:
            trainer.close()
    timed = list(zip(recorder.timings[1:], recorder.sps[1:]))
    seconds = sum(batch / sps for _, sps in timed)
    stages = ("env", "copy", "inference", "learn")
    stage_s = {stage: sum(t.get(stage, 0.0) for t, _ in timed) for stage in stages}
    total = sum(stage_s.values()) or 1.0
    return {
        "device": used_device,
        "engine": engine,
        "torch_threads": torch.get_num_threads(),
        "amp": amp,
        "rollout_threads": rollout_threads,
        "arenas": arenas,
        "rollout_steps": rollout_steps,
        "batch": batch,
        "minibatches": cfg.ppo.minibatches,
        "iterations": len(timed),
        "warmup_iterations": 1,
        "build_s": round(build_s, 2),
        "sps": round(len(timed) * batch / seconds, 1) if seconds else None,
        "sps_per_iteration": [round(sps, 1) for _, sps in timed],
        "warmup_sps": round(recorder.sps[0], 1) if recorder.sps else None,
        "seconds_per_iteration": {stage: round(value / max(1, len(timed)), 3) for stage, value in stage_s.items()},
        "phase_split": {stage: round(value / total, 4) for stage, value in stage_s.items()},
        "outside_stages_share": round(max(0.0, 1 - total / seconds), 4) if seconds else None,
    }


def _learn_profiled(trainer: Any, recorder: UpdateRecorder, path: Path) -> None:
    """trainer.learn under torch.profiler; its tables of operations go to `path`."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    on_cuda = trainer.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_cuda else [])
    with profile(activities=activities) as prof:
        trainer.learn(recorder)
        if on_cuda:
            torch.cuda.synchronize()
    averages = prof.key_averages()
    tables = [averages.table(sort_by="self_cpu_time_total", row_limit=40, max_name_column_width=70)]
    if on_cuda:
        tables.insert(0, averages.table(sort_by="self_cuda_time_total", row_limit=40, max_name_column_width=70))
    path.write_text("\n\n".join(tables) + "\n")


def run_ours_isolated(
    arenas: int,
    rollout_steps: int,
    iterations: int,
    device: str,
    threads: int | None,
    timeout_s: float,
    amp: str = "off",
    rollout_threads: int | None = 1,
    engine: str = "rocketsim",
    profile_path: str | None = None,
) -> dict[str, Any]:
    """measure_ours in a fresh subprocess (a clean torch thread pool and no leftover env workers)."""
    spec = dict(
        profile_path=profile_path,
        arenas=arenas,
        rollout_steps=rollout_steps,
        iterations=iterations,
        device=device,
        threads=threads,
        amp=amp,
        rollout_threads=rollout_threads,
        engine=engine,
    )
    segments_before = _segments("psm_*")
    result = _run_child(["--ours-child", json.dumps(spec)], timeout_s, "ours")
    _remove_orphaned_segments(_segments("psm_*") - segments_before)  # left behind when stopped at the time limit
    return result


# ------------------------------------------------------------------------------------------- peer


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
    segments_before = _segments("shmem_*")
    with tempfile.TemporaryDirectory(prefix="rocketrl-peer-") as workdir:
        results = Path(workdir) / "iterations.jsonl"
        outcome = _run_child(
            ["--peer-child", json.dumps({"iterations": iterations, "results": str(results), "workdir": workdir})],
            timeout_s,
            "peer",
            cwd=workdir,
            expect_json=False,
            extra_env={"OPENBLAS_NUM_THREADS": "1", PEER_SCHED_ENV_VAR: sched},
            done=lambda: results.exists() and len(results.read_text().splitlines()) > iterations,
        )
        lines = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    _remove_orphaned_segments(_segments("shmem_*") - segments_before)
    versions = _versions(("rlgym-learn", "rlgym-learn-algos", "rlgym", "rocketsim"))
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


# ------------------------------------------------------------------------------------------- common


SHM_DIR = Path("/dev/shm")


def _segments(pattern: str) -> set[str]:
    """Names of the shared-memory segments in /dev/shm matching `pattern` (rlgym-learn: shmem_*, ours: psm_*)."""
    return {path.name for path in SHM_DIR.glob(pattern)} if SHM_DIR.is_dir() else set()


def _remove_orphaned_segments(names: set[str]) -> None:
    """Unlink those of `names` that no process maps: what a stopped child left behind."""
    if not names:
        return
    mapped: set[str] = set()
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            text = maps.read_text(errors="replace")
        except OSError:
            continue
        mapped.update(name for name in names if name in text)
    for name in names - mapped:
        (SHM_DIR / name).unlink(missing_ok=True)


def _run_child(
    args: list[str],
    timeout_s: float,
    what: str,
    cwd: str | None = None,
    expect_json: bool = True,
    extra_env: dict[str, str] | None = None,
    done: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Run this script with `args` in its own session, killed (with its children) after `timeout_s`, or as soon
    as `done()` is true (the peer's cleanup joins its env processes without a time limit)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(extra_env or {})}
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        timed_out = finished_early = False
        try:
            while process.poll() is None:
                if done is not None and done():
                    finished_early = True
                    break
                if time.monotonic() >= deadline:
                    timed_out = True
                    break
                time.sleep(0.5)
        finally:
            kill_group(process)  # env processes and anything else the child left behind
            process.wait()
        log.seek(0)
        output = log.read()
    tail = output[-2000:]
    if timed_out:
        return {"error": f"{what}: stopped after the {timeout_s:g} s time limit", "output_tail": tail}
    if finished_early:
        return {}
    failed = {"error": f"{what}: exit status {process.returncode}", "output_tail": tail}
    if not expect_json:
        return {} if process.returncode == 0 else failed
    for line in reversed(output.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return failed


def _versions(names: tuple[str, ...]) -> dict[str, str | None]:
    from importlib import metadata

    found: dict[str, str | None] = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=None, help="timed iterations after 1 warm-up (default 4)")
    parser.add_argument("--quick", action="store_true", help="2 timed iterations: a smoke run")
    parser.add_argument(
        "--arenas",
        default="50",
        help="our arena counts, comma-separated (default 50); rollout steps make each 50,000 agent-steps",
    )
    parser.add_argument(
        "--threads", default="1,2", help="CPU torch thread counts of ours, comma-separated; none: no CPU run"
    )
    parser.add_argument(
        "--amp", default="off,bf16", help="speed.amp settings of our CPU runs, comma-separated (default off,bf16)"
    )
    parser.add_argument(
        "--rollout-threads",
        default="1",
        help="speed.rollout_threads of our CPU runs, comma-separated; 'all': the run's torch thread count",
    )
    parser.add_argument(
        "--cpu-engines",
        default="rocketsim",
        help="engines of our CPU runs, comma-separated: rocketsim, warp (rows of warp end in _warp)",
    )
    parser.add_argument("--no-cuda", action="store_true", help="skip our CUDA runs")
    parser.add_argument(
        "--warp-cuda-arenas",
        default="4096,16384",
        help="with CUDA: also train on the warp engine on the GPU with these arena counts (the whole loop on the GPU)",
    )
    parser.add_argument("--no-warp-cuda", action="store_true", help="skip the warp-on-CUDA runs")
    parser.add_argument(
        "--profile-learn",
        metavar="FILE",
        help="also train the last configuration that ran once more (1 timed iteration) under torch's profiler and "
        "write its tables of operations to FILE (row 'profiled', its rate slowed by the profiler)",
    )
    parser.add_argument(
        "--no-rocketsim-cuda", action="store_true", help="skip the CUDA run on RocketSim arenas (row 'cuda')"
    )
    parser.add_argument("--no-ours", action="store_true", help="measure the peer only")
    parser.add_argument("--no-peer", action="store_true", help="skip the rlgym-learn peer")
    parser.add_argument("--peer-timeout", type=float, default=None, help="seconds before the peer is stopped")
    parser.add_argument(
        "--peer-sched",
        choices=sorted(PEER_POLICIES),
        default="idle",
        help="scheduling policy of the peer's env processes (default idle: see peer_adjustments)",
    )
    parser.add_argument("--ours-child", help=argparse.SUPPRESS)
    parser.add_argument("--peer-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ours_child:
        spec = json.loads(args.ours_child)
        result = measure_ours(**spec)
        print(json.dumps(result))
        return result
    if args.peer_child:
        spec = json.loads(args.peer_child)
        run_peer_child(spec["iterations"], spec["results"], spec["workdir"])
        return {}

    import torch

    # SIGTERM runs the `finally` of _run_child, so a stopped benchmark takes its child processes with it.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    iterations = max(1, args.iterations if args.iterations is not None else (2 if args.quick else 4))
    arena_counts = [int(item) for item in args.arenas.split(",") if item.strip()]
    arenas = arena_counts[0]  # the configuration the CUDA run and the config summary use
    rollout_steps = rollout_steps_for(arenas)
    budget = 120.0 + 120.0 * (iterations + 1)  # seconds per configuration: a guard against hangs only
    thread_counts = [] if args.threads.strip().lower() in ("", "none") else [int(n) for n in args.threads.split(",")]
    ours: dict[str, Any] = {}
    amp_modes = [mode.strip() for mode in args.amp.split(",") if mode.strip()]
    rollout_counts = [item.strip() for item in args.rollout_threads.split(",") if item.strip()]
    engines = [name.strip() for name in args.cpu_engines.split(",") if name.strip()]
    unknown = set(engines) - {"rocketsim", "warp"}
    if unknown:
        parser.error(f"--cpu-engines: {sorted(unknown)} unknown; choose from rocketsim, warp")
    variants = [
        (count, threads, amp, rollout, engine)
        for count in arena_counts
        for threads in thread_counts
        for amp in amp_modes
        for rollout in rollout_counts
        for engine in engines
    ]
    for count, threads, amp, rollout, engine in [] if args.no_ours else variants:
        rollout_threads = threads if rollout == "all" else int(rollout)
        label = f"cpu_threads_{threads}" + ("" if amp == "off" else f"_{amp}")
        label += "" if rollout_threads == 1 else f"_rollout_threads_{rollout_threads}"
        label += "" if len(arena_counts) == 1 else f"_arenas_{count}"
        label += "" if engine == "rocketsim" else f"_{engine}"
        ours[label] = run_ours_isolated(
            count, rollout_steps_for(count), iterations, "cpu", threads, budget, amp, rollout_threads, engine
        )
    if not args.no_ours and not args.no_cuda and torch.cuda.is_available():
        if not args.no_rocketsim_cuda:
            ours["cuda"] = run_ours_isolated(arenas, rollout_steps, iterations, "cuda", None, budget)
        for count in [] if args.no_warp_cuda else [int(n) for n in args.warp_cuda_arenas.split(",") if n.strip()]:
            steps = max(WARP_MIN_ROLLOUT_STEPS, rollout_steps_for(count))
            ours[f"cuda_warp_arenas_{count}"] = run_ours_isolated(
                count, steps, iterations, "cuda", None, budget, engine="warp"
            )
    last = next((entry for entry in reversed(ours.values()) if "rollout_steps" in entry), None)  # one that ran
    if args.profile_learn and last is not None:
        ours["profiled"] = run_ours_isolated(
            last["arenas"], last["rollout_steps"], 1, last["device"].split(":")[0],
            last["torch_threads"] if last["device"] == "cpu" else None, budget, last["amp"], last["rollout_threads"],
            last["engine"], profile_path=str(Path(args.profile_learn).resolve()),
        )  # fmt: skip
        ours["profiled"]["profile"] = args.profile_learn
    if args.no_peer:
        peer: dict[str, Any] = {"skipped": "--no-peer"}
    else:
        peer = measure_peer(iterations, args.peer_timeout or 90.0 + 30.0 * (iterations + 1), args.peer_sched)
    best_label, best = max(  # the peer steps RocketSim: set against our RocketSim rows
        (
            (label, entry["sps"])
            for label, entry in ours.items()
            if entry.get("sps") and entry.get("engine") == "rocketsim" and label != "profiled"
        ),
        key=lambda pair: pair[1],
        default=(None, None),
    )
    ratios: dict[str, float] = {}
    if best and peer.get("sps"):
        ratios["ours_vs_peer"] = round(best / peer["sps"], 3)
    for label, entry in ours.items():  # the same CPU configuration on warp against RocketSim
        twin = ours.get(label.removesuffix("_warp")) if label.endswith("_warp") else None
        if twin and entry.get("sps") and twin.get("sps"):
            ratios[f"{label}_vs_rocketsim"] = round(entry["sps"] / twin["sps"], 3)
    result = {
        "benchmark": "train_throughput",
        "quick": args.quick,
        "machine": machine_info(),
        "config": {
            "team_size": f"{TEAM_SIZE}v{TEAM_SIZE}",
            "tick_skip": TICK_SKIP,
            "action": "90-entry lookup table",
            "actor_hidden": HIDDEN,
            "critic_hidden": HIDDEN,
            "agent_steps_per_iteration": arenas * 2 * TEAM_SIZE * rollout_steps,
            "epochs": 1,
            "minibatch_size": PEER_MINIBATCH_SIZE,
            "workers": WORKERS,
            "our_overrides": our_overrides(arenas, rollout_steps, "<device>"),
        },
        "ours": ours,
        "ours_best": {"label": best_label, "sps": best},
        "peer": peer,
        "ratios": ratios,
        "targets": TARGETS,
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
