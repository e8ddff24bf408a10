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
peer   rlgym-learn's LearningCoordinator with rlgym-learn-algos' PPOAgentController and a RocketSim RLGym
       env (DefaultObs, RepeatAction(LookupTableAction(), 8), goal + touch reward, KickoffMutator, GoalCondition,
       NoTouchTimeout 30 s, Timeout 300 s; benchmarks/_peer_rlgym_learn.py, which also holds the configuration
       both sides train), run in a subprocess with a time limit and
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
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rocketrl.infra.bench_child import remove_orphaned_segments, run_script, shm_segments
from rocketrl.infra.bench_report import machine_info, sibling_module

peer_side = sibling_module(__file__, "_peer_rlgym_learn")
"""benchmarks/_peer_rlgym_learn.py: the peer, and the configuration both sides train."""
AGENT_STEPS_PER_ITERATION = peer_side.AGENT_STEPS_PER_ITERATION
PEER_MINIBATCH_SIZE = peer_side.PEER_MINIBATCH_SIZE
HIDDEN = peer_side.HIDDEN
TEAM_SIZE = peer_side.TEAM_SIZE
TICK_SKIP = peer_side.TICK_SKIP
WORKERS = peer_side.WORKERS
WARP_MIN_ROLLOUT_STEPS = 16
"""Rollout steps of the warp-on-CUDA runs at least: thousands of arenas would otherwise collect 50,000 agent-steps in
a few steps, too short a rollout for PPO's advantages."""
TARGETS = {
    "ours_vs_peer_min": 2.0,
    "ours_vs_peer_where": "this 2-core CPU machine, 1v1, the configuration above",
    "agent_steps_per_s_min": 300_000,
    "agent_steps_per_s_where": "16 CPU cores + 1 H100, RocketSim engine",
}


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
    segments_before = shm_segments("psm_*")
    result = run_script(__file__, ["--ours-child", json.dumps(spec)], timeout_s, "ours")
    remove_orphaned_segments(shm_segments("psm_*") - segments_before)  # left behind when stopped at the time limit
    return result


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
        choices=sorted(peer_side.PEER_POLICIES),
        default="idle",
        help="scheduling policy of the peer's env processes (default idle: see peer_adjustments)",
    )
    parser.add_argument("--ours-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ours_child:
        spec = json.loads(args.ours_child)
        result = measure_ours(**spec)
        print(json.dumps(result))
        return result

    import torch

    # SIGTERM runs the `finally` of run_script, so a stopped benchmark takes its child processes with it.
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
        peer = peer_side.measure_peer(iterations, args.peer_timeout or 90.0 + 30.0 * (iterations + 1), args.peer_sched)
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
