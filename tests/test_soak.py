"""The soak's analysis: the warm-up ends by time and by agent-step, and growth is read after it."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmark_loader import load_benchmark

MIB = 1024 * 1024


def test_warmup_waits_for_the_pool_to_fill_on_a_slow_machine() -> None:
    soak = load_benchmark("soak")
    args = soak.parse_args(["--warmup-minutes", "1", "--snapshot-interval", "100", "--eval-interval", "50"])
    assert soak.warmup_steps(args) == 5 * 100 + 50
    fast = [(30.0, 400), (60.0, 600), (90.0, 900)]
    slow = [(30.0, 100), (60.0, 300), (90.0, 500), (120.0, 550), (150.0, 700)]
    assert soak.warmup_end(fast, args) == 60.0  # past 550 steps at the time floor
    assert soak.warmup_end(slow, args) == 120.0  # the floor passed at 300 steps: wait for step 550
    assert soak.warmup_end([(60.0, None), (90.0, 10)], args) == float("inf")


def test_growth_is_measured_from_the_end_of_the_warmup() -> None:
    soak = load_benchmark("soak")
    args = soak.parse_args(["--every", "10"])
    trainer, worker = 100, 101
    # The trainer steps from 400 to 500 MiB at 50 s, before the warm-up ends at 60 s, then holds; the worker is flat.
    samples = [
        (float(t), {trainer: ((400 if t < 50 else 500) * MIB, 30), worker: (200 * MIB, 4)}) for t in range(0, 130, 10)
    ]
    report = soak.analyse(samples, trainer, args, warmup=60.0)
    assert report["roles"]["trainer"]["rss_mib"]["at_warmup"] == 500.0
    assert report["roles"]["trainer"]["rss_mib"]["growth_percent"] == 0.0
    assert report["tree_rss_mib"]["at_warmup"] == 700.0 and report["met"]
    # Measured from 40 s instead, the same run shows the step: 400+200 -> 500+200 MiB.
    early = soak.analyse(samples, trainer, args, warmup=40.0)
    assert early["roles"]["trainer"]["rss_mib"]["growth_percent"] == 25.0 and not early["met"]


def test_preset_soak_runs_the_preset_and_warms_up_past_its_first_snapshot(tmp_path: Path) -> None:
    soak = load_benchmark("soak")
    args = soak.parse_args(["--preset", "league_1v1"])
    # league_1v1: a snapshot every 4M agent-steps, a checkpoint every 2M, no league evaluations
    assert soak.warmup_steps(args) == 4_000_000
    command = soak.train_command(args, tmp_path)
    assert command[command.index("--preset") + 1] == "league_1v1"
    assert "--env.num-arenas" not in command and "--league.pool-size" not in command
    assert "--run.init-from" not in command  # the preset's own start
    later = soak.train_command(soak.parse_args(["--preset", "league_1v1", "--init-from", "gauntlet_v6"]), tmp_path)
    assert later[later.index("--run.init-from") + 1] == "gauntlet_v6"
    with pytest.raises(SystemExit):  # without a preset the flag would change nothing: refused
        soak.parse_args(["--init-from", "gauntlet_v6"])
