"""The PettingZoo face of BatchedEnv: `RocketSimParallelEnv` (pettingzoo.ParallelEnv), one arena, every car
an agent ('blue_0', 'blue_1', ..., 'orange_0', ...), numpy arrays in and out (see rocketrl/env/gym.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from rocketrl.env.actions import InvalidActionError
from rocketrl.env.batched import StepResult
from rocketrl.env.faces import (
    OwnsBatchedEnv,
    action_space,
    car_episode_stats,
    check_actions,
    make_batched,
    observation_space,
    seed_batched,
)


class RocketSimParallelEnv(OwnsBatchedEnv, ParallelEnv):
    """One soccar arena where every car is an agent: 'blue_0', 'blue_1', ..., 'orange_0', ...

    Per agent: observation (180,) float32 (orange sees the mirrored field), action Discrete(90) or
    Box(-1, 1, (8,)). When the episode ends every agent is removed from `agents`, the final
    observations are returned, and infos[agent]['episode_stats'] holds that agent's statistics.
    Further EnvConfig fields may be given as keyword arguments.
    """

    metadata: dict[str, Any] = {"name": "rocketrl_soccar_v0", "render_modes": []}

    def __init__(
        self,
        blue_size: int = 1,
        orange_size: int = 1,
        action: str = "discrete",
        episode_seconds: float | None = None,
        no_touch_seconds: float | None = None,
        state_setter: dict[str, float] | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        if render_mode is not None:
            raise ValueError(f"render_mode={render_mode!r}: RocketSimParallelEnv does not render (use None)")
        self.render_mode = render_mode
        self.batched = make_batched(
            1, blue_size, orange_size, action, episode_seconds, no_touch_seconds, state_setter, overrides
        )
        self.possible_agents = [f"blue_{i}" for i in range(blue_size)] + [f"orange_{i}" for i in range(orange_size)]
        self.agents: list[str] = []
        obs_space, act_space = observation_space(), action_space(action)
        self.observation_spaces = {agent: obs_space for agent in self.possible_agents}
        self.action_spaces = {agent: act_space for agent in self.possible_agents}
        self._kind = action
        self._np_random: np.random.Generator | None = None
        self._obs: torch.Tensor | None = None
        self._fresh_after_autoreset = False
        self._closed = False

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
        """Start an episode with every agent; returns ({agent: obs (180,)}, {agent: {}}).

        Seeding and the reuse of an auto-reset arena work as in RocketSimEnv.reset.
        """
        self._check_open()
        if seed is not None or self._np_random is None:
            self._np_random, _ = seeding.np_random(seed)
        if not (self._fresh_after_autoreset and seed is None and options is None):
            seed_batched(self.batched, self._np_random)
            self._obs = self.batched.reset()
        self._fresh_after_autoreset = False
        self.agents = list(self.possible_agents)
        assert self._obs is not None
        obs = self._obs[0].numpy()
        return {agent: obs[c].copy() for c, agent in enumerate(self.agents)}, {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """Apply one action per live agent; returns (obs, rewards, terminations, truncations, infos)."""
        self._check_open()
        if not self.agents or self._obs is None:
            raise RuntimeError("RocketSimParallelEnv.step() needs reset() first (at the start and after an episode)")
        if not isinstance(actions, dict):
            raise InvalidActionError(f"actions must be a dict {{agent: action}}, got {type(actions).__name__}")
        missing = [agent for agent in self.agents if agent not in actions]
        unknown = [agent for agent in actions if agent not in self.agents]
        if missing or unknown:
            raise InvalidActionError(
                f"actions must hold exactly the live agents {self.agents}; missing {missing}, unknown {unknown}"
            )
        per_car = [check_actions(actions[agent], self._kind, 1, True, f"{agent}'s action") for agent in self.agents]
        dtype = per_car[0].dtype
        for part in per_car[1:]:
            dtype = torch.promote_types(dtype, part.dtype)
        batch = torch.stack([part.to(dtype) for part in per_car], dim=0).unsqueeze(0)  # (1, C[, 1 or 8])
        if self._kind == "discrete":
            batch = batch.squeeze(-1)
        else:
            batch = batch.squeeze(2)
        result: StepResult = self.batched.step(batch)
        done = bool(result.terminated[0] | result.truncated[0])
        terminated, truncated = bool(result.terminated[0]), bool(result.truncated[0])
        final_obs, reward = result.final_obs[0].numpy(), result.reward[0].tolist()
        agents = self.agents
        obs = {agent: final_obs[c].copy() for c, agent in enumerate(agents)}
        rewards = {agent: float(reward[c]) for c, agent in enumerate(agents)}
        terminations = dict.fromkeys(agents, terminated)
        truncations = dict.fromkeys(agents, truncated)
        infos: dict[str, dict] = {agent: {} for agent in agents}
        self._obs = result.obs
        if done:
            for c, agent in enumerate(agents):
                infos[agent]["episode_stats"] = car_episode_stats(result.episodes, 0, c)
            self.agents = []
            self._fresh_after_autoreset = True
        return obs, rewards, terminations, truncations, infos


# ----------------------------------------------------------------------------------------- vector
