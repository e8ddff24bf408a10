"""Rollout collection: the arenas as the learner sees them, stepped with a PPO's acting network into its storage.

The single-process trainer and every distributed rollout worker collect through this one class, so both fill
the storage the same way (observation normalisation, reward scaling, truncation bootstraps, GAE):

    collector = RolloutCollector(env, league, algorithm, device)
    obs, state, start = collector.restart()
    obs, state, start = collector.collect(obs, state, start, global_step, timings)   # storage full, GAE done
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from rocketrl.env.batched import BatchedEnv
from rocketrl.league.league import League
from rocketrl.league.learner_env import LearnerEnv
from rocketrl.policy.actor_critic import RecurrentState
from rocketrl.ppo.algorithm import PPO
from rocketrl.sim.arena import step_seconds


@dataclass
class EpisodeSummary:
    """Learner statistics of the K episodes that ended in one step (or a rollout)."""

    returns: torch.Tensor
    """(K,) mean return of the learner's cars."""
    lengths: torch.Tensor
    """(K,) episode length in steps."""
    touch_rates: torch.Tensor
    """(K,) touches per learner car per minute of game time."""

    @property
    def count(self) -> int:
        return int(self.returns.numel())


class RolloutCollector:
    """Owns the arenas (BatchedEnv), the learner's view of them and the stepping loop of a rollout."""

    def __init__(self, env: BatchedEnv, league: League | None, algorithm: PPO, device: torch.device) -> None:
        self.league, self.algorithm, self.device = league, algorithm, device
        self.step_seconds = step_seconds(env.config.tick_skip)
        self.set_env(env)

    def set_env(self, env: BatchedEnv) -> None:
        """Collect from `env` (at start-up or a new curriculum stage); sizes the algorithm's storage."""
        self.env = env
        self.learner_env = LearnerEnv(env, self.league, self.device)
        self.plan = self.learner_env.plan
        self.num_agents = self.learner_env.num_agents
        self.algorithm.resize(self.num_agents)

    def restart(self) -> tuple[torch.Tensor, RecurrentState, torch.Tensor]:
        """Reset every arena: learner observations [B, O], a zero recurrent state, all episodes starting."""
        obs = self.learner_env.reset()
        state = self.algorithm.initial_state()
        return obs, state, torch.ones(self.num_agents, dtype=torch.bool, device=self.device)

    def collect(
        self,
        obs: torch.Tensor,
        state: RecurrentState,
        episode_start: torch.Tensor,
        global_step: int,
        timings: dict[str, float],
        on_episodes: object | None = None,
    ) -> tuple[torch.Tensor, RecurrentState, torch.Tensor]:
        """Fill the algorithm's storage with rollout_steps steps of every learner agent, then its values and
        GAE. `global_step` (agent-steps before the rollout) labels training replays; `on_episodes(summary)`
        is called with an EpisodeSummary at each step where episodes ended; `timings` gains seconds of env,
        copy and inference. Returns the next (obs, state, episode_start)."""
        ppo = self.algorithm
        ppo.begin_rollout()
        for t in range(ppo.cfg.rollout_steps):
            t0 = time.perf_counter()
            action, state = ppo.act(t, obs, state, episode_start)
            t1 = time.perf_counter()
            copied = self.env.engine.copy_seconds
            step = self.learner_env.step(action, global_step + t * self.num_agents)
            t2 = time.perf_counter()
            copy = self.env.engine.copy_seconds - copied
            episode_start = ppo.process_step(t, step.reward, step.terminated, step.truncated, step.final_obs, state)
            obs = step.obs
            if step.episodes and on_episodes is not None:
                on_episodes(self.episode_summary(step.episodes))  # type: ignore[operator]
            timings["inference"] += t1 - t0
            timings["env"] += t2 - t1 - copy
            timings["copy"] += copy
        t0 = time.perf_counter()
        ppo.compute_returns(obs, state, episode_start)
        timings["inference"] += time.perf_counter() - t0
        return obs, state, episode_start

    def episode_summary(self, episodes: dict[str, torch.Tensor]) -> EpisodeSummary:
        """Mean learner return, length and touches per car-minute of each finished episode."""
        lengths = episodes["length"].float()
        minutes = lengths * self.step_seconds / 60.0
        touches = self.learner_env.learner_mean(episodes, "touches")
        return EpisodeSummary(self.learner_env.learner_mean(episodes, "return"), lengths, touches / minutes)
