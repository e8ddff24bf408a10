"""A measurement run in a child process (rocketrl.infra.bench_child): its JSON comes back, a hang is stopped at
the time limit with everything it started, a failure names what failed, and the peer benchmark without its
packages says how to get them."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from benchmark_loader import load_benchmark

from rocketrl.infra.bench_child import package_versions, remove_orphaned_segments, run_script


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "child.py"
    path.write_text(body)
    return path


def test_the_last_json_line_comes_back_and_arguments_and_environment_reach_the_child(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        "import json, os, sys\nprint('{not json, an earlier line')\nprint('progress')\n"
        "print(json.dumps({'arg': sys.argv[1], 'env': os.environ['PROBE']}))\nprint('trailing words')\n",
    )
    assert run_script(script, ["seven"], 30, "probe", extra_env={"PROBE": "x"}) == {"arg": "seven", "env": "x"}


def test_a_failure_names_what_failed_with_the_exit_status_and_the_output_tail(tmp_path: Path) -> None:
    script = _script(tmp_path, "print('about to fail')\nraise SystemExit(3)\n")
    result = run_script(script, [], 30, "probe")
    assert result["error"] == "probe: exit status 3"
    assert "about to fail" in result["output_tail"]
    assert run_script(script, [], 30, "probe", expect_json=False)["error"] == "probe: exit status 3"
    assert run_script(_script(tmp_path, "pass\n"), [], 30, "probe", expect_json=False) == {}


def test_a_hang_is_stopped_at_the_time_limit_with_the_processes_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = _script(
        tmp_path,
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(300)\n",
    )
    started = time.monotonic()
    result = run_script(script, [], 3, "hang")
    assert time.monotonic() - started < 30
    assert result["error"] == "hang: stopped after the 3 s time limit"
    grandchild = int(pid_file.read_text())
    for _ in range(50):  # the kill is asynchronous; give the kernel a moment to reap
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        stat = Path(f"/proc/{grandchild}/stat")
        if stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z":
            break  # killed, waiting only for its parent (gone) to be reaped by init
        time.sleep(0.1)
    else:
        pytest.fail("the child's own child outlived the time limit")


def test_done_stops_the_child_early_without_an_error(tmp_path: Path) -> None:
    marker = tmp_path / "ready"
    script = _script(tmp_path, f"import time\nopen({str(marker)!r}, 'w').write('1')\ntime.sleep(300)\n")
    started = time.monotonic()
    assert run_script(script, [], 120, "early", done=marker.exists) == {}
    assert time.monotonic() - started < 60


def test_orphaned_segments_are_unlinked_and_mapped_or_foreign_ones_kept(tmp_path: Path, monkeypatch) -> None:
    import rocketrl.infra.bench_child as bench_child

    monkeypatch.setattr(bench_child, "SHM_DIR", tmp_path)
    (tmp_path / "psm_orphan").write_text("x")
    (tmp_path / "psm_other").write_text("x")
    assert bench_child.shm_segments("psm_*") == {"psm_orphan", "psm_other"}
    remove_orphaned_segments({"psm_orphan"})
    assert bench_child.shm_segments("psm_*") == {"psm_other"}


def test_package_versions_name_missing_distributions_none() -> None:
    found = package_versions(("numpy", "no-such-distribution-rocketrl"))
    assert found["numpy"] and found["no-such-distribution-rocketrl"] is None


def test_the_peer_without_its_packages_is_skipped_naming_the_extra(monkeypatch) -> None:
    peer = load_benchmark("_peer_rlgym_learn")
    monkeypatch.setattr(peer, "PEER_PACKAGES", ("no_such_module_rocketrl_peer",))
    result = peer.measure_peer(1, 5.0)
    assert set(result) == {"skipped"}
    assert "pip install -e .[peer]" in result["skipped"] and "no_such_module_rocketrl_peer" in result["skipped"]


def test_train_throughput_trains_the_peers_configuration() -> None:
    bench = load_benchmark("train_throughput")
    peer = load_benchmark("_peer_rlgym_learn")
    overrides = bench.our_overrides(50, bench.rollout_steps_for(50), "cpu")
    assert overrides[overrides.index("--env.tick-skip") + 1] == str(peer.TICK_SKIP)
    assert overrides[overrides.index("--env.num-workers") + 1] == str(peer.WORKERS)
    assert overrides[overrides.index("--model.actor-hidden") + 1] == "[" + ",".join(map(str, peer.HIDDEN)) + "]"
    assert 50 * 2 * peer.TEAM_SIZE * bench.rollout_steps_for(50) == peer.AGENT_STEPS_PER_ITERATION


def test_a_child_started_to_die_with_this_process_dies_when_it_is_killed_outright(tmp_path: Path) -> None:
    """A test or benchmark stopped with SIGKILL (or an interrupted pytest) must not leave a training run behind."""
    import signal
    import subprocess
    import sys

    from rocketrl.infra.proctree import has_proc, running

    if not has_proc() or not sys.platform.startswith("linux"):
        pytest.skip("the parent-death signal is Linux's")
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time\n"
            "from rocketrl.infra.proctree import dies_with_this_process\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'],"
            " start_new_session=True, preexec_fn=dies_with_this_process())\n"
            f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
            "time.sleep(300)\n",
        ]
    )
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        child = int(pid_file.read_text())
        assert running(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while running(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not running(child), "the child outlived its parent"
    finally:
        parent.kill()
