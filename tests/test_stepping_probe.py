"""`env.stepping: auto`: the probe's candidates, its choice rule, its per-machine cache, and an engine built
through it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from rocketrl.env.config import EnvConfig
from rocketrl.sim import stepping_probe
from rocketrl.sim.engines import make_engine


@pytest.fixture
def private_cache(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROCKETRL_CACHE_DIR", str(tmp_path / "cache"))


def test_candidates_cover_the_parallel_modes_on_all_and_half_the_cores() -> None:
    assert stepping_probe.candidates(2, 64, None) == [
        ("processes", 2), ("processes", 1), ("threads", 2), ("threads", 1), ("serial", 1)
    ]  # fmt: skip
    assert stepping_probe.candidates(8, 64, None)[:2] == [("processes", 8), ("processes", 4)]
    # No more workers than arenas: all and half the cores both become 3.
    assert stepping_probe.candidates(8, 3, None) == [("processes", 3), ("threads", 3), ("serial", 1)]
    assert stepping_probe.candidates(8, 64, 2) == [("processes", 2), ("threads", 2), ("serial", 1)]


@pytest.mark.parametrize(
    ("threads_rate", "expected"),
    [(110_000.0, ("processes", 2)), (120_000.0, ("threads", 2))],  # threads must beat processes by 15%
)
def test_processes_are_kept_unless_another_mode_is_clearly_faster(
    monkeypatch, private_cache, threads_rate: float, expected: tuple[str, int]
) -> None:
    rates = {("processes", 2): 100_000.0, ("processes", 1): 60_000.0, ("threads", 2): threads_rate,
             ("threads", 1): 55_000.0, ("serial", 1): 50_000.0}  # fmt: skip
    monkeypatch.setattr(stepping_probe, "measure", lambda *args: rates)
    monkeypatch.setattr(stepping_probe.os, "cpu_count", lambda: 2)
    choice = stepping_probe.choose_stepping(64, 1, 1, 8, None)
    assert (choice.mode, choice.workers) == expected
    assert f"threads x2 {threads_rate / 1000:.0f}k, processes x2 100k, processes x1 60k" in choice.reason
    # The answer is cached for this machine and batch: the next run does not measure.
    monkeypatch.setattr(stepping_probe, "measure", lambda *args: pytest.fail("the cached answer should be used"))
    again = stepping_probe.choose_stepping(64, 1, 1, 8, None)
    assert (again.mode, again.workers) == expected and again.reason.endswith("(cached)")


def test_an_engine_with_stepping_auto_is_built_with_the_measured_choice(private_cache) -> None:
    config = EnvConfig(num_arenas=4, stepping="auto")
    engine = make_engine(config, torch.device("cpu"))
    try:
        assert engine.stepping in ("processes", "threads", "serial")
        assert "arena-ticks/s on this machine" in engine.stepping_reason
        before = engine.state.ball_pos.clone()
        engine.step(torch.zeros(4, 2, 8))
        assert engine.state.ball_pos.shape == before.shape
    finally:
        engine.close()
    cached = make_engine(config, torch.device("cpu"))
    try:
        assert cached.stepping == engine.stepping and cached.stepping_reason.endswith("(cached)")
    finally:
        cached.close()


def test_a_misspelt_stepping_mode_names_the_field_and_the_choices() -> None:
    with pytest.raises(ValueError, match="env.stepping='fast': choose one of 'auto', 'processes'"):
        EnvConfig(stepping="fast")
