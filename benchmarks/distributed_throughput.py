"""Distributed training throughput on a local Ray cluster, beside the single-process trainer, the learner's ingest
ceiling, and a model of where a cluster saturates.

Measured here (1v1 self-play, RocketSim, `--arenas` arenas per worker, ppo.rollout_steps 64, base.yaml's
network unless --small):
  single         Trainer in one process (stepping serially, like each worker) with the arenas of 1 and of 2
                 workers: agent-steps/s over the timed updates
  distributed    a Trainer with RayCollection, 1 and 2 workers (ray.max_policy_lag 1, 1 CPU each): agent-steps/s,
                 each worker's own collection rate (agent-steps per second of its rollout call), policy lag
  ingest         the learner alone on synthetic rollout bundles of `--ceiling-workers` workers: copy into the
                 storage, PPO update, weights put into the object store; agent-steps/s it could train
                 (its ceiling), on the CPU and, when there is one, on CUDA
Without CUDA the GPU learner's ceiling is estimated (`gpu_estimate`: the measured host ingest plus an assumed
copy rate and achieved TFLOP/s, both printed).
Modelled (the "model" entry; its inputs are named in it): W workers of 16 cores each deliver
W x 16 x (one worker's measured rate per core) agent-steps/s (linear in cores: an assumption, RocketSim
steps arenas in independent processes); with a lag of 1 collection overlaps the update, so throughput is
min(workers' supply, learner ceiling, network ceiling), the network ceiling being the link's bytes/s over
the bytes a rollout bundle carries per agent-step. Prints one JSON object.

    python benchmarks/distributed_throughput.py [--arenas 16] [--updates 6] [--workers 1 2] [--quick]
                                                [--network-gbps 10] [--out docs/distributed_throughput.json]
                                                [--plot docs/distributed_throughput.png]
    python benchmarks/distributed_throughput.py --plot-from docs/distributed_throughput.json --plot PNG

`--plot` draws the measured rates and the model's curves (needs matplotlib, the `plot` extra); `--plot-from`
draws them from an earlier report without measuring.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
import torch

from rocketrl.config import base_config_path, load_config
from rocketrl.distributed.batch import ingest, pack_rollout, weights_payload
from rocketrl.infra.bench_report import emit_report, machine_info
from rocketrl.ppo.algorithm import PPO
from rocketrl.ppo.train_logger import UpdateReport
from rocketrl.ppo.trainer import Trainer

CORES_PER_WORKER = 16
CLUSTERS = (8, 32, 128)


class Timer:
    """A logger that keeps each update's report and wall time."""

    def __init__(self) -> None:
        self.reports: list[UpdateReport] = []
        self.times: list[float] = []

    def log_update(self, report: UpdateReport) -> None:
        self.reports.append(report)
        self.times.append(time.perf_counter())

    def rate(self, warmup: int) -> float:
        """Agent-steps/s between the end of update `warmup` and the last one."""
        steps = self.reports[-1].step - self.reports[warmup - 1].step
        return steps / (self.times[-1] - self.times[warmup - 1])


def overrides(args: argparse.Namespace, arenas: int, logdir: str, name: str) -> list[str]:
    small = ["--model.actor-hidden", "64,64", "--model.critic-hidden", "64,64"] if args.small else []
    return [
        "--env.num-arenas", str(arenas), "--env.num-workers", "1", "--env.stepping", args.stepping,
        "--run.device", "cpu", "--run.logdir", logdir, "--run.name", name,
        "--run.timesteps", str(args.updates * arenas * 2 * 64), "--run.checkpoint-interval", str(10**12),
        "--speed.rollout-threads", "1", "--speed.learn-threads", "1", *small,
    ]  # fmt: skip


def measure_single(args: argparse.Namespace, logdir: str, arenas: int) -> dict:
    cfg = load_config(base_config_path(), overrides(args, arenas, logdir, f"single{arenas}"))
    timer = Timer()
    trainer = Trainer(cfg)
    try:
        trainer.learn(timer)
    finally:
        trainer.close()
    return {"arenas": arenas, "agent_steps_per_s": round(timer.rate(args.warmup))}


def measure_distributed(args: argparse.Namespace, logdir: str, workers: int) -> dict:
    from rocketrl.distributed.learner import ray_trainer

    arenas = args.arenas * workers
    extra = ["--run.distributed", "ray", "--ray.workers", str(workers), "--ray.arenas-per-worker", str(args.arenas)]
    cfg = load_config(base_config_path(), overrides(args, arenas, logdir, f"ray{workers}") + extra)
    timer = Timer()
    trainer = ray_trainer(cfg)
    try:
        trainer.learn(timer)
    finally:
        trainer.close()
    late = timer.reports[args.warmup :]
    per_worker = [args.arenas * 2 * 64 / r.timings["collect"] for r in late]
    return {
        "workers": workers,
        "arenas_per_worker": args.arenas,
        "agent_steps_per_s": round(timer.rate(args.warmup)),
        "worker_collect_agent_steps_per_s": round(statistics.median(per_worker)),
        "learner_wait_s_median": round(statistics.median(r.timings["wait"] for r in late), 4),
        "learn_s_median": round(statistics.median(r.timings["learn"] for r in late), 4),
        "policy_lag_max": max(r.extra["distributed/policy_lag_max"] for r in late),
        "dropped_steps": trainer.collection.dropped_steps,
    }


def measure_ingest(args: argparse.Namespace, device: torch.device) -> dict:
    """The learner alone: synthetic bundles of `ceiling_workers` workers -> storage -> update -> ray.put."""
    import ray

    cfg = load_config(base_config_path(), overrides(args, args.arenas, "/tmp", "ingest"))
    agents, workers = args.arenas * 2, args.ceiling_workers
    ppo = PPO(cfg.ppo, cfg.model, cfg.speed, 180, 90, True, device, seed=0)
    ppo.resize(agents)
    assert ppo.storage is not None
    generator = torch.Generator(device=device).manual_seed(0)
    for name in ("obs", "logprobs", "values", "advantages", "returns"):
        getattr(ppo.storage, name).normal_(generator=generator)
    ppo.storage.actions.random_(0, 90, generator=generator)
    bundle = {k: np.ascontiguousarray(v) for k, v in pack_rollout(ppo.storage).items()}
    bytes_per_step = sum(v.nbytes for v in bundle.values()) / (64 * agents)
    refs = [ray.put(bundle) for _ in range(workers)]
    ppo.resize(agents * workers)
    times: dict[str, list[float]] = {"ingest": [], "update": [], "publish": []}
    if device.type == "cuda":
        torch.cuda.synchronize()
    for _ in range(args.ceiling_rounds):
        t0 = time.perf_counter()
        ingest(ppo.storage, ray.get(refs))
        t1 = time.perf_counter()
        ppo.update(0.5)
        if device.type == "cuda":
            torch.cuda.synchronize()
        t2 = time.perf_counter()
        ray.put(weights_payload(ppo))
        t3 = time.perf_counter()
        for key, seconds in zip(times, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            times[key].append(seconds)
    medians = {k: statistics.median(v) for k, v in times.items()}
    steps = 64 * agents * workers
    params = sum(p.numel() for p in ppo.model.parameters())
    return {
        "device": str(device),
        "parameters": params,
        "epochs": cfg.ppo.epochs,
        "batch_agent_steps": steps,
        **{f"{k}_s_median": round(v, 4) for k, v in medians.items()},
        "agent_steps_per_s": round(steps / sum(medians.values())),
        "bundle_bytes_per_agent_step": round(bytes_per_step, 1),
    }


def gpu_estimate(cpu: dict, tflops: float, h2d_gbps: float) -> dict:
    """A GPU learner's ceiling when none was measured: the host's measured ingest and publish, the bundle's copy
    to the GPU at `h2d_gbps` GB/s, and the update at `tflops` achieved TFLOP/s (6 FLOPs per parameter per sample
    and epoch: forward 2, backward 4). Both rates are assumptions, named in the result."""
    steps = cpu["batch_agent_steps"]
    update = steps * cpu["epochs"] * 6 * cpu["parameters"] / (tflops * 1e12)
    copy = steps * cpu["bundle_bytes_per_agent_step"] / (h2d_gbps * 1e9)
    seconds = cpu["ingest_s_median"] + copy + update + cpu["publish_s_median"]
    return {
        "device": "cuda (estimated, not measured)",
        "assumed_achieved_tflops": tflops,
        "assumed_host_to_device_gb_per_s": h2d_gbps,
        "update_s": round(update, 4),
        "copy_to_device_s": round(copy, 4),
        "agent_steps_per_s": round(steps / seconds),
    }


def model(per_core: float, ceilings: dict[str, float | None], bytes_per_step: float, gbps: float) -> dict:
    """Saturation of W workers of 16 cores for each learner ceiling (see the module docstring)."""
    network = gbps * 1e9 / 8 / bytes_per_step
    out: dict = {
        "inputs": {
            "worker_agent_steps_per_s_per_core": round(per_core),
            "cores_per_worker": CORES_PER_WORKER,
            "network_gbps": gbps,
            "network_ceiling_agent_steps_per_s": round(network),
            "learner_ceilings_agent_steps_per_s": {k: None if v is None else round(v) for k, v in ceilings.items()},
            "assumes": "collection linear in cores; lag 1 overlaps collection with the update",
        }
    }
    for learner, ceiling in ceilings.items():
        rows = []
        for workers in CLUSTERS:
            supply = workers * CORES_PER_WORKER * per_core
            limits = {"workers": supply, "network": network}
            if ceiling is not None:
                limits["learner"] = ceiling
            bottleneck = min(limits, key=limits.__getitem__)
            rows.append(
                {
                    "workers": workers,
                    "supply_agent_steps_per_s": round(supply),
                    "agent_steps_per_s": round(limits[bottleneck]),
                    "bottleneck": bottleneck,
                    "worker_utilisation": round(min(1.0, limits[bottleneck] / supply), 3),
                }
            )
        out[f"{learner}_learner"] = rows
    return out


def saturation(per_core: float, ceiling: float | None, network: float, workers: np.ndarray) -> np.ndarray:
    """(W,) modelled agent-steps/s of `workers` 16-core workers: min(supply, learner ceiling, network)."""
    rate = np.minimum(workers * CORES_PER_WORKER * per_core, network)
    return rate if ceiling is None else np.minimum(rate, ceiling)


def plot_report(report: dict, path: Path) -> None:
    """Two panels as a PNG: the measured agent-steps/s on this machine (single process, 1..N workers, the CPU
    learner's ceiling) and the model's throughput against the number of 16-core workers per learner."""
    try:
        import matplotlib
    except ImportError as exc:
        raise SystemExit("--plot needs matplotlib: pip install -e .[plot]") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    inputs = report["model"]["inputs"]
    per_core = inputs["worker_agent_steps_per_s_per_core"]
    network = inputs["network_ceiling_agent_steps_per_s"]
    ceilings = inputs["learner_ceilings_agent_steps_per_s"]
    fig, (measured, modelled) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [1, 1.5]})

    labels, rates, colours = [], [], []
    for run in report["single"]:
        labels.append(f"1 process\n{run['arenas']} arenas")
        rates.append(run["agent_steps_per_s"])
        colours.append("tab:gray")
    for run in report["distributed"]:
        plural = "s" if run["workers"] > 1 else ""
        labels.append(f"{run['workers']} worker{plural}\n{run['arenas_per_worker']} arenas\neach")
        rates.append(run["agent_steps_per_s"])
        colours.append("tab:blue")
    bars = measured.bar(range(len(rates)), rates, color=colours)
    measured.bar_label(bars, labels=[f"{r:,}" for r in rates], fontsize=8)
    measured.set_xticks(range(len(rates)), labels, fontsize=8)
    measured.set_ylabel("agent-steps/s")
    cpu_ceiling = ceilings.get("cpu")
    measured.set_title(
        f"measured on this machine ({report['machine'].get('cpus', '?')} cores)\n"
        f"CPU learner alone could train {cpu_ceiling:,}/s",
        fontsize=9,
    )

    workers = np.unique(np.round(np.logspace(0, np.log10(256), 200)).astype(int))
    supply = workers * CORES_PER_WORKER * per_core
    modelled.loglog(workers, supply, ":", color="tab:gray", label=f"workers' supply ({per_core:,}/s per core)")
    modelled.axhline(network, color="tab:red", lw=0.8, ls="--", label=f"{inputs['network_gbps']:g} Gbit/s link")
    styles = {"cpu": ("tab:blue", "CPU learner (measured ceiling)"), "gpu": ("tab:green", "GPU learner")}
    gpu_device = str(report["ingest"][-1].get("device", ""))
    gpu_measured = gpu_device.startswith("cuda") and "estimated" not in gpu_device
    for name, ceiling in ceilings.items():
        colour, label = styles.get(name, ("tab:purple", name))
        if name == "gpu":
            label += " (measured ceiling)" if gpu_measured else " (estimated ceiling)"
        modelled.loglog(workers, saturation(per_core, ceiling, network, workers), color=colour, lw=2, label=label)
        for row in report["model"].get(f"{name}_learner", []):
            modelled.plot(row["workers"], row["agent_steps_per_s"], "o", color=colour)
    modelled.set_xlabel(f"workers ({CORES_PER_WORKER} cores each)")
    modelled.set_ylabel("agent-steps/s")
    modelled.set_title("model: throughput = min(workers' supply, learner ceiling, link)", fontsize=9)
    modelled.grid(True, which="both", alpha=0.3)
    modelled.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arenas", type=int, default=16, help="arenas per worker (and of the single run)")
    parser.add_argument("--updates", type=int, default=6, help="updates per run (the first --warmup untimed)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--stepping", default="serial", help="env.stepping of every run (one CPU each)")
    parser.add_argument("--small", action="store_true", help="64x64 networks instead of base.yaml's 256x256")
    parser.add_argument("--ceiling-workers", type=int, default=8, help="bundles per update in the ingest test")
    parser.add_argument("--ceiling-rounds", type=int, default=3)
    parser.add_argument("--network-gbps", type=float, default=10.0, help="link into the learner, Gbit/s")
    parser.add_argument("--gpu-tflops", type=float, default=20.0, help="achieved TFLOP/s assumed without CUDA here")
    parser.add_argument("--h2d-gbps", type=float, default=10.0, help="host-to-GPU GB/s assumed without CUDA here")
    parser.add_argument("--quick", action="store_true", help="tiny settings, to check the script runs")
    parser.add_argument("--out", default=None)
    parser.add_argument("--plot", type=Path, default=None, help="also draw the report as a PNG here (matplotlib)")
    parser.add_argument("--plot-from", type=Path, default=None, help="no measuring: draw this earlier report")
    args = parser.parse_args()
    if args.plot_from is not None:
        if args.plot is None:
            parser.error("--plot-from needs --plot PNG: where to draw it")
        plot_report(json.loads(args.plot_from.read_text()), args.plot)
        print(json.dumps({"plot": str(args.plot), "from": str(args.plot_from)}))
        return
    if args.quick:
        args.arenas, args.updates, args.warmup, args.small = 2, 3, 1, True
        args.ceiling_workers, args.ceiling_rounds = 2, 1
    import ray

    ray.init(num_cpus=max(2, max(args.workers)), include_dashboard=False, log_to_driver=False)
    try:
        with TemporaryDirectory() as logdir:
            single = [measure_single(args, logdir, args.arenas * w) for w in args.workers]
            distributed = [measure_distributed(args, logdir, w) for w in args.workers]
        ingest_cpu = measure_ingest(args, torch.device("cpu"))
        ingest_gpu = measure_ingest(args, torch.device("cuda")) if torch.cuda.is_available() else None
    finally:
        ray.shutdown()
    per_core = statistics.median(d["worker_collect_agent_steps_per_s"] for d in distributed)
    gpu = ingest_gpu or gpu_estimate(ingest_cpu, args.gpu_tflops, args.h2d_gbps)
    ceilings = {"cpu": ingest_cpu["agent_steps_per_s"], "gpu": gpu["agent_steps_per_s"]}
    report = {
        "benchmark": "distributed_throughput",
        "machine": machine_info(),
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "plot", "plot_from")},
        "single": single,
        "distributed": distributed,
        "ingest": [ingest_cpu, gpu],
        "model": model(per_core, ceilings, ingest_cpu["bundle_bytes_per_agent_step"], args.network_gbps),
        "notes": (
            "without a CUDA device the gpu learner ceiling is an estimate (its assumptions are in ingest[1]); "
            "agent-steps/s of the runs are wall-clock rates between the end of the warm-up and the last update"
        ),
    }
    emit_report(report, args.out)
    if args.plot is not None:
        plot_report(report, args.plot)


if __name__ == "__main__":
    main()
