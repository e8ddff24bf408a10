"""benchmarks/train_repeat.py: where two training runs part, read from their TensorBoard scalars."""

from __future__ import annotations

from benchmark_loader import load_benchmark

repeat = load_benchmark("train_repeat")


def _run(policy: list[float], returns: list[float]) -> dict[str, dict[int, float]]:
    steps = [1000 * (i + 1) for i in range(len(policy))]
    return {
        "losses/policy": dict(zip(steps, policy)),
        "charts/episode_return": dict(zip(steps, returns)),
    }


def test_runs_that_agree_on_every_shared_update_have_not_parted() -> None:
    a = _run([0.5, 0.25, 0.125], [1.0, 2.0, 3.0])
    b = _run([0.5, 0.25], [1.0, 2.0])  # stopped one update earlier
    found = repeat.first_difference(a, b)
    assert found["common_updates"] == 2 and found["common_steps"] == 2000
    assert found["parted_at_step"] is None and found["tags_that_differ"] == []


def test_the_first_update_where_any_tag_differs_by_one_bit_is_named() -> None:
    a = _run([0.5, 0.25, 0.125, 0.0625], [1.0, 2.0, 3.0, 4.0])
    b = _run([0.5, 0.25, 0.125, 0.0], [1.0, 2.0, 3.0000002, 4.0])  # the return first, one float32 step apart
    found = repeat.first_difference(a, b)
    assert found["parted_at_step"] == 3000 and found["parted_at_update"] == 3
    assert found["tags_that_differ"] == ["charts/episode_return"]


def test_wall_times_and_speed_are_not_compared(tmp_path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    for name, speed in (("a", 100.0), ("b", 250.0)):
        with SummaryWriter(str(tmp_path / name)) as writer:
            for step in (4928, 9856):
                writer.add_scalar("losses/policy", 0.5, step)
                writer.add_scalar("charts/SPS", speed, step)
                writer.add_scalar("time/env", speed / 1000, step)
    a, b = repeat.scalars(tmp_path / "a"), repeat.scalars(tmp_path / "b")
    assert set(a) == {"losses/policy"} and a["losses/policy"] == {4928: 0.5, 9856: 0.5}
    assert repeat.first_difference(a, b)["parted_at_step"] is None
