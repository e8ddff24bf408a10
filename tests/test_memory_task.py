"""Recurrent PPO: on a task that needs memory, the LSTM policy succeeds where the MLP cannot."""

from __future__ import annotations

import types

import pytest
import torch

from rocketrl.config import load_config
from rocketrl.env.actions import LookupTableAction
from rocketrl.env.batched import StepResult
from rocketrl.env.rewards import RewardConfig, RewardFunction
from rocketrl.ppo.trainer import Trainer

EPISODE = 4  # steps: the cue is shown at step 0, the answer is given at step 3


class CueRecallEnv:
    """A BatchedEnv-shaped task: step 0 shows a cue (+1 or -1 in obs[0]); the next steps show only
    a clock (obs[1] = step / 3). At the last step, action 0 earns 1 after cue +1, action 1 earns 1
    after cue -1, anything else 0; then the episode terminates. Without memory the best is 0.5."""

    def __init__(self, arenas: int, seed: int = 0) -> None:
        self.num_arenas, self.num_cars, self.obs_size = arenas, 1, 180
        self.action_parser = LookupTableAction()
        self.generator = torch.Generator().manual_seed(seed)
        self.reward_fn = RewardFunction(RewardConfig(weights={}), 1, 0)  # the task pays its own rewards
        self.config = types.SimpleNamespace(tick_skip=8, blue_size=1, orange_size=0)
        self.engine = types.SimpleNamespace(num_workers=1, copy_seconds=0.0, stepping="serial", stepping_reason="")
        self.t = 0
        self.answers: list[float] = []  # mean reward of each answer step

    def _obs(self) -> torch.Tensor:
        obs = torch.zeros(self.num_arenas, 1, self.obs_size)
        if self.t == 0:
            self.cue = torch.randint(0, 2, (self.num_arenas,), generator=self.generator)
            obs[:, 0, 0] = 1.0 - 2.0 * self.cue.float()
        obs[:, 0, 1] = self.t / (EPISODE - 1)
        return obs

    def reset(self) -> torch.Tensor:
        self.t = 0
        return self._obs()

    def step(self, actions: torch.Tensor) -> StepResult:
        last = self.t == EPISODE - 1
        reward = torch.zeros(self.num_arenas, 1)
        done = torch.full((self.num_arenas,), last)
        episodes: dict[str, torch.Tensor] = {}
        if last:
            reward[:, 0] = (actions.reshape(-1) == self.cue).float()
            self.answers.append(float(reward.mean()))
            episodes = {
                "arena": torch.arange(self.num_arenas),
                "return": reward.clone(),
                "length": torch.full((self.num_arenas,), EPISODE),
                "touches": torch.zeros(self.num_arenas, 1),
            }
        final = self._obs()
        self.t = 0 if last else self.t + 1
        obs = self._obs() if last else final
        no = torch.zeros(self.num_arenas, dtype=torch.bool)
        return StepResult(obs, reward, done, no, final, episodes)

    def close(self) -> None:
        pass


def success_after_training(tmp_path, lstm: bool) -> float:
    overrides = [
        "--env.num-arenas", "64", "--env.orange-size", "0",
        "--ppo.rollout-steps", "16", "--ppo.minibatches", "4", "--ppo.epochs", "4",
        "--ppo.learning-rate", "2e-3", "--ppo.lr-schedule", "constant", "--ppo.gamma", "0.9",
        "--ppo.entropy-coef", "0.003", "--ppo.target-kl", "null",
        "--model.actor-hidden", "64", "--model.critic-hidden", "64",
        "--model.lstm", str(lstm).lower(), "--model.lstm-hidden", "32", "--model.sequence-length", "8",
        "--run.timesteps", "40000", "--run.device", "cpu", "--run.logdir", str(tmp_path),
        "--run.name", f"memory-{lstm}",
    ]  # fmt: skip
    env = CueRecallEnv(64)
    trainer = Trainer(load_config(None, overrides), env=env)  # type: ignore[arg-type]
    trainer.learn()
    return sum(env.answers[-20:]) / 20


@pytest.mark.parametrize("lstm", [True, False])
def test_lstm_remembers_the_cue_and_the_mlp_cannot(tmp_path, lstm):
    success = success_after_training(tmp_path, lstm)
    if lstm:
        assert success > 0.9, f"LSTM answered right {success:.2f} of the time"
    else:
        assert success < 0.65, f"an MLP cannot see the cue at answer time, yet scored {success:.2f}"
