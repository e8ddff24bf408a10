"""The training-throughput benchmark's own measurement: it trains through Trainer.learn with its update recorder
(the logger interface the trainer calls) and reports the figures the JSON promises."""

from __future__ import annotations

import json

from benchmark_loader import load_benchmark


def test_measure_ours_records_each_update_and_reports_the_timed_ones() -> None:
    bench = load_benchmark("train_throughput")
    result = bench.measure_ours(arenas=4, rollout_steps=16, iterations=2, device="cpu", threads=1)
    json.dumps(result)  # the benchmark prints it as JSON
    assert result["engine"] == "rocketsim" and result["device"] == "cpu"
    assert result["batch"] == 4 * 2 * 16
    assert result["iterations"] == 2 and len(result["sps_per_iteration"]) == 2
    assert result["sps"] > 0 and result["warmup_sps"] > 0
    assert abs(sum(result["phase_split"].values()) - 1.0) < 1e-3


def test_overrides_name_the_engine() -> None:
    bench = load_benchmark("train_throughput")
    overrides = bench.our_overrides(4096, 16, "cuda", "warp")
    assert overrides[overrides.index("--env.engine") + 1] == "warp"
    assert overrides[overrides.index("--run.device") + 1] == "cuda"
