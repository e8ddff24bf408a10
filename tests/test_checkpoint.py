"""Crash-safe, pickle-free checkpoints (rocketrl/infra/checkpoint.py)."""

from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

import rocketrl.infra.atomic_file as atomic_file
import rocketrl.infra.checkpoint as checkpoint_module
from rocketrl.infra.checkpoint import (
    FORMAT,
    METADATA_KEY,
    CheckpointError,
    CheckpointManager,
    flatten_state,
    load_checkpoint,
    read_meta,
    rng_state,
    save_checkpoint,
    set_rng_state,
    unflatten_state,
)


def assert_same(actual: Any, expected: Any, where: str = "<root>") -> None:
    """Deep equality that also checks container types, int keys, tensor dtypes and NaN."""
    assert type(actual) is type(expected), f"{where}: {type(actual)} != {type(expected)}"
    if isinstance(expected, torch.Tensor):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, where
        assert torch.equal(actual, expected), where
    elif isinstance(expected, np.ndarray):
        assert actual.dtype == expected.dtype, where
        np.testing.assert_array_equal(actual, expected)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected), f"{where}: keys {list(actual)} != {list(expected)}"
        for key in expected:
            assert_same(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{where}.{i}")
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual), where
    else:
        assert actual == expected, where


def nested_state() -> dict:
    return {
        "model": {"fc.weight": torch.randn(3, 4), "fc.bias": torch.randn(3).to(torch.bfloat16)},
        "optimizer": {
            "state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.randn(3, 4, dtype=torch.float16)}, 7: {}},
            "param_groups": [{"lr": 3e-4, "betas": (0.9, 0.999), "params": [0, 7], "max_norm": float("inf")}],
        },
        "counts": torch.arange(5, dtype=torch.int64),
        "bytes": torch.randint(0, 255, (2, 2), dtype=torch.uint8),
        "mask": torch.tensor([True, False]),
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
        "array": np.arange(6, dtype=np.float32).reshape(2, 3),
        "misc": (None, True, False, -1, 2**40, "text", float("-inf"), float("nan"), [], {}, ()),
        "looks_like_marker": {"__tensor__": "model.fc.weight"},
    }


def test_round_trip_nested(tmp_path: Path) -> None:
    state = nested_state()
    meta = {"step": 250000, "score": 1.23, "run": "name", "best": float("inf"), "worst": float("nan"), "x": None}
    path = save_checkpoint(tmp_path / "ckpt.safetensors", state, meta)
    loaded, loaded_meta = load_checkpoint(path)
    assert_same(loaded, state)
    assert_same(loaded_meta, meta)
    assert read_meta(path)["run"] == "name"

    # the header is strict JSON (no NaN/Infinity literals), marked with the format and version
    with safe_open(str(path), framework="pt") as handle:
        payload = json.loads(handle.metadata()[METADATA_KEY], parse_constant=lambda c: pytest.fail(c))
    assert payload["format"] == FORMAT and payload["version"] == 1


def test_flatten_unflatten_keys_and_aliasing() -> None:
    shared = torch.randn(4)
    state = {"a.b": torch.ones(1), "a": {"b": torch.zeros(1)}, "tied": [shared, shared], "view": shared.detach()}
    tensors, structure = flatten_state(state, prefix="run")
    assert len(tensors) == 3  # the two "a.b" paths get distinct keys; three views of `shared` share one
    assert all(key.startswith("run.") for key in tensors)
    json.dumps(structure, allow_nan=False)
    back = unflatten_state(tensors, structure)
    assert_same(back, state)
    assert back["tied"][0] is back["tied"][1] is back["view"]

    with pytest.raises(TypeError, match="opt.fn"):
        flatten_state({"opt": {"fn": print}})
    with pytest.raises(TypeError, match="keys must be str or int"):
        flatten_state({(1, 2): 3})


def train_steps(model: torch.nn.Module, optimizer: torch.optim.Optimizer, first: int, n: int) -> None:
    for i in range(first, first + n):
        gen = torch.Generator().manual_seed(i)
        x, y = torch.randn(8, 4, generator=gen), torch.randn(8, 2, generator=gen)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))


def test_optimizer_round_trip_gives_identical_updates(tmp_path: Path) -> None:
    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    train_steps(model, optimizer, 0, 3)
    path = save_checkpoint(tmp_path / "opt.safetensors", {"model": model.state_dict(), "opt": optimizer.state_dict()})
    train_steps(model, optimizer, 3, 3)  # uninterrupted run

    resumed = make_model()
    with torch.no_grad():
        for p in resumed.parameters():
            p.add_(1.0)  # make sure the weights really come from the checkpoint
    resumed_opt = torch.optim.Adam(resumed.parameters(), lr=0.5)
    state, _ = load_checkpoint(path)
    assert set(state["opt"]["state"]) == {0, 1, 2, 3}  # int keys come back as int
    resumed.load_state_dict(state["model"])
    resumed_opt.load_state_dict(state["opt"])
    train_steps(resumed, resumed_opt, 3, 3)
    for a, b in zip(model.parameters(), resumed.parameters()):
        assert torch.equal(a, b)


def test_rng_state_restores_next_numbers(tmp_path: Path) -> None:
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    np.random.randn()  # leave a cached gaussian in numpy's state
    path = save_checkpoint(tmp_path / "rng.safetensors", {"rng": rng_state()})
    expected = (random.random(), np.random.randn(3).tolist(), torch.randn(3))
    random.seed(99)
    np.random.seed(99)
    torch.manual_seed(99)
    state, _ = load_checkpoint(path)
    set_rng_state(state["rng"])
    actual = (random.random(), np.random.randn(3).tolist(), torch.randn(3))
    assert actual[0] == expected[0] and actual[1] == expected[1]
    assert torch.equal(actual[2], expected[2])


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_save_refuses_non_finite_tensors(tmp_path: Path, bad: float) -> None:
    state = {"model": {"fc.weight": torch.tensor([1.0, bad])}, "ok": torch.ones(2)}
    with pytest.raises(ValueError, match=r"model\.fc\.weight"):
        save_checkpoint(tmp_path / "bad.safetensors", state)
    assert list(tmp_path.iterdir()) == []


def test_failed_save_keeps_previous_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ckpt.safetensors"
    save_checkpoint(path, {"w": torch.ones(3)}, {"version": "old"})

    def broken_replace(src: Any, dst: Any) -> None:
        raise OSError("simulated crash during rename")

    monkeypatch.setattr(atomic_file.os, "replace", broken_replace)
    with pytest.raises(OSError, match="simulated crash"):
        save_checkpoint(path, {"w": torch.zeros(3)}, {"version": "new"})
    monkeypatch.undo()

    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.safetensors"]
    state, meta = load_checkpoint(path)
    assert meta == {"version": "old"} and torch.equal(state["w"], torch.ones(3))


def test_manager_ignores_and_cleans_leftover_temporaries(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    manager.save(10, {"w": torch.ones(1)})
    leftover = tmp_path / ".step_000000000020.safetensors.1234.deadbeef.tmp"
    leftover.write_bytes(b"half a checkpoint")
    assert manager.list() == [tmp_path / "step_000000000010.safetensors"]
    manager.save(20, {"w": torch.ones(1)})
    assert not leftover.exists()
    assert manager.latest() == tmp_path / "step_000000000020.safetensors"


def write_valid(tmp_path: Path) -> Path:
    return save_checkpoint(tmp_path / "good.safetensors", {"w": torch.randn(64), "n": 3}, {"step": 1})


def test_truncated_file(tmp_path: Path) -> None:
    data = write_valid(tmp_path).read_bytes()
    path = tmp_path / "truncated.safetensors"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated.safetensors"):
        load_checkpoint(path)


@pytest.mark.parametrize("content", [os.urandom(4096), b"", b"\x08\x00\x00\x00\x00\x00\x00\x00{garbage"])
def test_garbage_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "garbage.safetensors"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match="garbage.safetensors"):
        load_checkpoint(path)


def test_corrupted_tensor_bytes_fail_checksum(tmp_path: Path) -> None:
    path = write_valid(tmp_path)
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF  # inside the tensor data; the header still parses
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"good\.safetensors.*checksum"):
        load_checkpoint(path)


def test_foreign_safetensors_file(tmp_path: Path) -> None:
    path = tmp_path / "foreign.safetensors"
    save_file({"weight": torch.ones(2)}, str(path))
    with pytest.raises(CheckpointError, match="foreign.safetensors.*not a rocketrl checkpoint"):
        load_checkpoint(path)
    save_file({"weight": torch.ones(2)}, str(path), metadata={METADATA_KEY: json.dumps({"format": "other"})})
    with pytest.raises(CheckpointError, match="foreign.safetensors.*not a rocketrl checkpoint"):
        load_checkpoint(path)


def test_future_format_version(tmp_path: Path) -> None:
    path = tmp_path / "future.safetensors"
    payload = {"format": FORMAT, "version": 2, "meta": {}, "structure": None, "sha256": ""}
    save_file({}, str(path), metadata={METADATA_KEY: json.dumps(payload)})
    with pytest.raises(CheckpointError, match="future.safetensors.*version 2 is newer"):
        load_checkpoint(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.safetensors"):
        load_checkpoint(tmp_path / "nope.safetensors")


def test_manager_keeps_latest_and_best(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path, keep_best=2, keep_latest=1)

    def steps() -> list[int]:
        return [int(p.stem.split("_")[1]) for p in manager.list()]

    saves = [(1, 0.5), (2, None), (3, 0.9), (4, 0.1), (5, 0.7), (6, None), (7, 0.8)]
    expected_kept = [[1], [1, 2], [1, 3], [1, 3, 4], [3, 5], [3, 5, 6], [3, 7]]
    for (step, score), kept in zip(saves, expected_kept):
        path = manager.save(step, {"w": torch.full((2,), float(step))}, {"run": "test"}, score=score)
        assert path == tmp_path / f"step_{step:012d}.safetensors"
        assert steps() == kept, step
    assert manager.latest() == manager.path_for(7)
    assert manager.best() == manager.path_for(3)
    assert read_meta(manager.best()) == {"run": "test", "step": 3, "score": 0.9}

    restarted = CheckpointManager(tmp_path, keep_best=2, keep_latest=1)
    assert restarted.list() == manager.list()
    assert restarted.latest() == manager.latest() and restarted.best() == manager.best()
    restarted.save(8, {"w": torch.zeros(2)})  # unscored: 7 stays among the best two, 8 is the latest
    assert [int(p.stem.split("_")[1]) for p in restarted.list()] == [3, 7, 8]

    wide = CheckpointManager(tmp_path, keep_best=0, keep_latest=2)
    assert wide.best() == manager.path_for(3)
    wide.save(9, {"w": torch.zeros(2)}, score=5.0)
    assert [int(p.stem.split("_")[1]) for p in wide.list()] == [8, 9]
    assert wide.best() == wide.path_for(9)


def test_manager_keeps_the_first_checkpoint_past_each_mark(tmp_path: Path) -> None:
    """keep_every=8: of checkpoints every ~2 steps, the first at or past 8, 16 and 24 stay for good; the rest go
    as newer ones come (keep_latest 1, nothing scored), and a new manager on the folder keeps the same."""
    manager = CheckpointManager(tmp_path, keep_best=0, keep_latest=1, keep_every=8)

    def steps(m: CheckpointManager) -> list[int]:
        return [int(p.stem.split("_")[1]) for p in m.list()]

    for step in (2, 4, 6, 9, 10, 12, 14, 16, 18, 23, 25, 27):
        manager.save(step, {"w": torch.full((2,), float(step))})
    assert steps(manager) == [9, 16, 25, 27]
    again = CheckpointManager(tmp_path, keep_best=0, keep_latest=1, keep_every=8)
    again.save(29, {"w": torch.zeros(2)})
    assert steps(again) == [9, 16, 25, 29]
    plain = CheckpointManager(tmp_path, keep_best=0, keep_latest=1)
    plain.save(31, {"w": torch.zeros(2)})
    assert steps(plain) == [31]
    with pytest.raises(ValueError, match="keep_every"):
        CheckpointManager(tmp_path, keep_every=0)


def test_manager_rejects_bad_arguments(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    assert manager.latest() is None and manager.best() is None and manager.list() == []
    with pytest.raises(ValueError, match="score"):
        manager.save(1, {}, score=float("nan"))
    with pytest.raises(ValueError, match="step"):
        manager.save(1, {}, {"step": 2})
    with pytest.raises(ValueError):
        CheckpointManager(tmp_path, keep_latest=0)


def test_manager_skips_unreadable_checkpoints(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    manager.save(1, {"w": torch.ones(1)}, score=1.0)
    (tmp_path / "step_000000000005.safetensors").write_bytes(b"not a checkpoint")
    with pytest.warns(UserWarning, match="step_000000000005"):
        assert manager.latest() == manager.path_for(1)
    manager.save(2, {"w": torch.ones(1)})  # warned once per file version, not on every scan
    assert manager.list() == [manager.path_for(1), manager.path_for(2)]
    assert (tmp_path / "step_000000000005.safetensors").exists()  # never deleted


def test_no_pickle_in_checkpoint_module() -> None:
    source = Path(checkpoint_module.__file__).read_text()
    assert "pickle" not in source
    assert "torch.load" not in source


def test_failed_json_and_replay_writes_keep_the_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rocketrl.infra.atomic_json import write_json_atomic

    path = tmp_path / "league.json"
    write_json_atomic(path, {"version": "old"})

    def broken_replace(src: Any, dst: Any) -> None:
        raise OSError("simulated crash during rename")

    monkeypatch.setattr(atomic_file.os, "replace", broken_replace)
    with pytest.raises(OSError, match="simulated crash"):
        write_json_atomic(path, {"version": "new"})
    monkeypatch.undo()
    with pytest.raises(TypeError):  # not JSON: fails before the disk is touched
        write_json_atomic(path, {"version": object()})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["league.json"]
    assert json.loads(path.read_text()) == {"version": "old"}
