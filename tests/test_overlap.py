"""Tests of split stepping: RocketSimEngine.step_async/step_wait and BatchedEnv.step_async/step_wait.

The split path must give exactly what `step` gives (same states, rewards, observations, episode ends
and auto-resets), for every stepping mode, and misuse (waiting with nothing in flight, stepping or
resetting while a step is in flight) must fail with a clear error, while close() always works.
"""

from __future__ import annotations

from dataclasses import fields

import pytest
import torch

from rocketrl.env.batched import BatchedEnv, StepResult
from rocketrl.sim.rocketsim import RocketSimEngine
from rocketrl.sim.state import BatchState

ARENAS = 4
STEPS = 12


def random_controls(generator: torch.Generator, arenas: int = ARENAS, cars: int = 2) -> torch.Tensor:
    """Random car controls (arenas, cars, 8): analog in [-1, 1], buttons 0/1."""
    analog = torch.rand(arenas, cars, 5, generator=generator) * 2 - 1
    buttons = (torch.rand(arenas, cars, 3, generator=generator) > 0.5).float()
    return torch.cat([analog, buttons], dim=-1)


def assert_states_equal(a: BatchState, b: BatchState) -> None:
    for f in fields(BatchState):
        assert torch.equal(getattr(a, f.name), getattr(b, f.name)), f.name


@pytest.mark.parametrize("stepping", ["processes", "threads", "serial", "multi_step"])
def test_engine_async_equals_step(stepping: str) -> None:
    """step_async + step_wait reproduces step bit for bit, and `state` follows step_wait."""
    sync = RocketSimEngine(ARENAS, 1, 1, num_workers=2, stepping=stepping, seed=3)
    split = RocketSimEngine(ARENAS, 1, 1, num_workers=2, stepping=stepping, seed=3)
    try:
        generator = torch.Generator().manual_seed(0)
        assert_states_equal(sync.state, split.state)
        for _ in range(STEPS):
            controls = random_controls(generator)
            expected = sync.step(controls)
            before = split.state
            split.step_async(controls)
            assert split.step_in_flight
            assert split.state is before  # the previous state stays published until step_wait
            got = split.step_wait()
            assert not split.step_in_flight
            assert got is split.state
            assert_states_equal(expected, got)
        assert split.copy_seconds > 0.0
    finally:
        sync.close()
        split.close()


@pytest.mark.parametrize("stepping", ["processes", "threads", "serial"])
def test_engine_misuse(stepping: str) -> None:
    engine = RocketSimEngine(2, 1, 1, num_workers=2, stepping=stepping)
    try:
        zeros = torch.zeros(2, 2, 8)
        with pytest.raises(RuntimeError, match="without a step in flight"):
            engine.step_wait()
        with pytest.raises(ValueError, match="shape"):
            engine.step_async(torch.zeros(3, 2, 8))
        assert not engine.step_in_flight  # a refused step leaves nothing in flight
        engine.step_async(zeros)
        with pytest.raises(RuntimeError, match="already in flight"):
            engine.step_async(zeros)
        with pytest.raises(RuntimeError, match="already in flight"):
            engine.step(zeros)
        with pytest.raises(RuntimeError, match="in flight"):
            engine.step_raw()
        with pytest.raises(RuntimeError, match="in flight"):
            engine.reset_kickoff_native(torch.ones(2, dtype=torch.bool))
        engine.step_wait()
        with pytest.raises(RuntimeError, match="without a step in flight"):
            engine.step_wait()
        engine.step(zeros)  # usable again after the wait
        engine.step_async(zeros)
    finally:
        engine.close()  # closes with a step in flight
    with pytest.raises(RuntimeError, match="closed"):
        engine.step_wait()
    with pytest.raises(RuntimeError, match="closed"):
        engine.step_async(torch.zeros(2, 2, 8))
    engine.close()  # twice is fine


def make_env(stepping: str) -> BatchedEnv:
    # Short episodes so that several end (and are auto-reset) within a few steps.
    return BatchedEnv(
        num_arenas=ARENAS, num_workers=2, stepping=stepping, seed=5, episode_seconds=0.4, no_touch_seconds=0.0
    )


def assert_results_equal(a: StepResult, b: StepResult) -> None:
    for name in ("obs", "reward", "terminated", "truncated", "final_obs"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert a.episodes.keys() == b.episodes.keys()
    for key in a.episodes:
        assert torch.equal(a.episodes[key], b.episodes[key]), key
    assert a.state is not None and b.state is not None
    assert_states_equal(a.state, b.state)


@pytest.mark.parametrize("stepping", ["processes", "serial"])
def test_batched_env_async_equals_step(stepping: str) -> None:
    """BatchedEnv.step_async + step_wait matches step across episode ends and auto-resets."""
    with make_env(stepping) as sync, make_env(stepping) as split:
        assert torch.equal(sync.reset(), split.reset())
        generator = torch.Generator().manual_seed(1)
        ended = 0
        for _ in range(STEPS):
            actions = torch.randint(0, 90, (ARENAS, 2), generator=generator)
            expected = sync.step(actions)
            split.step_async(actions)
            assert split.step_in_flight
            got = split.step_wait()
            assert_results_equal(expected, got)
            assert torch.equal(split.observations, got.obs)
            ended += int((got.terminated | got.truncated).sum())
        assert ended >= ARENAS  # every arena's episode ended at least once
        assert torch.equal(sync.prev_controls, split.prev_controls)
        assert torch.equal(sync.episode_return, split.episode_return)

        # step_controls_async + step_wait == step_controls
        controls = random_controls(generator)
        expected = sync.step_controls(controls)
        split.step_controls_async(controls)
        assert_results_equal(expected, split.step_wait())


def test_batched_env_misuse() -> None:
    env = make_env("processes")
    try:
        actions = torch.zeros(ARENAS, 2, dtype=torch.long)
        with pytest.raises(RuntimeError, match="reset"):
            env.step_async(actions)
        env.reset()
        with pytest.raises(RuntimeError, match="without a step in flight"):
            env.step_wait()
        env.step_async(actions)
        with pytest.raises(RuntimeError, match="already in flight"):
            env.step_async(actions)
        with pytest.raises(RuntimeError, match="already in flight"):
            env.step(actions)
        with pytest.raises(RuntimeError, match="in flight"):
            env.reset()
        with pytest.raises(RuntimeError, match="in flight"):
            env.reset_arenas(torch.ones(ARENAS, dtype=torch.bool))
        env.step_wait()
        env.step(actions)
        env.step_async(actions)
    finally:
        env.close()  # with a step in flight
