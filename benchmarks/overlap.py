"""Overlapping physics with inference: one batch of arenas stepped in sequence against two pipelined halves.

For A arenas (1v1, RocketSim stepping="processes") and an ActorCritic of a given size, it compares
  sequential: one BatchedEnv of A arenas; per step, act on all 2A agents, then env.step,
  pipelined:  two BatchedEnvs of A/2 arenas; per step, wait half 1 -> act on half 1 -> step_async
              half 1 -> wait half 2 -> act on half 2 -> step_async half 2, so the inference (and the
              env layer's rewards and observations) of each half runs while the other half's workers
              simulate. The halves get either half of the workers each ("split") or all of them ("all").
Variants are run in interleaved rounds so that drift in the machine's speed hits them alike; every
round of a pipelined variant fills and drains its pipeline, so no physics runs outside its timing.
It reports agent-steps/s (median over rounds), the ratio pipelined/sequential per configuration in
"ratios" (the median of the paired rounds' ratios), "pays" (ratio >= PAYS_THRESHOLD) per
configuration, and the fraction of the sequential step that inference takes (the most the overlap
could hide) with the speed-up a perfect overlap would give, (inference + rest) / max(inference, rest).
"idle_overlap" shows how much of a step the workers hide when this process sleeps instead of computing.
Prints one JSON object.

    python benchmarks/overlap.py [--arenas 64 256] [--rounds 7] [--steps 10] [--device cpu]
                                 [--torch-threads 1] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import torch

from rocketrl.env.batched import BatchedEnv
from rocketrl.infra.bench_report import machine_info
from rocketrl.policy.actor_critic import ActorCritic

OBS_SIZE = 180
NUM_ACTIONS = 90
MODELS: dict[str, tuple[int, ...]] = {"small": (256, 256), "default": (1024, 512, 256)}
PAYS_THRESHOLD = 1.05
"""Pipelined/sequential ratio from which the overlap counts as paying (below it, within noise)."""


def make_env(arenas: int, workers: int, device: torch.device, seed: int) -> BatchedEnv:
    env = BatchedEnv(
        num_arenas=arenas,
        blue_size=1,
        orange_size=1,
        num_workers=workers,
        stepping="processes",
        seed=seed,
        device=device,
        state_setter={"kickoff": 1.0},
    )
    env.reset()
    return env


def make_act(model: ActorCritic, device: torch.device) -> Callable[[torch.Tensor], torch.Tensor]:
    """obs (A, C, OBS_SIZE) -> sampled discrete actions (A, C)."""

    @torch.inference_mode()
    def act(obs: torch.Tensor) -> torch.Tensor:
        action, _, _, _ = model.act(obs.reshape(-1, OBS_SIZE))
        return action.reshape(obs.shape[0], obs.shape[1])

    return act


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Sequential:
    """One BatchedEnv of all arenas: act on everything, then step; times inference and the rest."""

    def __init__(self, env: BatchedEnv, act: Callable[[torch.Tensor], torch.Tensor]) -> None:
        self.env, self.act = env, act
        self.obs = env.observations
        self.infer_s = 0.0
        self.rest_s = 0.0

    def run(self, steps: int) -> None:
        """`steps` steps of every arena."""
        for _ in range(steps):
            t0 = time.perf_counter()
            actions = self.act(self.obs)
            sync(self.env.device)
            t1 = time.perf_counter()
            self.obs = self.env.step(actions).obs
            t2 = time.perf_counter()
            self.infer_s += t1 - t0
            self.rest_s += t2 - t1


class Pipelined:
    """Two BatchedEnvs of half the arenas each; each half's inference overlaps the other half's physics."""

    def __init__(self, first: BatchedEnv, second: BatchedEnv, act: Callable[[torch.Tensor], torch.Tensor]) -> None:
        self.halves, self.act = (first, second), act

    def run(self, steps: int) -> None:
        """`steps` steps of every arena, filling the pipeline first and draining it at the end, so that
        no physics runs outside the call: act and start half 1, act and start half 2, then per step each
        half waits for its physics, acts and starts its next step while the other half simulates."""
        for env in self.halves:
            env.step_async(self.act(env.observations))
        for _ in range(steps - 1):
            for env in self.halves:
                obs = env.step_wait().obs
                env.step_async(self.act(obs))
        for env in self.halves:
            env.step_wait()


def bench(
    arenas: int, model_name: str, workers: int, rounds: int, steps: int, device: torch.device, seed: int = 0
) -> dict:
    """Rates of the sequential and both pipelined variants for one (arenas, model) configuration."""
    torch.manual_seed(seed)
    model = ActorCritic(OBS_SIZE, NUM_ACTIONS, actor_hidden=MODELS[model_name], critic_hidden=MODELS[model_name])
    model = model.to(device).eval()
    act = make_act(model, device)
    half = arenas // 2
    split_workers = max(1, workers // 2)
    envs: list[BatchedEnv] = []
    try:
        envs.append(make_env(arenas, workers, device, seed))
        for w in (split_workers, workers):
            envs.append(make_env(half, w, device, seed))
            envs.append(make_env(arenas - half, w, device, seed + 1))
        sequential = Sequential(envs[0], act)
        variants: dict[str, Callable[[int], None]] = {"sequential": sequential.run}
        pipelines = ("pipelined_split_workers", "pipelined_all_workers")
        variants[pipelines[0]] = Pipelined(envs[1], envs[2], act).run
        variants[pipelines[1]] = Pipelined(envs[3], envs[4], act).run
        for run in variants.values():  # warm-up
            run(3)
        sequential.infer_s = sequential.rest_s = 0.0
        seconds: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(rounds):
            for name, run in variants.items():
                started = time.perf_counter()
                run(steps)
                sync(device)
                seconds[name].append((time.perf_counter() - started) / steps)
    finally:
        for env in envs:
            env.close()
    agents = arenas * 2
    rates = {name: agents / statistics.median(times) for name, times in seconds.items()}
    infer, rest = sequential.infer_s, sequential.rest_s
    result: dict = {
        "arenas": arenas,
        "agents": agents,
        "model": model_name,
        "hidden": list(MODELS[model_name]),
        "workers_sequential": workers,
        "workers_per_half": {"split_workers": split_workers, "all_workers": workers},
        "agent_steps_per_s": {name: round(rate) for name, rate in rates.items()},
        "sequential_step_ms": round(1000 * (infer + rest) / (rounds * steps), 2),
        "sequential_inference_ms": round(1000 * infer / (rounds * steps), 2),
        "inference_fraction": round(infer / (infer + rest), 3),
        "ideal_ratio": round((infer + rest) / max(infer, rest), 3),
        "ratios": {},
        "ratio_per_round": {},
    }
    for name in pipelines:
        short = name.removeprefix("pipelined_")
        per_round = [s / p for s, p in zip(seconds["sequential"], seconds[name])]
        result["ratios"][short] = round(statistics.median(per_round), 3)
        result["ratio_per_round"][short] = [round(r, 3) for r in per_round]
    return result


def idle_overlap(arenas: int, workers: int, steps: int, device: torch.device, seed: int = 0) -> dict:
    """How much of a step the workers hide when this process idles instead of computing.

    Per step: BatchedEnv.step (ms), then step_async, a sleep as long as the median step so far, and
    step_wait (ms). A sleep takes no CPU, so this is the overlap that inference which does not compete
    for the cores (on a GPU, or on cores of its own) could get; `hidden_fraction` = 1 - wait / step.
    """
    env = make_env(arenas, workers, device, seed)
    generator = torch.Generator().manual_seed(seed)
    step_s, wait_s = [], []
    try:
        for i in range(steps + 2):
            actions = torch.randint(0, NUM_ACTIONS, (arenas, 2), generator=generator)
            started = time.perf_counter()
            env.step(actions)
            stepped = time.perf_counter() - started
            env.step_async(actions)
            time.sleep(statistics.median(step_s) if step_s else stepped)
            started = time.perf_counter()
            env.step_wait()
            waited = time.perf_counter() - started
            if i >= 2:  # warm-up
                step_s.append(stepped)
                wait_s.append(waited)
    finally:
        env.close()
    step_ms, wait_ms = 1000 * statistics.median(step_s), 1000 * statistics.median(wait_s)
    return {
        "arenas": arenas,
        "workers": workers,
        "step_ms": round(step_ms, 2),
        "wait_after_idle_ms": round(wait_ms, 2),
        "hidden_fraction": round(1 - wait_ms / step_ms, 3),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arenas", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="workers of the sequential env")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds per configuration")
    parser.add_argument("--steps", type=int, default=10, help="steps per variant per round")
    parser.add_argument("--device", default="cpu", help="device of the model and the env layer")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch intra-op threads (more than 1 fights the physics workers for the cores on a small CPU)",
    )
    parser.add_argument("--quick", action="store_true", help="64 arenas, 3 rounds of 5 steps: a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.arenas, args.rounds, args.steps = [64], 3, 5
    device = torch.device(args.device)
    torch.set_num_threads(args.torch_threads)
    configs = []
    for arenas in args.arenas:
        for model_name in args.models:
            configs.append(bench(arenas, model_name, args.workers, args.rounds, args.steps, device))
    idle = [idle_overlap(arenas, args.workers, args.rounds * 3, device) for arenas in args.arenas]
    ratios, pays = {}, {}
    for c in configs:
        for variant, ratio in c["ratios"].items():
            key = f"A{c['arenas']}_{c['model']}_{variant}"
            ratios[key] = ratio
            pays[key] = ratio >= PAYS_THRESHOLD
    result = {
        "benchmark": "overlap",
        "machine": machine_info(),
        "torch_threads": torch.get_num_threads(),
        "device": str(device),
        "rounds": args.rounds,
        "steps_per_round": args.steps,
        "pays_threshold": PAYS_THRESHOLD,
        "configs": configs,
        "idle_overlap": idle,
        "ratios": ratios,
        "pays": pays,
        "verdict": (
            "overlap pays in: " + ", ".join(k for k, v in pays.items() if v)
            if any(pays.values())
            else "overlap does not pay in any configuration measured"
        ),
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
