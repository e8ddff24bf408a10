"""Replay files: roundtrip, dtypes, size, version and shape checks, recording from a BatchState."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from rocketrl.league.replay import (
    FORMAT_VERSION,
    METADATA_KEY,
    TENSOR_SPECS,
    ReplayFormatError,
    ReplayRecorder,
    bytes_per_step,
    load_replay,
)
from rocketrl.sim.rocketsim import RocketSimEngine
from rocketrl.sim.state import BatchState

C = 2  # 1v1


def random_step(gen: torch.Generator, step: int) -> dict:
    forward = torch.nn.functional.normalize(torch.randn(C, 3, generator=gen), dim=-1)
    up = torch.nn.functional.normalize(torch.randn(C, 3, generator=gen), dim=-1)
    return {
        "ball_pos": torch.tensor([4000.0, -5100.25, 93.15]) + step,
        "ball_vel": torch.randn(3, generator=gen) * 3000,
        "car_pos": torch.randn(C, 3, generator=gen) * 3000,
        "car_forward": forward,
        "car_up": up,
        "car_vel": torch.randn(C, 3, generator=gen) * 1000,
        "car_boost": torch.rand(C, generator=gen) * 100,
        "car_demolished": torch.tensor([step % 3 == 0, False]),
        "controls": torch.cat([torch.rand(C, 5, generator=gen) * 2 - 1, torch.ones(C, 3)], dim=-1),
        "blue_score": step // 4,
        "orange_score": torch.tensor(1),
        "goal": 0 if step == 4 else -1,
    }


def record(steps: int, seed: int = 0) -> tuple[ReplayRecorder, list[dict]]:
    gen = torch.Generator().manual_seed(seed)
    recorder = ReplayRecorder(num_cars=C, blue_size=1, orange_size=1, tick_skip=8)
    inputs = [random_step(gen, t) for t in range(steps)]
    for step in inputs:
        recorder.append(**step)
    return recorder, inputs


def test_roundtrip_and_dtypes(tmp_path) -> None:
    recorder, inputs = record(10)
    path = recorder.save(
        tmp_path / "ep.replay",
        blue_policy="ppo_v3",
        orange_policy="rule_policy",
        seed=7,
        episode_return=[1.5, -0.5],
        match="final",
    )
    assert [p.name for p in tmp_path.iterdir()] == ["ep.replay"]  # no temporary file left
    replay = load_replay(path)
    assert replay.num_steps == 10 and replay.num_cars == C
    for name, (_, dtype) in TENSOR_SPECS.items():
        assert getattr(replay, name).dtype == dtype, name
    # float32 fields are exact; float16 ones within their precision
    expected_ball = torch.stack([s["ball_pos"] for s in inputs])
    assert torch.equal(replay.ball_pos, expected_ball)
    assert torch.equal(replay.car_pos, torch.stack([s["car_pos"] for s in inputs]))
    forward = torch.stack([s["car_forward"] for s in inputs])
    assert torch.allclose(replay.car_forward.float(), forward, atol=1e-3)
    vel = torch.stack([s["car_vel"] for s in inputs])
    assert torch.allclose(replay.car_vel.float(), vel, atol=2.0, rtol=1e-3)
    boost = torch.stack([s["car_boost"] for s in inputs])
    assert torch.allclose(replay.car_boost.float(), boost, atol=0.05)
    assert replay.car_demolished[:, 0].tolist() == [t % 3 == 0 for t in range(10)]
    assert replay.blue_score.tolist() == [t // 4 for t in range(10)]
    assert replay.orange_score.tolist() == [1] * 10
    assert replay.goal.tolist() == [0 if t == 4 else -1 for t in range(10)]
    assert replay.meta == {
        "version": FORMAT_VERSION,
        "tick_skip": 8,
        "ticks_per_second": 120,
        "blue_size": 1,
        "orange_size": 1,
        "num_cars": 2,
        "car_teams": [0, 1],
        "blue_policy": "ppo_v3",
        "orange_policy": "rule_policy",
        "episode_return": [1.5, -0.5],
        "seed": 7,
        "steps": 10,
        "clock": "episode",
        "match": "final",
    }
    assert replay.step_seconds == pytest.approx(8 / 120)
    assert replay.duration_seconds == pytest.approx(10 * 8 / 120)


def test_size_per_step_is_small(tmp_path) -> None:
    # 1v1: ball 2x3 float32 (24) + per car 3 float32 (12) + 9 float16 (18) + 8 float16 controls (16)
    # + boost float16 (2) + demolished bool (1) + touch bool (1) = 50, twice (100) + scores 2x int32 + goal int8
    # (9) + 34 pad flags (34) + clock float32 (4) + ball position and velocity 2x3 float32 (24) = 171.
    assert bytes_per_step(C) == 171
    short, _ = record(50)
    long, _ = record(150)
    a = short.save(tmp_path / "a.replay").stat().st_size
    b = long.save(tmp_path / "b.replay").stat().st_size
    assert (b - a) / 100 == pytest.approx(171, abs=0.5)  # the header differs by a few bytes
    assert b < 171 * 150 + 4096  # the header (tensor table + metadata) stays small


def test_empty_replay_roundtrip(tmp_path) -> None:
    recorder = ReplayRecorder(3, 2, 1, tick_skip=4)
    replay = load_replay(recorder.save(tmp_path / "empty.replay"))
    assert replay.num_steps == 0
    assert replay.car_pos.shape == (0, 3, 3)
    assert replay.meta["car_teams"] == [0, 0, 1]


def test_bad_version_error(tmp_path) -> None:
    recorder, _ = record(3)
    tensors = recorder.tensors()
    meta = recorder.metadata()
    meta["version"] = 99
    path = tmp_path / "future.replay"
    save_file(tensors, str(path), metadata={METADATA_KEY: json.dumps(meta)})
    with pytest.raises(ReplayFormatError, match=r"future\.replay.*version 99"):
        load_replay(path)


def test_bad_shapes_and_files(tmp_path) -> None:
    recorder, _ = record(3)
    tensors = recorder.tensors()
    meta = recorder.metadata()
    tensors["car_pos"] = tensors["car_pos"][:, :1].contiguous()
    path = tmp_path / "shape.replay"
    save_file(tensors, str(path), metadata={METADATA_KEY: json.dumps(meta)})
    with pytest.raises(ReplayFormatError, match="car_pos has shape"):
        load_replay(path)

    save_file(recorder.tensors(), str(path))
    with pytest.raises(ReplayFormatError, match="not a rocketrl replay"):
        load_replay(path)

    garbage = tmp_path / "garbage.replay"
    garbage.write_bytes(b"not a safetensors file")
    with pytest.raises(ReplayFormatError, match="garbage.replay"):
        load_replay(garbage)


def test_append_checks_shapes() -> None:
    recorder = ReplayRecorder(2, 1, 1, tick_skip=8)
    step = random_step(torch.Generator().manual_seed(0), 0)
    step["controls"] = torch.zeros(2, 7)
    with pytest.raises(ValueError, match="controls has shape"):
        recorder.append(**step)
    step["controls"] = torch.zeros(2, 8)
    step["goal"] = 3
    with pytest.raises(ValueError, match="goal=3"):
        recorder.append(**step)
    assert len(recorder) == 0
    with pytest.raises(ValueError, match="num_cars"):
        ReplayRecorder(3, 1, 1, tick_skip=8)


def test_append_from_rocketsim_state(tmp_path) -> None:
    engine = RocketSimEngine(2, 1, 1, stepping="serial")
    try:
        recorder = ReplayRecorder(engine.num_cars, engine.blue_size, engine.orange_size, engine.tick_skip)
        controls = torch.zeros(2, 2, 8)
        states: list[BatchState] = [engine.state.clone()]
        recorder.append_from_state(states[-1], 1, controls)
        for _ in range(2):
            states.append(engine.step(controls).clone())
            recorder.append_from_state(states[-1], 1, controls[1])
    finally:
        engine.close()
    replay = load_replay(recorder.save(tmp_path / "sim.replay", seed=0))
    assert replay.num_steps == 3
    assert torch.equal(replay.car_pos, torch.stack([s.car_pos[1] for s in states]))
    assert torch.equal(replay.ball_pos, torch.stack([s.ball_pos[1] for s in states]))
    assert torch.allclose(replay.car_up.float(), torch.stack([s.car_up[1] for s in states]), atol=1e-3)
    assert replay.goal.tolist() == [-1, -1, -1]
    assert replay.meta["tick_skip"] == engine.tick_skip
    with pytest.raises(IndexError):
        recorder.append_from_state(states[0], 2, controls)


def test_version_1_files_still_load_with_what_they_lack_named(tmp_path) -> None:
    """A replay written before pads, touches and the clock were recorded: pads read as active, no touches,
    the clock counts seconds since the start, and meta["missing"] says so."""
    from rocketrl.league.replay import ADDED_IN_V2, METADATA_KEY

    recorder, _ = record(6)
    tensors = {k: v for k, v in recorder.tensors().items() if k not in ADDED_IN_V2}
    meta = recorder.metadata()
    meta["version"] = 1
    del meta["clock"]
    path = tmp_path / "old.replay"
    save_file(tensors, str(path), metadata={METADATA_KEY: json.dumps(meta)})
    replay = load_replay(path)
    assert replay.meta["missing"] == list(ADDED_IN_V2) and replay.meta["clock"] == "episode"
    assert replay.pad_active.all() and not replay.car_touch.any()
    assert replay.clock.tolist() == pytest.approx([t * 8 / 120 for t in range(6)])


def test_game_clock_pads_and_touches_are_recorded_from_the_state(tmp_path) -> None:
    recorder, gen = ReplayRecorder(C, 1, 1, 8), torch.Generator().manual_seed(0)
    for t in range(3):
        step = random_step(gen, t)
        pads = torch.ones(34, dtype=torch.bool)
        pads[t] = False
        recorder.append(**step, pad_active=pads, car_touch=torch.tensor([t == 1, False]), clock=300.0 - t * 8 / 120)
    replay = load_replay(recorder.save(tmp_path / "g.replay"))
    assert replay.meta["clock"] == "game"
    assert replay.clock.tolist() == pytest.approx([300.0, 300.0 - 8 / 120, 300.0 - 16 / 120])
    assert replay.car_touch[:, 0].tolist() == [False, True, False]
    assert [int((~row).nonzero()[0]) for row in replay.pad_active] == [0, 1, 2]
