"""Learning on a small budget: a trained car touches the ball far more often than a random one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from rocketrl.config import load_config
from rocketrl.env.batched import BatchedEnv
from rocketrl.policy.actor_critic import PolicyActor
from rocketrl.ppo.trainer import Trainer

REWARDS = """\
weights:
  goal: 10.0
  touch: 1.0
  velocity_player_to_ball: 0.2
  face_ball: 0.02
"""


def touches_per_minute(env: BatchedEnv, act: Callable[[torch.Tensor], torch.Tensor], steps: int) -> float:
    """Ball touches per car per minute of game time over `steps` steps of every arena."""
    obs = env.reset()
    touches = 0
    for _ in range(steps):
        result = env.step(act(obs.reshape(env.num_arenas * env.num_cars, -1)).reshape(env.num_arenas, env.num_cars))
        touches += int(env.state.car_touched_ball.sum())
        obs = result.obs
    minutes = steps * env.config.tick_skip / 120.0 / 60.0 * env.num_arenas * env.num_cars
    return touches / minutes


def test_training_raises_touches_per_minute_far_above_a_random_policy(tmp_path: Path):
    rewards = tmp_path / "rewards.yaml"
    rewards.write_text(REWARDS)
    env_overrides = [
        "--env.num-arenas", "64", "--env.orange-size", "0", "--env.state-setter", "random=1.0",
        "--env.no-touch-seconds", "8", "--env.episode-seconds", "20", "--env.rewards", str(rewards),
    ]  # fmt: skip
    cfg = load_config(
        None,
        [
            *env_overrides,
            "--ppo.learning-rate", "1e-3", "--ppo.lr-schedule", "constant", "--ppo.epochs", "4",
            "--model.actor-hidden", "256,256", "--model.critic-hidden", "256,256",
            "--run.timesteps", "300000", "--run.device", "cpu", "--run.logdir", str(tmp_path), "--run.name", "learn",
        ],
    )  # fmt: skip
    trainer = Trainer(cfg)
    try:
        trainer.learn()
        trained = PolicyActor(trainer.model, trainer.obs_norm)
    finally:
        trainer.close()

    eval_cfg = load_config(None, [*env_overrides, "--env.seed", "12345"]).env
    generator = torch.Generator().manual_seed(0)
    with BatchedEnv(eval_cfg) as env:
        random_rate = touches_per_minute(env, lambda o: torch.randint(0, 90, (o.shape[0],), generator=generator), 450)
        trained_rate = touches_per_minute(env, lambda o: trained.act(o)[0], 450)
    print(f"touches per car-minute: random {random_rate:.3f}, trained {trained_rate:.3f}")
    assert trained_rate > max(5 * random_rate, 0.3), (random_rate, trained_rate)
