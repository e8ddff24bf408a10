"""`speed.amp: auto`: the probe's choice rule, its per-machine cache, and a run that resolves it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from rocketrl.config import load_config
from rocketrl.infra import machine_cache
from rocketrl.policy.actor_critic import ActorCritic
from rocketrl.ppo import amp_probe
from rocketrl.ppo.summary import summarize
from rocketrl.ppo.trainer import Trainer

CPU = torch.device("cpu")


def _model() -> ActorCritic:
    return ActorCritic(12, 5, discrete=True, actor_hidden=[16], critic_hidden=[16])


@pytest.fixture
def bf16_cpu(monkeypatch, tmp_path: Path) -> list[dict[str, float]]:
    """A CPU that reports AMX, a private cache folder, and measured times taken from the returned list."""
    monkeypatch.setenv("ROCKETRL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(machine_cache, "cpu_model_and_bf16_flags", lambda: ("Test CPU", ["amx_bf16"]))
    queue: list[dict[str, float]] = []
    monkeypatch.setattr(amp_probe, "cycle_seconds", lambda *args: queue.pop(0))
    return queue


def test_a_cpu_without_bf16_instructions_is_fp32_without_measuring(monkeypatch) -> None:
    monkeypatch.setattr(machine_cache, "cpu_model_and_bf16_flags", lambda: ("Old CPU", []))
    monkeypatch.setattr(amp_probe, "cycle_seconds", lambda *args: pytest.fail("nothing should be measured"))
    choice = amp_probe.choose_amp(_model(), CPU, 64, 256, 32, 4)
    assert choice.mode == "off" and "no bf16 matrix instructions" in choice.reason


@pytest.mark.parametrize(("bf16_seconds", "mode"), [(0.89, "bf16"), (0.91, "off"), (2.8, "off")])
def test_bf16_is_chosen_only_when_at_least_ten_percent_faster(bf16_cpu, bf16_seconds: float, mode: str) -> None:
    bf16_cpu.append({"off": 1.0, "bf16": bf16_seconds})
    choice = amp_probe.choose_amp(_model(), CPU, 64, 256, 32, 4)
    assert choice.mode == mode
    assert "1000 ms in fp32" in choice.reason and f"{1000 * bf16_seconds:.0f} ms in bf16" in choice.reason


def test_the_choice_is_cached_per_machine_and_network(bf16_cpu, monkeypatch) -> None:
    bf16_cpu += [{"off": 1.0, "bf16": 0.5}, {"off": 1.0, "bf16": 3.0}]
    first = amp_probe.choose_amp(_model(), CPU, 64, 256, 32, 4)
    again = amp_probe.choose_amp(_model(), CPU, 64, 256, 32, 4)
    assert first.mode == again.mode == "bf16" and again.reason.endswith("(cached)")
    assert len(bf16_cpu) == 1, "the second call should read the cache, not measure"
    other_network = amp_probe.choose_amp(_model(), CPU, 64, 512, 32, 4)  # another minibatch: measured anew
    assert other_network.mode == "off" and not bf16_cpu
    monkeypatch.setattr(machine_cache, "cpu_model_and_bf16_flags", lambda: ("Other CPU", ["amx_bf16"]))
    bf16_cpu.append({"off": 1.0, "bf16": 2.0})
    assert amp_probe.choose_amp(_model(), CPU, 64, 256, 32, 4).mode == "off"  # another machine: measured anew


def test_an_unreadable_cache_is_measured_again(bf16_cpu, tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / machine_cache.CACHE_FILE).write_text("{not json")
    bf16_cpu.append({"off": 1.0, "bf16": 0.5})
    assert amp_probe.choose_amp(_model(), CPU, 64, 256, 32, 4).mode == "bf16"


def test_measured_cycle_times_are_positive_for_feed_forward_and_lstm() -> None:
    """Both settings are timed; an LSTM may not run in bf16 on a CPU without bf16 instructions (inf)."""
    for model in (_model(), ActorCritic(12, 5, discrete=True, actor_hidden=[16], critic_hidden=[16], lstm_hidden=8)):
        times = amp_probe.cycle_seconds(model, CPU, 8, 16, 2, 2)
        assert set(times) == {"off", "bf16"} and all(t > 0 for t in times.values())
        assert times["off"] < 1.0  # fp32 always runs


def test_bf16_that_does_not_run_is_never_chosen(bf16_cpu) -> None:
    bf16_cpu.append({"off": 1.0, "bf16": float("inf")})
    choice = amp_probe.choose_amp(_model(), CPU, 64, 256, 32, 4)
    assert choice.mode == "off" and "does not run" in choice.reason


def test_a_run_with_amp_auto_says_what_was_chosen_and_why(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(machine_cache, "cpu_model_and_bf16_flags", lambda: ("Old CPU", []))
    overrides = [
        "--env.num-arenas", "2", "--env.stepping", "serial", "--ppo.rollout-steps", "16", "--ppo.minibatches", "1",
        "--model.actor-hidden", "[16]", "--model.critic-hidden", "[16]", "--run.logdir", str(tmp_path),
        "--speed.amp", "auto",
    ]  # fmt: skip
    trainer = Trainer(load_config(None, overrides))
    try:
        assert trainer.amp_mode == "off" and trainer.amp_dtype is None
        text = summarize(trainer)
        assert "amp=auto -> off" in text and "no bf16 matrix instructions" in text
    finally:
        trainer.close()


def test_the_cpu_in_words_parts_two_cpus_of_one_model_name() -> None:
    zen3 = {"model name": "AMD EPYC", "cpu family": "25", "model": "1", "flags": "fpu sse avx2"}
    zen4 = {"model name": "AMD EPYC", "cpu family": "25", "model": "17", "flags": "fpu avx2 avx512f avx512bw"}
    assert machine_cache.cpu_words(zen3) == "AMD EPYC (family 25 model 1, no AVX-512)"
    assert machine_cache.cpu_words(zen4) == "AMD EPYC (family 25 model 17, AVX-512)"
    xeon = {"model name": "Intel(R) Xeon(R) Platinum 8480+", "cpu family": "6", "model": "143",
            "flags": "avx2 avx512f amx_bf16 amx_tile amx_int8"}  # fmt: skip
    assert machine_cache.cpu_words(xeon) == "Intel(R) Xeon(R) Platinum 8480+ (family 6 model 143, AVX-512, AMX)"
    assert machine_cache.cpu_words({"model name": "Some CPU"}) == "Some CPU"  # nothing more known: the name alone
    assert machine_cache.machine_words().endswith(f"{os.cpu_count()} cores")
