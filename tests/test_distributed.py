"""Distributed training on a local Ray cluster: it learns, resumes exactly, survives a killed worker, bounds the
policy lag, and fails clearly on a wrong version or an unreachable head."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest
import torch

from rocketrl.config import load_config
from rocketrl.distributed.batch import ingest, moments_between, pack_rollout
from rocketrl.distributed.learner import gather
from rocketrl.distributed.pool import Rollout
from rocketrl.infra.checkpoint import load_checkpoint
from rocketrl.policy.normalize import RunningMeanStd
from rocketrl.ppo.algorithm import PPO
from rocketrl.ppo.train_logger import UpdateReport
from rocketrl.ppo.trainer import Trainer

ray = pytest.importorskip("ray", reason='distributed training needs Ray: pip install "rocketrl[distributed]"')

from rocketrl.distributed.config import RayConfig  # noqa: E402
from rocketrl.distributed.learner import ray_trainer  # noqa: E402
from rocketrl.distributed.pool import connect  # noqa: E402
from rocketrl.distributed.worker import code_version  # noqa: E402

SMALL = [
    "--env.num-arenas", "4", "--env.stepping", "serial", "--env.num-workers", "1",
    "--ppo.rollout-steps", "16", "--ppo.minibatches", "2", "--ppo.epochs", "2",
    "--model.actor-hidden", "32,32", "--model.critic-hidden", "32,32",
    "--speed.learn-threads", "1",  # the learner's torch threads beside two workers on a small machine
    "--run.device", "cpu", "--run.distributed", "ray", "--ray.workers", "2",
]  # fmt: skip
BATCH = 4 * 2 * 16  # arenas over both workers x cars x rollout steps


@pytest.fixture(scope="module")
def cluster():
    """One small local Ray cluster for the module's runs."""
    ray.init(num_cpus=2, object_store_memory=200 * 1024**2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def small_config(tmp_path: Path, name: str, *extra: str):
    return load_config(None, [*SMALL, "--run.logdir", str(tmp_path), "--run.name", name, *extra])


class Reports:
    """A logger that keeps every report, and may act after a given update."""

    def __init__(self, after: dict[int, object] | None = None) -> None:
        self.reports: list[UpdateReport] = []
        self.after = after or {}
        self.trainer: Trainer | None = None

    def log_update(self, report: UpdateReport) -> None:
        self.reports.append(report)
        print(f"step {report.step} sps {report.sps:.0f} touches/min {report.touch_rate:.3f} {report.extra}", flush=True)
        action = self.after.get(report.updates)
        if action is not None:
            action(self.trainer)  # type: ignore[operator]


def run(cfg, resume: str | None = None, logger: Reports | None = None) -> Trainer:
    trainer = ray_trainer(cfg)
    try:
        if resume:
            trainer.resume(resume)
        if logger is not None:
            logger.trainer = trainer
        trainer.learn(logger)
    finally:
        trainer.close()
    return trainer


def kill_worker(index: int):
    def kill(trainer: Trainer) -> None:
        assert trainer.collection.pool is not None
        os.kill(trainer.collection.pool.pids[index], signal.SIGKILL)

    return kill


# ------------------------------------------------------------------------------------------- pure parts
def test_moments_between_recovers_what_a_worker_merged() -> None:
    generator = torch.Generator().manual_seed(0)
    stats = RunningMeanStd((3,), "cpu")
    stats.update(torch.randn(500, 3, generator=generator) * 2 + 1)
    before = stats.state_dict()
    added = torch.randn(300, 3, generator=generator, dtype=torch.float64) * 0.5 - 2
    stats.update(added)
    n, mean, var = moments_between(before, stats.state_dict())
    assert n == pytest.approx(300)
    np.testing.assert_allclose(mean, added.mean(0).numpy(), rtol=1e-9)
    np.testing.assert_allclose(var, added.var(0, correction=0).numpy(), rtol=1e-7)
    # Merging those moments into the learner's copy gives what merging the samples would.
    learner = RunningMeanStd((3,), "cpu")
    learner.load_state_dict(before)
    learner.merge(n, torch.from_numpy(mean), torch.from_numpy(var))
    for key, value in stats.state_dict().items():
        torch.testing.assert_close(learner.state_dict()[key], value, rtol=1e-9, atol=1e-12)


def test_learner_gae_over_bundles_side_by_side_is_gae_over_each_workers_rollout() -> None:
    cfg = load_config(None, SMALL)
    ppo = PPO(cfg.ppo, cfg.model, cfg.speed, 180, 90, True, torch.device("cpu"), seed=0)
    ppo.resize(8)
    s = ppo.storage
    assert s is not None
    generator = torch.Generator().manual_seed(0)
    for name in ("obs", "logprobs", "values", "rewards", "next_values"):
        getattr(s, name).normal_(generator=generator)
    s.terminated.copy_(torch.rand(s.terminated.shape, generator=generator) < 0.05)
    s.episode_end.copy_(s.terminated | (torch.rand(s.terminated.shape, generator=generator) < 0.05))
    ppo.estimate_advantages()
    expected = s.advantages.clone(), s.returns.clone()
    arrays = pack_rollout(s)
    bundles = [{k: v[:, lo:hi] for k, v in arrays.items()} for lo, hi in ((0, 3), (3, 8))]  # workers of 3 and 5
    learner = PPO(cfg.ppo, cfg.model, cfg.speed, 180, 90, True, torch.device("cpu"), seed=0)
    learner.resize(8)
    assert learner.storage is not None
    ingest(learner.storage, bundles)
    learner.estimate_advantages()
    torch.testing.assert_close(learner.storage.advantages, expected[0], rtol=0, atol=0)
    torch.testing.assert_close(learner.storage.returns, expected[1], rtol=0, atol=0)
    torch.testing.assert_close(learner.storage.obs, s.obs, rtol=0, atol=0)


def test_rollouts_older_than_the_lag_bound_are_dropped_and_their_workers_relaunched() -> None:
    def bundle(version: int, agents: int = 8) -> dict:
        return {"version": version, "agents": agents, "steps": 16 * agents}

    arriving = [
        Rollout(0, bundle(5)),
        Rollout(1, bundle(3)),  # two updates behind: dropped
        Rollout(2, None),  # the worker died: lost, its replacement launched
        Rollout(1, bundle(4)),  # one behind: kept
        Rollout(3, bundle(5, agents=4)),  # an old stage's team sizes: dropped
        Rollout(2, bundle(5)),
    ]
    launched: list[int] = []
    kept, dropped, lost = gather(
        lambda: arriving.pop(0), launched.append, lambda i: False, workers=3, version=5, max_lag=1, agents=8
    )
    assert [(r.worker, r.bundle["version"]) for r in kept] == [(0, 5), (1, 4), (2, 5)]
    assert dropped == 16 * 8 + 16 * 4 and lost == 1
    assert launched == [0, 1, 2, 1, 3, 2]  # asynchronous: every deliverer collects again at once
    # Synchronous (bound 0): only the dropped and the lost are relaunched, on the current weights.
    arriving = [Rollout(0, bundle(5)), Rollout(1, bundle(4)), Rollout(1, bundle(5))]
    launched.clear()
    kept, dropped, lost = gather(
        lambda: arriving.pop(0), launched.append, lambda i: False, workers=2, version=5, max_lag=0, agents=8
    )
    assert [r.bundle["version"] for r in kept] == [5, 5] and dropped == 16 * 8 and launched == [1]


def test_an_unreachable_head_is_a_clear_error() -> None:
    if ray.is_initialized():
        pytest.skip("a cluster is already connected in this process")
    # Nothing listens on port 1 (Ray's own client would end this process; connect asks the port first).
    with pytest.raises(RuntimeError, match=r"ray.address=127.0.0.1:1: cannot reach the Ray cluster.*ray start --head"):
        connect(RayConfig(address="127.0.0.1:1"))
    assert not ray.is_initialized()


# ------------------------------------------------------------------------------------------- runs
def test_killed_worker_is_replaced_and_a_later_checkpoint_resumes_exactly(cluster, tmp_path) -> None:
    # Synchronous; checkpoints at 2 and 3 updates. The worker killed after update 1 is found dead when its
    # next rollout is launched: that rollout is lost (never counted) and a replacement collects it.
    steps = [
        "--run.timesteps",
        str(3 * BATCH),
        "--run.checkpoint-interval",
        str(2 * BATCH),
        "--ray.max-policy-lag",
        "0",
    ]
    second = tmp_path / "kept" / f"step_{2 * BATCH:012d}.safetensors"

    def keep_second_checkpoint(trainer: Trainer) -> None:  # saved after update 2's report
        second.parent.mkdir()
        shutil.copy(trainer.checkpoints.latest(), second)

    logger = Reports(after={1: kill_worker(0), 3: keep_second_checkpoint})
    straight = run(small_config(tmp_path, "straight", *steps), logger=logger)
    extra = logger.reports[-1].extra
    assert straight.collection.lost_rollouts == 1 and extra["distributed/replaced_workers"] == 1, (
        straight.collection.lost_rollouts,
        extra,
    )
    # Every update trained on one full rollout per worker: no step lost or counted twice.
    assert straight.counters.global_step == 3 * BATCH and straight.counters.updates == 3
    assert [r.step for r in logger.reports] == [BATCH, 2 * BATCH, 3 * BATCH]
    assert all(r.extra["distributed/policy_lag_max"] == 0 for r in logger.reports)

    resumed = run(small_config(tmp_path, "resumed", *steps), resume=str(second))
    assert resumed.counters.global_step == 3 * BATCH and resumed.counters.updates == 3
    a, _ = load_checkpoint(straight.checkpoints.latest())
    b, _ = load_checkpoint(resumed.checkpoints.latest())
    for key, value in a["model"].items():
        torch.testing.assert_close(b["model"][key], value, rtol=0, atol=0, msg=f"model.{key} differs after resume")
    for section in ("obs_norm", "return_scaler"):
        for key, value in a[section].items():
            torch.testing.assert_close(b[section][key], value, rtol=0, atol=0, msg=f"{section}.{key} differs")
    assert a["counters"] == b["counters"] and a["recent_returns"] == b["recent_returns"]


def test_league_opponents_and_a_curriculum_stage_change_run_on_the_workers(cluster, tmp_path) -> None:
    curriculum = tmp_path / "curriculum.yaml"
    curriculum.write_text(
        "stages:\n"
        "  - {name: 1v1, blue_size: 1, orange_size: 1, opponents: {selfplay: 0.5, rule: 0.5}, until_steps: 256}\n"
        "  - {name: 1v2, blue_size: 1, orange_size: 2, opponents: {checkpoint: 1.0}}\n"
    )
    cfg = small_config(
        tmp_path, "league", "--run.timesteps", "640", "--league.curriculum", str(curriculum),
        "--env.episode-seconds", "1.5", "--league.snapshot-interval", "128",
    )  # fmt: skip
    logger = Reports()
    trainer = run(cfg, logger=logger)
    # Asynchronous (the default ray.max_policy_lag 1): workers collect during the update, one update behind.
    assert max(r.extra["distributed/policy_lag_max"] for r in logger.reports) == 1
    league = trainer.league
    assert league is not None and league.curriculum is not None and league.curriculum.index == 1
    assert "rule_policy" in league.training_results  # outcomes counted on the workers reached the learner
    assert any(name.startswith("snapshot_") for name in league.training_results)
    # At the stage change the rollouts in flight (one per worker: 2 arenas, 3 learner cars, 16 steps) of the
    # old team sizes are dropped, not counted.
    assert trainer.counters.global_step >= 640 and trainer.collection.dropped_steps <= 2 * 2 * 3 * 16


def test_a_fixed_opponent_with_its_own_network_plays_on_the_workers(cluster, tmp_path) -> None:
    """gauntlet_v1 (larger than the 32-unit learner) reaches the workers with its own config and plays there."""
    cfg = small_config(
        tmp_path, "fixed", "--run.timesteps", "384", "--league.opponents", "checkpoint=1.0",
        "--league.fixed-opponents", "gauntlet_v1", "--league.old-floor", "1.0", "--env.episode-seconds", "1.5",
    )  # fmt: skip
    trainer = run(cfg)
    league = trainer.league
    assert league is not None and "fixed_gauntlet_v1" in league.pool_names()
    assert "fixed_gauntlet_v1" in league.training_results  # its games were played and counted on the workers


def test_distributed_run_learns_to_touch_the_ball(cluster, tmp_path) -> None:
    # As tests/test_learning.py measures it, at half its steps and arenas, on two workers; synchronous
    # (ray.max_policy_lag 0), so the outcome does not depend on which worker's rollout arrives first.
    from test_learning import REWARDS, touches_per_minute

    from rocketrl.env.batched import BatchedEnv
    from rocketrl.policy.actor_critic import PolicyActor

    rewards = tmp_path / "rewards.yaml"
    rewards.write_text(REWARDS)
    env_overrides = [
        "--env.num-arenas", "32", "--env.orange-size", "0", "--env.state-setter", "random=1.0",
        "--env.no-touch-seconds", "8", "--env.episode-seconds", "20", "--env.rewards", str(rewards),
    ]  # fmt: skip
    cfg = small_config(
        tmp_path, "learn", *env_overrides, "--ppo.rollout-steps", "64", "--ppo.minibatches", "4",
        "--ppo.learning-rate", "1e-3", "--ppo.lr-schedule", "constant", "--ppo.epochs", "4",
        "--model.actor-hidden", "256,256", "--model.critic-hidden", "256,256",
        "--run.timesteps", "150000", "--ray.max-policy-lag", "0",
    )  # fmt: skip
    logger = Reports()
    trainer = run(cfg, logger=logger)
    assert trainer.counters.global_step == len(logger.reports) * 64 * 32 and trainer.collection.dropped_steps == 0
    trained = PolicyActor(trainer.model, trainer.obs_norm)

    eval_cfg = load_config(None, [*env_overrides, "--env.seed", "12345"]).env
    generator = torch.Generator().manual_seed(0)
    with BatchedEnv(eval_cfg) as env:
        random_rate = touches_per_minute(env, lambda o: torch.randint(0, 90, (o.shape[0],), generator=generator), 450)
        trained_rate = touches_per_minute(env, lambda o: trained.act(o)[0], 450)
    print(f"touches per car-minute: random {random_rate:.3f}, trained {trained_rate:.3f}")
    assert trained_rate > max(5 * random_rate, 0.3), (random_rate, trained_rate)


def test_a_worker_of_another_rocketrl_version_fails_with_a_clear_message(cluster, tmp_path, monkeypatch) -> None:
    from rocketrl.distributed import pool

    monkeypatch.setattr(pool, "code_version", lambda: "rocketrl 0.0.1 (protocol 1)")  # the learner's, seen by workers
    trainer = ray_trainer(small_config(tmp_path, "version"))
    try:
        message = r"worker failed to start.*learner runs rocketrl 0\.0\.1.*install the same rocketrl on every node"
        with pytest.raises(RuntimeError, match=message):
            trainer.learn()
    finally:
        trainer.close()
    assert code_version().startswith("rocketrl ")


def test_sigterm_to_the_learner_saves_a_checkpoint_and_stops_the_workers(cluster, tmp_path) -> None:
    logger = Reports(after={1: lambda trainer: signal.raise_signal(signal.SIGTERM)})
    trainer = run(small_config(tmp_path, "sigterm", "--run.timesteps", str(100 * BATCH)), logger=logger)
    assert trainer.stopped_by_signal == signal.SIGTERM and trainer.counters.updates == 1
    state, _ = load_checkpoint(trainer.checkpoints.latest())
    assert state["counters"]["global_step"] == BATCH and len(state["distributed"]["workers"]) == 2
    assert trainer.collection.pool is None  # closed: its actors were killed


def test_train_command_runs_distributed(cluster, tmp_path, capsys) -> None:
    from rocketrl.cli import main

    code = main(
        ["train", "--distributed", "ray", "--timesteps", str(BATCH), "--logdir", str(tmp_path), "--name", "cli",
         "--ascii", *SMALL[:-6], "--ray.workers", "2", "--run.device", "cpu"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "distributed   ray at local: 2 workers x 2 arenas" in out and "finished at step 128" in out
    assert any((tmp_path / "cli" / "checkpoints").glob("*.safetensors"))


def test_a_worker_pays_each_rollout_with_the_reward_weights_at_the_progress_it_is_sent(tmp_path) -> None:
    """rewards.weights_end on a worker: the learner sends its training progress with each rollout (in process,
    no Ray needed: the worker is a plain class that Ray wraps)."""
    from rocketrl.config import config_to_dict
    from rocketrl.distributed.batch import weights_payload
    from rocketrl.distributed.worker import RolloutWorker

    rewards = tmp_path / "rewards.yaml"
    rewards.write_text("weights: {goal: 10.0, touch: 1.0}\nweights_end: {touch: 0.2}\n")
    cfg = small_config(tmp_path, "worker_rewards", "--env.rewards", str(rewards))
    worker = RolloutWorker(config_to_dict(cfg), 0, 0, None, "off", code_version())
    try:
        weights = weights_payload(worker.algorithm)
        for progress, touch in ((0.0, 1.0), (0.5, 0.6), (1.0, 0.2)):
            worker.collect(weights, 0, [], {}, progress)
            assert worker.collector.env.reward_fn.weights == pytest.approx([10.0, touch])
    finally:
        worker.close()
