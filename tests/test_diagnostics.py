"""Diagnostics: the verdict on synthetic timings, diagnose's JSON and --compare, bench --check, doctor."""

from __future__ import annotations

import argparse
import json
import textwrap

import pytest

from rocketrl.cli import main
from rocketrl.diagnostics import env as diagnose_env
from rocketrl.diagnostics.bench import check, ratios_of
from rocketrl.diagnostics.diagnose import STAGES, busy_note, compare, parse_tests, verdict
from rocketrl.diagnostics.doctor import Doctor

# ------------------------------------------------------------------------------------------ verdict
CPU = {"device": "cpu", "workers": 1, "cpus": 4, "epochs": 4, "minibatches": 4, "amp": "off", "compile": False}


def test_env_bound_in_physics_asks_for_workers_or_arenas():
    v = verdict({"env": 7.8, "copy": 0.2, "inference": 1.0, "learn": 1.0}, physics_share=0.85, settings=CPU)
    assert v["bottleneck"] == "env"
    assert v["message"].startswith("env-bound: 78% of step time in the environment (85% physics)")
    assert "env.num_workers (now 1 of 4 cores) or env.num_arenas" in v["message"]
    assert sum(v["shares"].values()) == pytest.approx(1.0)


def test_env_bound_in_the_env_layer_asks_for_compile():
    v = verdict({"env": 8, "copy": 0, "inference": 1, "learn": 1}, physics_share=0.2, settings=CPU)
    assert v["bottleneck"] == "env" and "80% of it in observations and rewards" in v["message"]
    assert "--env.compile true" in v["message"]


def test_env_bound_with_every_core_busy_says_so():
    v = verdict({"env": 8, "inference": 1, "learn": 1}, physics_share=0.9, settings={**CPU, "workers": 4})
    assert "every CPU core already steps arenas (4 workers, 4 cores)" in v["message"]


def test_inference_bound_names_compile_amp_and_a_gpu_unless_on():
    v = verdict({"env": 1, "copy": 0, "inference": 6, "learn": 1}, settings=CPU)
    assert v["bottleneck"] == "inference"
    assert v["message"] == (
        "inference-bound: 75% of step time in the policy forward pass; "
        "try --speed.compile true, --speed.amp bf16 or a GPU (--device cuda)"
    )
    on = verdict({"inference": 6, "env": 1}, settings={"device": "cuda:0", "compile": True, "amp": "bf16"})
    assert "--speed" not in on["message"] and "env.num_arenas" in on["message"]


def test_learn_copy_balanced_and_unknown():
    learn = verdict({"env": 1, "inference": 1, "learn": 8}, settings=CPU)
    assert learn["bottleneck"] == "learn"
    assert "learn-bound: 80%" in learn["message"] and "fewer --ppo.epochs (now 4)" in learn["message"]
    copy = verdict({"env": 1, "copy": 5, "inference": 1, "learn": 1}, settings={"device": "cuda"})
    assert copy["bottleneck"] == "copy" and "env.pin_memory" in copy["message"]
    balanced = verdict({"env": 3.5, "inference": 3, "learn": 3.5})
    assert balanced["bottleneck"] == "balanced" and balanced["message"].startswith("balanced:")
    assert verdict({stage: 0.0 for stage in STAGES})["bottleneck"] == "unknown"


def test_busy_machine_note():
    assert busy_note(0.5, 2) is None and busy_note(None, 2) is None
    assert "load average 4.8 on 2 CPU cores" in busy_note(4.8, 2)


def test_unknown_test_names_the_option_and_the_choices(capsys):
    assert parse_tests("all") == ["env", "inference", "train", "gpu"]
    assert parse_tests("train,env") == ["env", "train"]
    with pytest.raises(argparse.ArgumentTypeError, match="unknown test 'bogus'; choose env"):
        parse_tests("bogus")
    with pytest.raises(SystemExit):
        main(["diagnose", "--test", "bogus"])
    assert "argument --test: unknown test 'bogus'" in capsys.readouterr().err


def test_missing_compare_file_is_a_clear_error(tmp_path, capsys):
    missing = tmp_path / "old.json"
    assert main(["diagnose", "--test", "gpu", "--compare", str(missing)]) == 2
    err = capsys.readouterr().err
    assert f"--compare {missing}: no such file" in err and "rocketrl diagnose --json" in err


# ------------------------------------------------------------------------------------------ compare
def test_compare_marks_better_and_worse_by_unit():
    old = {"settings": {"num_envs": 4}, "env": {"x": {"agent_steps_per_s": 100.0, "env_step_ms": 2.0, "arenas": 4}}}
    new = {"settings": {"num_envs": 8}, "env": {"x": {"agent_steps_per_s": 150.0, "env_step_ms": 3.0, "arenas": 8}}}
    new["train"] = {"shares": {"env": 0.5}}
    rows = {row["key"]: row for row in compare(old, new)}
    assert rows["env.x.agent_steps_per_s"]["change"] == pytest.approx(0.5)
    assert rows["env.x.agent_steps_per_s"]["verdict"] == "better"
    assert rows["env.x.env_step_ms"]["verdict"] == "worse"
    assert rows["train.shares.env"]["verdict"] == "new"
    assert "settings.num_envs" not in rows and "env.x.arenas" not in rows


# ------------------------------------------------------------------------------------------ diagnose
TINY_CONFIG = """
env: {num_arenas: 2, stepping: serial, num_workers: 1}
ppo: {rollout_steps: 8, minibatches: 2, epochs: 1}
model: {actor_hidden: [16], critic_hidden: [16]}
run: {device: cpu}
"""


def test_diagnose_json_schema_and_compare(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(diagnose_env, "ENGINES", ("rocketsim", "no_such_engine"))
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY_CONFIG)
    out = tmp_path / "diag.json"
    assert main(["diagnose", "--config", str(config), "--num-steps", "8", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["schema"] == "rocketrl.diagnose/1" and result["tests"] == ["env", "inference", "train", "gpu"]
    assert result["settings"]["num_envs"] == 2 and result["settings"]["device"] == "cpu"
    env = result["env"]["rocketsim"]
    for key in ("physics_ticks_per_s", "env_steps_per_s", "agent_steps_per_s", "physics_share"):
        assert env[key] > 0
    assert "no_such_engine" in result["env"]["no_such_engine"]["error"]
    cpu = result["inference"]["cpu"]
    assert set(cpu) == {"fp32", "bf16"} and list(cpu["fp32"]) == ["1", "2", "4"]  # up to 2 arenas x 2 cars
    assert set(cpu["fp32"]["4"]) == {"mean_ms", "p50_ms", "p95_ms", "p99_ms", "inferences_per_s"}
    train = result["train"]
    assert set(train["seconds"]) == set(STAGES) and sum(train["shares"].values()) == pytest.approx(1.0, abs=1e-3)
    assert train["agent_steps_per_s"] > 0 and train["batch"] == 32
    assert result["verdict"]["bottleneck"] in {"env", "copy", "inference", "learn", "balanced"}
    assert isinstance(result["gpu"]["available"], bool)
    assert {"cpus", "torch_threads", "peak_rss_mib"} <= set(result["system"])
    printed = capsys.readouterr().out
    assert "verdict" in printed and result["verdict"]["message"][:20] in printed

    assert main(["diagnose", "--config", str(config), "--test", "gpu", "--compare", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"change against {out}" in printed and "system.peak_rss_mib" in printed
    assert "measures only in" in printed  # env, inference and train did not run this time


# ------------------------------------------------------------------------------------------ bench
def _report(ratio: float, ok: bool = True) -> dict:
    return {"benchmarks": {"env_throughput": {"ok": ok, "ratios": {"env_to_raw_eager": ratio}}}}


def test_bench_check_passes_within_tolerance_and_fails_below(tmp_path, capsys):
    baseline, current = tmp_path / "base.json", tmp_path / "now.json"
    baseline.write_text(json.dumps(_report(0.8)))
    current.write_text(json.dumps(_report(0.7)))  # -12.5%: inside 20%
    assert main(["bench", "--check", str(baseline), "--report", str(current), "--tolerance", "0.2"]) == 0
    assert "ok    env_throughput.ratios.env_to_raw_eager: 0.700 (baseline 0.800, -12.5%)" in capsys.readouterr().err
    current.write_text(json.dumps(_report(0.6)))  # -25%
    assert main(["bench", "--check", str(baseline), "--report", str(current), "--tolerance", "0.2"]) == 1
    err = capsys.readouterr().err
    assert "FAIL  env_throughput.ratios.env_to_raw_eager: 0.600 < baseline 0.800" in err
    failures, _ = check(_report(0.8), _report(0.8, ok=False), 0.2)
    assert failures and "the benchmark failed" in failures[0]
    assert main(["bench", "--check", str(tmp_path / "none.json"), "--report", str(current)]) == 2
    assert "--check" in capsys.readouterr().err


def test_nested_ratios_are_flattened():
    result = {"ratios": {"1v1": {"1024": 3.5, "4096": 7}, "eager": 0.8, "bad": "x", "flag": True}}
    assert ratios_of(result) == {"1v1.1024": 3.5, "1v1.4096": 7.0, "eager": 0.8}


FAKE_BENCHMARK = """
import json, sys
{long}
print("warming up")
print(json.dumps({{"benchmark": "{name}", "quick": "--quick" in sys.argv, "ratios": {{"speedup": {ratio}}}}}))
"""


def test_bench_runs_scripts_skips_long_ones_and_checks(tmp_path, capsys):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    (folder / "fast.py").write_text(textwrap.dedent(FAKE_BENCHMARK.format(long="", name="fast", ratio=2.0)))
    slow = FAKE_BENCHMARK.format(long="LONG_BENCHMARK = True", name="slow", ratio=1.0)
    (folder / "slow.py").write_text(textwrap.dedent(slow))
    out = tmp_path / "report.json"
    assert main(["bench", "--dir", str(folder), "--quick", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    entry = report["benchmarks"]["fast"]
    assert entry["ok"] and entry["result"]["quick"] is True and entry["ratios"] == {"speedup": 2.0}
    assert "slow" not in report["benchmarks"] and "--only slow" in report["skipped"]["slow"]
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"benchmarks": {"fast": {"ok": True, "ratios": {"speedup": 3.0}}}}))
    assert main(["bench", "--dir", str(folder), "--only", "fast", "--check", str(baseline), "--out", str(out)]) == 1
    assert "FAIL  fast.ratios.speedup: 2.000 < baseline 3.000" in capsys.readouterr().err
    assert main(["bench", "--dir", str(folder), "--only", "nope"]) == 2
    assert "no benchmark named 'nope'" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ doctor
def test_doctor_passes_here(tmp_path, capsys):
    assert main(["doctor", "--logdir", str(tmp_path / "runs")]) == 0
    printed = capsys.readouterr().out
    assert "FAIL" not in printed and "PASS  env step" in printed and "0 failed" in printed


def test_doctor_reports_missing_meshes_with_a_fix(tmp_path, monkeypatch):
    empty = tmp_path / "meshes"
    empty.mkdir()
    monkeypatch.setenv("ROCKETRL_COLLISION_MESHES", str(empty))
    checks = {c.name: c for c in Doctor(str(tmp_path)).run()}
    meshes = checks["collision meshes"]
    assert meshes.status == "FAIL" and "does not hold soccar/*.cmf" in meshes.detail
    assert "point ROCKETRL_COLLISION_MESHES at a folder that contains soccar/*.cmf" in meshes.fix
    assert checks["env step"].status == "SKIP"
    assert main(["doctor", "--logdir", str(tmp_path)]) == 1


def test_doctor_reports_an_unwritable_log_folder(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    checks = {c.name: c for c in Doctor(str(blocker / "runs")).run()}
    assert checks["log folder writable"].status == "FAIL" and "--logdir" in checks["log folder writable"].fix
