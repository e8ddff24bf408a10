"""Gymnasium and PettingZoo faces of BatchedEnv: thin adapters that return numpy arrays.

- `RocketSimEnv` (gymnasium.Env): one arena, one learning car (blue car 0); the other cars stand
  still or are driven by an `opponent_policy`.
- `RocketSimParallelEnv` (pettingzoo.ParallelEnv): one arena, every car is an agent
  ('blue_0', 'blue_1', ..., 'orange_0', ...).
- `RocketSimVectorEnv` (gymnasium.vector.VectorEnv): one arena per sub-environment, one learning car
  (blue car 0) each, same-step autoreset as BatchedEnv does it.

Observations are 180 float32 per car (see rocketrl/env/obs.py; orange cars see a mirrored field).
Actions: 'discrete' is an index into the 90-row lookup table (rocketrl/env/actions.py), 'continuous'
is 8 floats: throttle, steer, pitch, yaw, roll in [-1, 1] (clipped), jump, boost, handbrake (on when > 0).

An opponent policy is any callable `policy(obs) -> actions` with obs a float32 array (K, 180) of the
cars that are not learning (in car order: blue 1.., then orange; in the vector env all arenas are
stacked arena by arena) and actions (K,) indices for 'discrete' or (K, 8) for 'continuous'.

The PettingZoo face lives in env/parallel.py (importable from here too) and what the faces share in
env/faces.py.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from rocketrl.env.batched import StepResult
from rocketrl.env.config import EnvConfig
from rocketrl.env.faces import (
    NUM_DISCRETE_ACTIONS,
    OpponentDriver,
    OpponentPolicy,
    OwnsBatchedEnv,
    action_space,
    car_episode_stats,
    check_actions,
    make_batched,
    observation_space,
    seed_batched,
)
from rocketrl.env.parallel import RocketSimParallelEnv

__all__ = [
    "NUM_DISCRETE_ACTIONS",
    "OpponentPolicy",
    "RocketSimEnv",
    "RocketSimParallelEnv",
    "RocketSimVectorEnv",
    "action_space",
    "observation_space",
]


class RocketSimEnv(OwnsBatchedEnv, gymnasium.Env):
    """One soccar arena, one learning car (blue car 0), as a gymnasium.Env.

    observation: (180,) float32. action: Discrete(90) index or Box(-1, 1, (8,)) controls.
    step -> (obs (180,), reward float, terminated (goal), truncated (time limits), info); when the
    episode ends, obs is its final observation and info['episode_stats'] holds the learner's
    return, length (steps), goals_blue, goals_orange and touches. The other cars stand still (zero
    controls) unless `opponent_policy` drives them. Further EnvConfig fields (tick_skip, rewards, ...)
    may be given as keyword arguments.
    """

    metadata: dict[str, Any] = {"render_modes": [], "render_fps": 15}

    def __init__(
        self,
        blue_size: int = 1,
        orange_size: int = 1,
        action: str = "discrete",
        opponent_policy: OpponentPolicy | None = None,
        episode_seconds: float | None = None,
        no_touch_seconds: float | None = None,
        state_setter: dict[str, float] | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        if render_mode is not None:
            raise ValueError(f"render_mode={render_mode!r}: RocketSimEnv does not render (use None)")
        self.render_mode = render_mode
        self.observation_space = observation_space()
        self.action_space = action_space(action)
        self.batched = make_batched(
            1, blue_size, orange_size, action, episode_seconds, no_touch_seconds, state_setter, overrides
        )
        self.metadata = {**self.metadata, "render_fps": round(120 / self.batched.config.tick_skip)}
        self._driver = OpponentDriver(self.batched, opponent_policy)
        self._obs: torch.Tensor | None = None  # (1, C, 180) observations to act on
        self._episode_over = False
        self._fresh_after_autoreset = False
        self._closed = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Start an episode; returns (obs (180,), {}). The same seed gives the same episode.

        Right after an episode ended (and without seed or options), the arena BatchedEnv already
        reset is used as it is; otherwise the arena is reset from a seed drawn from np_random. No
        option is interpreted; giving any forces a full reset.
        """
        super().reset(seed=seed)
        self._check_open()
        if not (self._fresh_after_autoreset and seed is None and options is None):
            seed_batched(self.batched, self.np_random)
            self._obs = self.batched.reset()
        self._fresh_after_autoreset = False
        self._episode_over = False
        assert self._obs is not None
        return self._obs[0, 0].numpy().copy(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply the learner's action for one step (tick_skip physics ticks)."""
        self._check_open()
        if self._obs is None or self._episode_over:
            raise RuntimeError("RocketSimEnv.step() needs reset() first (at the start and after an episode ends)")
        learner = check_actions(action, self._driver.kind, 1, True, f"action {action!r}")
        result: StepResult = self.batched.step(self._driver.compose(learner, self._obs))
        terminated, truncated = bool(result.terminated[0]), bool(result.truncated[0])
        info: dict[str, Any] = {}
        self._obs = result.obs
        if terminated or truncated:
            self._episode_over = True
            self._fresh_after_autoreset = True
            info["episode_stats"] = car_episode_stats(result.episodes, 0, 0)
        obs = result.final_obs[0, 0].numpy().copy()
        return obs, float(result.reward[0, 0]), terminated, truncated, info


# ----------------------------------------------------------------------------------------- pettingzoo
class RocketSimVectorEnv(VectorEnv):
    """num_envs soccar arenas, one learning car (blue car 0) in each, as a gymnasium VectorEnv.

    reset -> (obs (num_envs, 180) float32, {}). step(actions (num_envs,) or (num_envs, 8)) ->
    (obs, rewards (num_envs,), terminations, truncations, infos). Autoreset is SAME_STEP: an arena
    whose episode ended is reset within the step; obs holds its new first observation,
    infos['final_obs'][i] (object array, None elsewhere; mask infos['_final_obs']) the episode's final
    observation, and infos['final_info']['episode_stats'] the learner's statistics (masked likewise).
    Other cars stand still or follow `opponent_policy`, called once per step with every arena's
    other cars stacked: obs (num_envs * (cars - 1), 180).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        blue_size: int = 1,
        orange_size: int = 1,
        action: str = "discrete",
        opponent_policy: OpponentPolicy | None = None,
        episode_seconds: float | None = None,
        no_touch_seconds: float | None = None,
        state_setter: dict[str, float] | None = None,
        stepping: str | None = None,
        num_workers: int | None = None,
        **overrides: Any,
    ) -> None:
        self.batched = make_batched(
            num_envs,
            blue_size,
            orange_size,
            action,
            episode_seconds,
            no_touch_seconds,
            state_setter,
            {"stepping": stepping or EnvConfig.default("stepping"), "num_workers": num_workers, **overrides},
        )
        self.num_envs = num_envs
        self.single_observation_space = observation_space()
        self.single_action_space = action_space(action)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._driver = OpponentDriver(self.batched, opponent_policy)
        self._obs: torch.Tensor | None = None

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every arena; returns (obs (num_envs, 180), {}).

        The arenas share one reset generator, so a list of seeds is combined into one seed. Options
        are accepted and ignored.
        """
        if self.closed:
            raise RuntimeError("this RocketSimVectorEnv was closed; build a new one")
        if isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs:
                raise ValueError(f"reset got {len(seed)} seeds for {self.num_envs} sub-environments")
            if any(s is None for s in seed):
                seed = None
            else:
                seed = int(np.random.SeedSequence([int(s) for s in seed]).generate_state(1, np.uint64)[0]) >> 1
        super().reset(seed=seed)
        seed_batched(self.batched, self.np_random)
        self._obs = self.batched.reset()
        return self._obs[:, 0].numpy().copy(), {}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every arena once; finished arenas are reset in the same step (see the class doc)."""
        if self.closed:
            raise RuntimeError("this RocketSimVectorEnv was closed; build a new one")
        if self._obs is None:
            raise RuntimeError("RocketSimVectorEnv.step() needs reset() first")
        learner = check_actions(actions, self._driver.kind, self.num_envs, False, "actions")
        result: StepResult = self.batched.step(self._driver.compose(learner, self._obs))
        self._obs = result.obs
        terminations = result.terminated.numpy().copy()
        truncations = result.truncated.numpy().copy()
        infos: dict[str, Any] = {}
        done = terminations | truncations
        if done.any():
            final = result.final_obs[:, 0].numpy()
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):
                final_obs[i] = final[i].copy()
            ep = result.episodes
            arenas = ep["arena"].numpy()
            # The layout SyncVectorEnv(RocketSimEnv, SAME_STEP) gives: each value with its `_key` mask.
            columns = {
                "return": (ep["return"][:, 0], np.float64),
                "length": (ep["length"], np.int64),
                "goals_blue": (ep["goals_blue"], np.int64),
                "goals_orange": (ep["goals_orange"], np.int64),
                "touches": (ep["touches"][:, 0], np.int64),
            }
            stats: dict[str, np.ndarray] = {}
            for key, (values, dtype) in columns.items():
                stats[key] = np.zeros(self.num_envs, dtype=dtype)
                stats[key][arenas] = values.numpy()
                stats[f"_{key}"] = done.copy()
            mask = done.copy()
            infos = {
                "final_obs": final_obs,
                "_final_obs": mask,
                "final_info": {"episode_stats": stats, "_episode_stats": mask.copy()},
                "_final_info": mask.copy(),
            }
        obs = result.obs[:, 0].numpy().copy()
        rewards = result.reward[:, 0].numpy().astype(np.float64)
        return obs, rewards, terminations, truncations, infos

    def close_extras(self, **kwargs: Any) -> None:
        """Close the engine (worker processes, shared memory)."""
        self.batched.close()
