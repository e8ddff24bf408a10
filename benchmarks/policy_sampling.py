"""Sampling speed of the lookup-table policy head: rocketrl's DiscreteDistribution against torch's Categorical.

What a rollout does per acting call, after the network: build the distribution from the logits, sample an action
per agent and take its log-probability (acting); and what an update does per minibatch: log-probability and
entropy of stored actions (evaluating). Both ways are timed on the same logits, interleaved round by round, so the
machine's drift hits both alike; the figure is the median of the per-round ratios Categorical / ours.

    python benchmarks/policy_sampling.py [--batches 64,150,1024] [--actions 90] [--rounds 15] [--threads 1]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import torch
from torch.distributions import Categorical

from rocketrl.infra.bench_report import machine_info
from rocketrl.policy.discrete import DiscreteDistribution


def seconds_per_call(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def measure(batch: int, actions: int, rounds: int, calls: int) -> dict:
    """Per-call microseconds (medians over rounds) and the median ratio Categorical / ours, acting and evaluating."""
    logits = torch.randn(batch, actions, generator=torch.Generator().manual_seed(batch))
    taken = torch.randint(0, actions, (batch,), generator=torch.Generator().manual_seed(1))

    def act_categorical() -> object:
        dist = Categorical(logits=logits)
        action = dist.sample()
        return dist.log_prob(action)

    def act_ours() -> object:
        dist = DiscreteDistribution(logits)
        action = dist.sample()
        return dist.log_prob(action)

    def evaluate_categorical() -> object:
        dist = Categorical(logits=logits)
        return dist.log_prob(taken), dist.entropy()

    def evaluate_ours() -> object:
        dist = DiscreteDistribution(logits)
        return dist.log_prob(taken), dist.entropy()

    pairs = {"act": (act_categorical, act_ours), "evaluate": (evaluate_categorical, evaluate_ours)}
    out: dict[str, dict] = {}
    for name, (theirs, ours) in pairs.items():
        seconds_per_call(theirs, calls // 4)  # warm-up
        seconds_per_call(ours, calls // 4)
        timed = [(seconds_per_call(theirs, calls), seconds_per_call(ours, calls)) for _ in range(rounds)]
        out[name] = {
            "categorical_us": round(statistics.median(t for t, _ in timed) * 1e6, 1),
            "ours_us": round(statistics.median(o for _, o in timed) * 1e6, 1),
            "categorical_over_ours": round(statistics.median(t / o for t, o in timed), 2),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="64,150,1024", help="agents per acting call, comma-separated")
    parser.add_argument("--actions", type=int, default=90)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=50, help="calls per timed round")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (rollouts act on one)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = {
        str(batch): measure(int(batch), args.actions, args.rounds, args.calls) for batch in args.batches.split(",")
    }
    report = {
        "benchmark": "policy_sampling",
        "machine": machine_info(),
        "threads": args.threads,
        "actions": args.actions,
        "rounds": args.rounds,
        "by_batch": results,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
