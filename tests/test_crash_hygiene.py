"""A killed run leaves nothing behind: every process rocketrl started exits soon after its parent dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from rocketrl.infra.proctree import descendants, dies_with_this_process, has_proc, running

pytestmark = pytest.mark.skipif(not has_proc(), reason="reads process trees from /proc (Linux)")


def test_sigkilled_training_run_leaves_no_worker_process(tmp_path) -> None:
    """`rocketrl train` with two RocketSim worker processes, killed with SIGKILL in mid-run: its workers are
    gone within 2 seconds (they used to live on, orphaned, holding their arenas' memory)."""
    log = tmp_path / "train.log"
    args = [
        "train", "--env.num-arenas", "4", "--env.stepping", "processes", "--env.num-workers", "2",
        "--ppo.rollout-steps", "16", "--model.actor-hidden", "32,32", "--model.critic-hidden", "32,32",
        "--timesteps", "100000000", "--logdir", str(tmp_path), "--name", "kill", "--ascii", "--device", "cpu",
    ]  # fmt: skip
    with log.open("w") as out:  # a file, not a pipe: a surviving worker must not hold the test's pipe open
        proc = subprocess.Popen(
            [sys.executable, "-m", "rocketrl.cli", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,
            preexec_fn=dies_with_this_process(),
        )
    try:
        deadline = time.time() + 240
        while "SPS" not in log.read_text() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.5)
        assert "SPS" in log.read_text(), log.read_text()[-2000:]
        workers = descendants(proc.pid)
        assert len(workers) >= 2, f"expected the RocketSim workers below {proc.pid}, found {workers}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.time() + 2.0
        while any(running(pid) for pid in workers) and time.time() < deadline:
            time.sleep(0.1)
        survivors = [pid for pid in workers if running(pid)]
        assert not survivors, f"processes left after the run was killed: {survivors}"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # clean up whatever a failure left behind
        except ProcessLookupError:
            pass
