"""benchmarks/heap_growth.py reads the C allocator's account and Python's traced allocations correctly."""

from __future__ import annotations

import gc
import tracemalloc

import pytest
from benchmark_loader import load_benchmark

heap = load_benchmark("heap_growth")


def _libc():
    try:
        return heap.load_libc()
    except SystemExit:
        pytest.skip("needs glibc's mallinfo2 (glibc 2.33 or newer)")


def _line_of(text: str) -> int:
    lines = open(__file__).read().splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line and "_line_of" not in line)


def test_memory_the_program_holds_reads_as_in_use_and_freed_memory_not() -> None:
    libc = _libc()
    before = heap.sample(libc, tracing=False)
    held = [bytearray(4096) for _ in range(16 * 1024)]  # 64 MiB in small blocks, from the heap
    during = heap.sample(libc, tracing=False)
    assert 60 <= during["in_use_mib"] - before["in_use_mib"] <= 80
    assert during["traced_mib"] is None
    del held
    gc.collect()
    after = heap.sample(libc, tracing=False)
    assert after["in_use_mib"] - before["in_use_mib"] < 10  # given back to the allocator: no longer in use
    libc.malloc_trim(0)
    assert heap.sample(libc, tracing=False)["heap_free_mib"] <= after["heap_free_mib"] + 1


def test_the_sampler_keeps_its_clock_and_names_the_line_that_grew() -> None:
    libc = _libc()
    tracemalloc.start(1)
    try:
        sampler = heap.Sampler(libc, every=3600.0, warmup=0.0, tracing=True)
        sampler.log_update(type("Report", (), {"step": 512})())
        sampler.log_update(type("Report", (), {"step": 1024})())  # within the hour: not sampled again
        assert [step for _, step, _ in sampler.rows] == [512] and sampler.snapshot_at_warmup is not None
        kept = [bytes(1000) + bytes([i % 256]) for i in range(20_000)]  # about 20 MiB of Python objects
        sampler.take()
        assert [step for _, step, _ in sampler.rows] == [512, 1024]
        assert sampler.rows[-1][2]["traced_mib"] - sampler.rows[0][2]["traced_mib"] > 15
        top = heap.top_growth(sampler.snapshot_at_warmup, tracemalloc.take_snapshot())
        assert top[0]["where"].endswith(f"test_heap_growth.py:{_line_of('kept = [bytes(1000)')}")
        assert top[0]["grew_kib"] > 15_000 and len(kept) == 20_000
    finally:
        tracemalloc.stop()


def test_trim_gives_freed_heap_back_after_each_sample() -> None:
    libc = _libc()
    held = [bytearray(4096) for _ in range(16 * 1024)]
    del held[: 15 * 1024]  # most of it freed, the rest above it keeps the heap from shrinking at its top
    gc.collect()
    freed = heap.sample(libc, tracing=False)["rss_mib"]
    heap.Sampler(libc, every=3600.0, warmup=3600.0, tracing=False, trim=True).take()
    assert heap.sample(libc, tracing=False)["rss_mib"] < freed - 30  # the freed pages left the process
    assert len(held) == 1024


def test_every_update_reaches_the_train_logger_and_the_rate_counts_from_the_warmup() -> None:
    libc = _libc()
    seen: list[int] = []
    inner = type("Logger", (), {"log_update": lambda self, report: seen.append(report.step)})()
    sampler = heap.Sampler(libc, every=3600.0, warmup=0.0, tracing=False, inner=inner)
    for step in (512, 1024, 1536):
        sampler.log_update(type("Report", (), {"step": step})())
    assert seen == [512, 1024, 1536]  # TensorBoard gets every update, though only the first was sampled
    assert [step for _, step, _ in sampler.rows] == [512]
    rows = [(0.0, 0, {}), (10.0, 1_000, {}), (30.0, 5_000, {}), (50.0, 9_000, {})]
    assert heap.steps_per_second(rows, warmup=10.0) == 200.0  # (9,000 - 1,000) / (50 - 10): the warm-up left out
    assert heap.steps_per_second(rows, warmup=60.0) is None
