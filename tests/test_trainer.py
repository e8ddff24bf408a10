"""The PPO trainer: a debug run end to end, exact resume, skipped non-finite updates, signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from rocketrl.config import load_config
from rocketrl.infra.checkpoint import load_checkpoint
from rocketrl.infra.proctree import dies_with_this_process
from rocketrl.ppo import update as update_module
from rocketrl.ppo.train_logger import UpdateReport
from rocketrl.ppo.trainer import Trainer

SMALL = [
    "--env.num-arenas", "4", "--env.stepping", "serial", "--env.num-workers", "1",
    "--ppo.rollout-steps", "16", "--ppo.minibatches", "2", "--ppo.epochs", "2",
    "--model.actor-hidden", "32,32", "--model.critic-hidden", "32,32",
    "--run.device", "cpu",
]  # fmt: skip
BATCH = 4 * 2 * 16  # arenas x cars x rollout steps


def small_config(tmp_path: Path, name: str, *extra: str):
    return load_config(None, [*SMALL, "--run.logdir", str(tmp_path), "--run.name", name, *extra])


class StopAfter:
    """A logger that interrupts training (as Ctrl-C would) once `updates` updates are done."""

    def __init__(self, updates: int) -> None:
        self.updates = updates

    def log_update(self, report: UpdateReport) -> None:
        if report.updates >= self.updates:
            signal.raise_signal(signal.SIGINT)  # the trainer's handler stops the run after this update


def train(cfg, resume: str | None = None, logger: object | None = None) -> Trainer:
    trainer = Trainer(cfg)
    try:
        if resume:
            trainer.resume(resume)
        trainer.learn(logger)
    finally:
        trainer.close()
    return trainer


def test_resume_continues_the_same_run_step_for_step(tmp_path):
    steps = ["--run.timesteps", str(3 * BATCH), "--run.checkpoint-interval", str(BATCH)]
    straight = train(small_config(tmp_path, "straight", *steps))
    interrupted = train(small_config(tmp_path, "split", *steps), logger=StopAfter(1))
    assert interrupted.stopped_by_signal == signal.SIGINT and interrupted.counters.updates == 1
    resumed = train(small_config(tmp_path, "split", *steps), resume="latest")
    assert resumed.counters.global_step == straight.counters.global_step == 3 * BATCH
    assert resumed.counters.updates == 3
    a, _ = load_checkpoint(straight.checkpoints.latest())
    b, _ = load_checkpoint(resumed.checkpoints.latest())
    for key, value in a["model"].items():
        torch.testing.assert_close(b["model"][key], value, rtol=0, atol=0, msg=f"model.{key} differs after resume")
    for section in ("obs_norm", "return_scaler"):
        for key, value in a[section].items():
            torch.testing.assert_close(b[section][key], value, rtol=0, atol=0, msg=f"{section}.{key} differs")
    assert a["recent_returns"] == b["recent_returns"]
    assert a["counters"] == b["counters"]


def test_max_minutes_counts_the_whole_run_so_a_resumed_run_trains_only_what_is_left(tmp_path):
    steps = ["--run.timesteps", str(3 * BATCH), "--run.checkpoint-interval", str(BATCH)]
    first = train(small_config(tmp_path, "timed", *steps), logger=StopAfter(1))
    saved, _ = load_checkpoint(first.checkpoints.latest())
    assert 0 < saved["train_seconds"] <= first.train_seconds and first.counters.updates == 1
    spent = f"{saved['train_seconds'] / 60.0:.9f}"  # the limit used up by the checkpoint: no update more
    resumed = train(small_config(tmp_path, "timed", *steps, "--run.max-minutes", spent), resume="latest")
    assert resumed.counters.updates == 1 and resumed.train_seconds >= saved["train_seconds"]
    longer = f"{saved['train_seconds'] / 60.0 + 10.0:.9f}"  # ten minutes left: it runs to its steps
    finished = train(small_config(tmp_path, "timed", *steps, "--run.max-minutes", longer), resume="latest")
    assert finished.counters.updates == 3


def test_non_finite_loss_skips_the_update_and_keeps_weights_finite(tmp_path, monkeypatch):
    real = update_module.ppo_losses
    calls = {"n": 0}

    def sometimes_nan(*args, **kwargs):
        terms = real(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] % 2 == 1:
            terms.policy = terms.policy * float("nan")
        return terms

    monkeypatch.setattr(update_module, "ppo_losses", sometimes_nan)
    trainer = train(small_config(tmp_path, "nan", "--run.timesteps", str(2 * BATCH)))
    assert trainer.counters.skipped_updates >= 2
    state, _ = load_checkpoint(trainer.checkpoints.latest())
    assert all(torch.isfinite(v).all() for v in state["model"].values())


def test_entropy_weight_follows_its_schedule_update_by_update(tmp_path, monkeypatch):
    """Each update weighs the entropy bonus by the schedule's value at the step the update starts from."""
    seen: list[float] = []
    real = update_module.ppo_update

    def record(*args, **kwargs):
        seen.append(args[6])  # entropy_coef, after learning_rate
        return real(*args, **kwargs)

    monkeypatch.setattr("rocketrl.ppo.algorithm.ppo_update", record)
    extra = ["--run.timesteps", str(4 * BATCH), "--ppo.entropy-coef", "0.02", "--ppo.entropy-schedule", "linear",
             "--ppo.entropy-coef-end", "0.004"]  # fmt: skip
    train(small_config(tmp_path, "entropy", *extra))
    # Updates start after 1, 2, 3 and 4 batches: progress 1/4 .. 1 of the linear 0.02 -> 0.004.
    assert seen == pytest.approx([0.016, 0.012, 0.008, 0.004])
    assert small_config(tmp_path, "constant").ppo.resolved_entropy_coef_end == 0.01


def test_reward_weights_follow_their_schedule_rollout_by_rollout(tmp_path, monkeypatch):
    """Each rollout is paid with the reward weights at the step it starts from (rewards.weights_end), and the
    scheduled weights are logged as reward_weights/<term>."""
    from rocketrl.env.rewards import RewardFunction

    rewards = tmp_path / "rewards.yaml"
    rewards.write_text("weights: {goal: 10.0, touch: 1.0}\nweights_end: {touch: 0.2}\n")
    seen: list[list[float]] = []
    real = RewardFunction.set_progress

    def record(self, progress):
        real(self, progress)
        seen.append(list(self.weights))

    monkeypatch.setattr(RewardFunction, "set_progress", record)
    logged: list[dict[str, float]] = []

    class Scalars:
        def log_update(self, report: UpdateReport) -> None:
            logged.append(report.extra)

    cfg = small_config(tmp_path, "reward_schedule", "--run.timesteps", str(4 * BATCH), "--env.rewards", str(rewards))
    train(cfg, logger=Scalars())
    # Rollouts start after 0, 1, 2 and 3 batches: progress 0 .. 3/4 of touch's linear 1.0 -> 0.2; goal stays.
    assert seen == [pytest.approx([10.0, w]) for w in (1.0, 0.8, 0.6, 0.4)]
    # Reports follow each update, at progress 1/4 .. 1.
    assert [e["reward_weights/touch"] for e in logged] == pytest.approx([0.8, 0.6, 0.4, 0.2])


def test_lstm_policy_trains_and_resumes(tmp_path):
    lstm = ["--model.lstm", "true", "--model.lstm-hidden", "16", "--model.sequence-length", "8"]
    trainer = train(small_config(tmp_path, "lstm", *lstm, "--run.timesteps", str(BATCH)))
    assert trainer.counters.updates == 1
    state, _ = load_checkpoint(trainer.checkpoints.latest())
    assert any(key.startswith("lstm.") for key in state["model"])


def _run_cli(args: list[str], cwd: Path, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "rocketrl.cli", *args], cwd=cwd, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=dies_with_this_process(), **kwargs,
    )  # fmt: skip


def test_train_debug_runs_end_to_end_as_a_command(tmp_path):
    proc = _run_cli(["train", "--debug", "--logdir", str(tmp_path), "--name", "dbg", "--ascii"], tmp_path)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    run = tmp_path / "dbg"
    assert (run / "config.yaml").is_file() and (run / "config.json").is_file()
    assert list((run / "checkpoints").glob("step_*.safetensors"))
    assert list(run.glob("events.out.tfevents.*")), "no TensorBoard event file"
    assert "finished at step 1,024" in out
    assert load_config(run / "config.yaml").run.debug


def test_sigint_saves_a_checkpoint_and_exits_cleanly(tmp_path):
    args = ["train", *SMALL, "--timesteps", "100000000", "--logdir", str(tmp_path), "--name", "sig", "--ascii"]
    proc = _run_cli(args, tmp_path)
    assert proc.stdout is not None
    deadline = time.time() + 240
    for line in proc.stdout:  # wait for the first update to finish
        if "SPS" in line or time.time() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "stopped by signal" in out
    assert list((tmp_path / "sig" / "checkpoints").glob("step_*.safetensors"))


@pytest.mark.parametrize("flag", ["--ppo.learnin-rate", "--env.num-arenas"])
def test_bad_config_input_names_the_field(tmp_path, flag):
    value = "0.1" if "learnin" in flag else "0"
    proc = _run_cli(["train", flag, value, "--logdir", str(tmp_path)], tmp_path)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert flag.lstrip("-").split(".")[1].replace("-", "_") in out


def test_bf16_autocast_trains_with_finite_weights(tmp_path):
    trainer = train(small_config(tmp_path, "amp", "--speed.amp", "bf16", "--run.timesteps", str(BATCH)))
    assert trainer.amp_dtype == torch.bfloat16 and trainer.counters.skipped_updates == 0
    state, _ = load_checkpoint(trainer.checkpoints.latest())
    assert all(torch.isfinite(v).all() for v in state["model"].values())


@pytest.mark.parametrize("action", ["discrete", "continuous"])
def test_bf16_rollouts_act_on_a_copy_refreshed_from_the_trained_weights(tmp_path, action):
    cfg = small_config(tmp_path, f"amp-{action}", "--speed.amp", "bf16", "--env.action", action)
    cfg.run.timesteps = 2 * BATCH
    trainer = train(cfg)
    copy_ = trainer.acting_copy
    assert copy_ is not None and all(p.dtype == torch.bfloat16 for p in copy_.parameters())
    assert trainer.counters.updates == 2 and trainer.counters.skipped_updates == 0
    # After the update the copy lags; acting refreshes it to the bf16 cast of the trained weights.
    model, dtype = trainer.algorithm.begin_rollout()
    assert model is copy_ and dtype == torch.bfloat16
    for copied, source in zip(copy_.parameters(), trainer.model.parameters(), strict=True):
        assert torch.equal(copied, source.detach().to(torch.bfloat16))
    # It acts like the float32 model: values and log-probs of the same observations agree to bf16 precision.
    obs = torch.randn(64, trainer.env.obs_size)
    with torch.no_grad():
        value_32 = trainer.model.value(obs)
        value_16 = copy_.value(obs.to(torch.bfloat16))
        action_16, logprob_16, _, _ = copy_.act(obs.to(torch.bfloat16))
        logprob_32, _, _ = trainer.model.evaluate(obs, action_16)
    assert value_16.dtype == torch.float32 and logprob_16.dtype == torch.float32
    assert torch.allclose(value_16, value_32, atol=0.05 + 0.05 * value_32.abs().max().item())
    assert torch.allclose(logprob_16, logprob_32, atol=0.1 + 0.05 * logprob_32.abs().max().item())


def test_without_bf16_rollouts_act_on_the_model_itself(tmp_path):
    trainer = Trainer(small_config(tmp_path, "fp32"))
    try:
        assert trainer.acting_copy is None and trainer.algorithm.begin_rollout() == (trainer.model, torch.float32)
    finally:
        trainer.close()


def test_rollout_values_are_the_critic_values_of_the_stored_observations(tmp_path):
    # Feed-forward critics run after the rollout in batches; the values must equal a per-step forward.
    trainer = Trainer(small_config(tmp_path, "values"))
    try:
        obs, state, start = trainer._restart_episodes()
        timings = {"env": 0.0, "copy": 0.0, "inference": 0.0, "learn": 0.0}
        trainer._collect(obs, state, start, timings)
        s = trainer.storage
        with torch.no_grad():
            expected = torch.stack([trainer.model.value(s.obs[t]) for t in range(s.obs.shape[0])])
        torch.testing.assert_close(s.values, expected, rtol=1e-5, atol=1e-5)
        assert s.values.abs().sum() > 0 and timings["inference"] > 0
    finally:
        trainer.close()


@pytest.mark.skipif(torch.cuda.is_available(), reason="fp16 on an automatically chosen CPU device only")
def test_fp16_on_an_automatic_cpu_device_warns_and_trains_in_fp32(tmp_path):
    cfg = small_config(tmp_path, "fp16", "--speed.amp", "fp16", "--run.device", "auto")
    with pytest.warns(UserWarning, match="fp16.*needs CUDA"):
        trainer = Trainer(cfg)
    try:
        assert trainer.amp_dtype is None and trainer.acting_copy is None
    finally:
        trainer.close()


def test_policy_actor_acts_without_touching_the_normalizer():
    from rocketrl.policy.actor_critic import ActorCritic, PolicyActor
    from rocketrl.policy.normalize import ObservationNormalizer

    model = ActorCritic(180, 90, actor_hidden=[16], critic_hidden=[16])
    normalizer = ObservationNormalizer(180, "cpu")
    normalizer.update(torch.randn(64, 180) * 3 + 1)
    before = {k: v.clone() for k, v in normalizer.state_dict().items()}
    actor = PolicyActor(model, normalizer, deterministic=True)
    obs = torch.randn(8, 180)
    first, state = actor.act(obs)
    second, _ = actor.act(obs)
    assert first.shape == (8,) and first.dtype == torch.long and ((first >= 0) & (first < 90)).all()
    assert torch.equal(first, second) and state is None
    for key, value in normalizer.state_dict().items():
        assert torch.equal(value, before[key])


def test_compiled_model_trains_and_saves_plain_parameter_names(tmp_path):
    trainer = train(small_config(tmp_path, "compiled", "--speed.compile", "true", "--run.timesteps", str(BATCH)))
    assert trainer.model.actor._compiled_call_impl is not None, "fell back to eager"
    state, _ = load_checkpoint(trainer.checkpoints.latest())
    assert all(torch.isfinite(v).all() for v in state["model"].values())
    assert not any("_orig_mod" in key for key in state["model"]), "compiled names leaked into the checkpoint"


def test_compile_failure_warns_and_trains_eagerly(tmp_path, monkeypatch):
    def fail(self, *args, **kwargs):
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(torch.nn.Module, "compile", fail)
    with pytest.warns(UserWarning, match="speed.compile: torch.compile failed"):
        trainer = train(small_config(tmp_path, "fallback", "--speed.compile", "true", "--run.timesteps", str(BATCH)))
    assert trainer.model.actor._compiled_call_impl is None and trainer.counters.updates == 1


def test_gpu_monitor_is_a_clean_no_op_without_cuda():
    from rocketrl.infra.gpu import GpuMonitor

    monitor = GpuMonitor(torch.device("cpu"))
    assert not monitor.available and monitor.read() is None


def test_tensorboard_scalars_use_the_stable_names(tmp_path):
    from rocketrl.infra.tb_scalars import read_scalars
    from rocketrl.ppo.train_logger import TrainLogger

    cfg = small_config(tmp_path, "tb", "--run.timesteps", str(2 * BATCH))
    trainer = Trainer(cfg)
    logger = TrainLogger(trainer.run_dir, cfg.run.timesteps, ascii_only=True, quiet=True)
    try:
        trainer.learn(logger)
    finally:
        logger.close()
        trainer.close()
    scalars = read_scalars(trainer.run_dir)
    tags = set(scalars)
    expected = {"charts/SPS", "losses/policy", "losses/value", "losses/entropy", "losses/approx_kl",
                "losses/clipfrac", "losses/explained_variance", "losses/grad_norm", "time/env",
                "time/inference", "time/learn", "rewards/touch", "rewards/goal"}  # fmt: skip
    assert expected <= tags, expected - tags
    assert not any(tag.startswith("gpu/") for tag in tags)
    # one SPS value per update, at its agent-step: two updates of BATCH
    assert [e.step for e in scalars["charts/SPS"]] == [BATCH, 2 * BATCH]


def test_wandb_gets_the_same_scalars_when_asked(tmp_path, monkeypatch):
    import types

    from rocketrl.config import config_to_dict
    from rocketrl.ppo.train_logger import TrainLogger

    calls: dict[str, list] = {"init": [], "log": [], "finish": []}

    class FakeRun:
        def log(self, data, step):
            calls["log"].append((step, dict(data)))

        def finish(self):
            calls["finish"].append(True)

    def init(**kwargs):
        calls["init"].append(kwargs)
        return FakeRun()

    monkeypatch.setitem(sys.modules, "wandb", types.SimpleNamespace(init=init))
    cfg = small_config(tmp_path, "wb", "--run.timesteps", str(BATCH), "--run.wandb", "true")
    trainer = Trainer(cfg)
    logger = TrainLogger(trainer.run_dir, cfg.run.timesteps, quiet=True, wandb_config=config_to_dict(cfg))
    try:
        trainer.learn(logger)
    finally:
        logger.close()
        trainer.close()
    assert calls["init"][0]["project"] == "rocketrl" and calls["init"][0]["name"] == "wb"
    assert calls["init"][0]["config"]["run"]["wandb"] is True
    step, data = calls["log"][0]
    assert step == BATCH and "charts/SPS" in data and "losses/policy" in data
    assert calls["finish"] == [True]


def test_wandb_asked_for_but_missing_is_a_clear_error(tmp_path, monkeypatch):
    from rocketrl.ppo.train_logger import TrainLogger

    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb -> ImportError
    with pytest.raises(RuntimeError, match="pip install wandb"):
        TrainLogger(tmp_path, 10, quiet=True, wandb_config={})


def test_a_second_signal_stops_at_once(tmp_path):
    trainer = Trainer(small_config(tmp_path, "twice"))
    try:
        trainer._on_signal(signal.SIGINT, None)
        assert trainer.stopped_by_signal == signal.SIGINT
        with pytest.raises(KeyboardInterrupt, match="twice"):
            trainer._on_signal(signal.SIGINT, None)
    finally:
        trainer.close()


def test_checkpoint_minutes_saves_by_wall_time_and_the_run_resumes(tmp_path, monkeypatch):
    """With run.checkpoint_minutes a checkpoint follows every update once that much time has passed, whatever
    the step interval; the clock is faked so that each update takes 40 s."""
    import rocketrl.ppo.trainer as trainer_module

    clock = {"now": 1000.0}

    class FakeTime:
        perf_counter = staticmethod(time.perf_counter)

        @staticmethod
        def monotonic() -> float:
            return clock["now"]

    class Tick:
        def log_update(self, report: UpdateReport) -> None:
            clock["now"] += 40.0

    monkeypatch.setattr(trainer_module, "time", FakeTime)
    saved: list[int] = []
    real_save = Trainer.save_checkpoint

    def spy(self, *args, **kwargs):
        saved.append(self.counters.global_step)
        return real_save(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "save_checkpoint", spy)
    steps = ["--run.timesteps", str(6 * BATCH), "--run.checkpoint-interval", str(100 * BATCH)]
    train(small_config(tmp_path, "by_steps", *steps), logger=Tick())
    assert saved == [6 * BATCH]  # only the final one: the step interval is never reached
    saved.clear()
    cfg = small_config(tmp_path, "by_time", *steps, "--run.checkpoint-minutes", "1")
    train(cfg, logger=Tick())
    # 40 s per update: 80 s since the last save after updates 2, 4 and 6.
    assert saved == [2 * BATCH, 4 * BATCH, 6 * BATCH]
    resumed = train(small_config(tmp_path, "by_time", *steps, "--run.timesteps", str(7 * BATCH)), resume="latest")
    assert resumed.counters.global_step == 7 * BATCH


def test_checkpoint_minutes_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match=r"run\.checkpoint_minutes=0"):
        small_config(tmp_path, "bad", "--run.checkpoint-minutes", "0")


def test_train_hands_every_update_through_the_wrapping_logger_and_ends_with_the_trainer_alive(tmp_path):
    from rocketrl import training

    seen: list[tuple[str, int]] = []

    class Wrapping:
        def __init__(self, inner) -> None:
            self.inner = inner

        def log_update(self, report: UpdateReport) -> None:
            seen.append((type(self.inner).__name__, report.step))
            self.inner.log_update(report)

    def at_end(trainer: Trainer) -> None:
        trainer.env.reset()  # the arenas are not closed yet
        seen.append(("end", trainer.counters.global_step))

    cfg = small_config(tmp_path, "hooks", "--run.timesteps", str(2 * BATCH), "--run.ascii", "true")
    result = training.train(cfg, wrap_logger=Wrapping, at_end=at_end)
    assert seen == [("TrainLogger", BATCH), ("TrainLogger", 2 * BATCH), ("end", 2 * BATCH)]
    assert result.steps == 2 * BATCH and not result.stopped
    assert any(result.run_dir.glob("events.out.tfevents.*"))  # the inner TrainLogger wrote TensorBoard


def test_a_run_gives_back_the_threads_it_found_so_the_next_run_in_the_process_trains_on_them(tmp_path):
    """A climb trains, judges and trains again in one process: the phases narrow torch's CPU threads, and a run
    that left them narrowed made every later step learn on one thread (about two thirds of the agent-steps a
    minute)."""
    found = torch.get_num_threads()
    steps = ["--run.timesteps", str(2 * BATCH), "--speed.rollout-threads", "1", "--speed.learn-threads", "1"]
    try:
        torch.set_num_threads(2)
        train(small_config(tmp_path, "first", *steps))
        assert torch.get_num_threads() == 2
        second = Trainer(small_config(tmp_path, "second", "--run.timesteps", str(BATCH)))
        try:
            assert second._default_threads == 2  # noqa: SLF001 - the count its null-speed phases train on
        finally:
            second.close()
    finally:
        torch.set_num_threads(found)
