"""The soak's analysis: the warm-up ends by time and by agent-step, and growth is read after it."""

from __future__ import annotations

import json
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
    args = soak.parse_args(["--every", "10", "--window-minutes", "1"])
    trainer, worker = 100, 101
    # The trainer steps from 400 to 500 MiB at 300 s, before the warm-up ends at 360 s, then holds; the worker is
    # flat. Samples every 10 s for 20 minutes.
    samples = [
        (float(t), {trainer: ((400 if t < 300 else 500) * MIB, 30), worker: (200 * MIB, 4)}) for t in range(0, 1210, 10)
    ]
    report = soak.analyse(samples, trainer, args, warmup=360.0)
    assert report["roles"]["trainer"]["rss_mib"]["at_warmup"] == 500.0
    assert report["roles"]["trainer"]["rss_mib"]["growth_percent"] == 0.0
    assert report["tree_rss_mib"]["at_warmup"] == 700.0 and report["met"]
    assert report["tree_rss_mib"]["window_s"] == 60.0
    # Measured from 240 s instead, the same run shows the step: 400+200 -> 500+200 MiB.
    early = soak.analyse(samples, trainer, args, warmup=240.0)
    assert early["roles"]["trainer"]["rss_mib"]["growth_percent"] == 25.0 and not early["met"]


def _swinging(leak_percent_per_hour: float) -> list[tuple[float, float]]:
    """An hour of samples every 10 s around 700 MiB that swing +-5% (every third sample 35 MiB up, every fifth
    35 down), plus a steady growth of `leak_percent_per_hour`."""
    series = []
    for index in range(361):
        t = 10.0 * index
        swing = 35.0 if index % 3 == 0 else (-35.0 if index % 5 == 0 else 0.0)
        series.append((t, 700.0 * (1 + leak_percent_per_hour / 100 * t / 3600) + swing))
    return series


def test_a_swing_between_two_samples_is_not_growth_and_a_steady_leak_is() -> None:
    soak = load_benchmark("soak")
    flat = _swinging(0.0)
    flat[30] = (300.0, 665.0)  # the sample at the end of the warm-up low, the last one high: +10.5% between them
    flat[-1] = (3600.0, 735.0)
    summary = soak.summarize(flat, warmup=300.0, end=3600.0, window=300.0)
    assert abs(summary["growth_percent"]) < 1.0
    assert abs(summary["trend_percent_per_hour"]) < 1.0
    assert summary["max_after_warmup"] == 735.0
    leak = soak.summarize(_swinging(8.0), warmup=300.0, end=3600.0, window=300.0)
    # 8% an hour over the 55 minutes between the windows' middles: about 7.3% growth, trend about 8% an hour
    assert 6.0 < leak["growth_percent"] < 8.5
    assert 7.0 < leak["trend_percent_per_hour"] < 9.0


def test_reread_recomputes_a_saved_report_from_its_series(tmp_path: Path) -> None:
    soak = load_benchmark("soak")
    args = soak.parse_args(["--window-minutes", "5"])
    trainer = 100
    series = _swinging(0.0)
    samples = [(t, {trainer: (v * MIB, 3)}) for t, v in series]
    report = soak.analyse(samples, trainer, args, warmup=300.0)
    report.update(run_exit_code=0, run_ended_early=False)
    report["tree_rss_mib"]["growth_percent"], report["met"] = 9.9, False  # as an older summary might have said
    again = soak.reread(report, 5.0)
    assert again["tree_rss_mib"] == soak.summarize(series, 300.0, 3600.0, 300.0)
    assert again["met"] and again["reread"]["before"] == {"tree_growth_percent": 9.9, "met": False}
    saved = tmp_path / "soak.json"
    saved.write_text(json.dumps(report))
    assert soak.main(["--reread", str(saved), "--window-minutes", "5"])["met"]


def test_reread_starts_at_the_sample_that_ended_the_warmup() -> None:
    """The warm-up ends at a sample 770.1 s in; older reports kept it only as 12.84 minutes (770.4 s). Reread from
    either it starts at that sample, as the live summary did: a step there must not fall out of the first window."""
    soak = load_benchmark("soak")
    args = soak.parse_args(["--window-minutes", "5"])
    trainer = 100
    times = [10.0 * i + 0.1 for i in range(300)]  # 0.1, 10.1, ..., 2990.1 s
    values = [700.0 if t < 930.0 else 720.0 for t in times]  # the first window: 16 samples at 700, 15 at 720
    samples = [(t, {trainer: (v * MIB, 3)}) for t, v in zip(times, values)]
    report = soak.analyse(samples, trainer, args, warmup=770.1)
    report.update(run_exit_code=0, run_ended_early=False)
    assert report["warmup_seconds"] == 770.1 and report["warmup_minutes"] == 12.84
    assert report["tree_rss_mib"]["at_warmup"] == 700.0
    assert soak.summarize(list(zip(times, values)), 770.4, 2990.1, 300.0)["at_warmup"] == 710.0  # the sample lost
    assert soak.reread(report, 5.0)["tree_rss_mib"] == report["tree_rss_mib"]
    older = {key: value for key, value in report.items() if key != "warmup_seconds"}
    assert soak.recorded_warmup(older) == 770.1
    assert soak.reread(older, 5.0)["tree_rss_mib"] == report["tree_rss_mib"]
    never = {**older, "warmup_minutes": None}
    assert soak.recorded_warmup(never) == float("inf")


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
