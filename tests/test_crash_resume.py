"""The crash sweep, short: SIGKILLed training runs resume with nothing lost, left behind or counted twice."""

from __future__ import annotations

import pytest
from benchmark_loader import load_benchmark

from rocketrl.infra.proctree import has_proc

pytestmark = pytest.mark.skipif(not has_proc(), reason="reads process trees from /proc (Linux)")


def test_three_kills_each_resume_where_the_newest_checkpoint_left_off(tmp_path) -> None:
    bench = load_benchmark("crash_resume")
    # Checkpoints every 2 updates (4 arenas x 2 cars x 32 steps = 256 agent-steps per update).
    report = bench.main(["--kills", "3", "--max-seconds", "6", "--checkpoint-interval", "512", "--seed", "1",
                         "--after-new-checkpoint", "--logdir", str(tmp_path)])  # fmt: skip
    assert report["ok"], report
    assert report["kills"] == 3 and report["stray_processes"] == 0
    cycles = report["cycles"]
    # Each cycle was killed only after a new checkpoint, so every start after the first resumed, even on a
    # machine slow enough to let a plain random kill land before the first checkpoint.
    assert all(row["waited_for_checkpoint"] for row in cycles)
    assert [row["resume"] for row in cycles] == [False, True, True]
    assert all(row["processes_below"] >= 2 for row in cycles)  # the two RocketSim workers were there to kill
    for before, after in zip(cycles, cycles[1:]):
        if after["resume"]:
            assert after["resumed_at"] == before["newest_checkpoint"]
        assert after["newest_checkpoint"] >= before["newest_checkpoint"]
    for row in cycles:
        # The work lost is what ran since the newest checkpoint: less than one interval plus one update.
        assert 0 <= row["steps_lost"] < 512 + 256
        assert row["newest_checkpoint"] % 512 == 0
    final = report["final"]
    assert final["exit_code"] == 0 and final["finished_at"] >= final["resumed_at"] + 1024
    assert not final["temporary_files"] and not final["unloadable_checkpoints"]


def test_last_progress_and_checkpoint_steps_read_what_the_trainer_writes(tmp_path) -> None:
    bench = load_benchmark("crash_resume")
    log = "[--]      256/1,000 ( 25.6%)  SPS 100\n[##]    1,024/1,000 (100.0%)  SPS 90\n"
    assert bench.last_progress(log) == 1024 and bench.last_progress("starting\n") is None
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    for name in ("step_000000000512.safetensors", "step_000000001024.safetensors", ".x.safetensors.1.ab.tmp"):
        (folder / name).write_bytes(b"")
    assert bench.checkpoint_steps(folder) == [512, 1024]
    assert bench.temporary_files(tmp_path) == ["checkpoints/.x.safetensors.1.ab.tmp"]
    assert len(bench.unloadable(folder)) == 2  # empty files are not checkpoints
