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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from pettingzoo import ParallelEnv

from rocketrl.env.actions import NUM_CONTROLS, InvalidActionError, lookup_table
from rocketrl.env.batched import BatchedEnv, StepResult
from rocketrl.env.config import EnvConfig
from rocketrl.env.obs import OBS_SIZE

__all__ = [
    "NUM_DISCRETE_ACTIONS",
    "OpponentPolicy",
    "RocketSimEnv",
    "RocketSimParallelEnv",
    "RocketSimVectorEnv",
    "action_space",
    "observation_space",
]

OpponentPolicy = Callable[[np.ndarray], Any]
"""policy(obs (K, 180) float32) -> actions (K,) indices or (K, 8) floats (numpy, torch or lists)."""

_MAX_SEED = 2**63 - 1
NUM_DISCRETE_ACTIONS = int(lookup_table().shape[0])
"""Rows of the lookup table (90): the size of the Discrete action space."""


# ----------------------------------------------------------------------------------------- helpers
def observation_space() -> spaces.Box:
    """Box(-inf, inf, (180,), float32): one car's observation."""
    return spaces.Box(-np.inf, np.inf, shape=(OBS_SIZE,), dtype=np.float32)


def action_space(action: str) -> spaces.Space:
    """Discrete(90) for 'discrete', Box(-1, 1, (8,), float32) for 'continuous'."""
    if action == "discrete":
        return spaces.Discrete(NUM_DISCRETE_ACTIONS)
    if action == "continuous":
        return spaces.Box(-1.0, 1.0, shape=(NUM_CONTROLS,), dtype=np.float32)
    raise ValueError(f"action={action!r}: choose 'discrete' or 'continuous'")


def _make_batched(
    num_arenas: int,
    blue_size: int,
    orange_size: int,
    action: str,
    episode_seconds: float,
    no_touch_seconds: float,
    state_setter: dict[str, float] | None,
    overrides: dict[str, Any],
) -> BatchedEnv:
    """A CPU BatchedEnv; `overrides` are further EnvConfig fields (single-arena faces step serially)."""
    if "num_arenas" in overrides:
        raise ValueError("num_arenas is set by the face: 1 for RocketSimEnv/ParallelEnv, num_envs for the vector env")
    settings: dict[str, Any] = {"stepping": "serial", "num_workers": 1}
    settings.update(overrides)
    settings.update(
        num_arenas=num_arenas,
        blue_size=blue_size,
        orange_size=orange_size,
        action=action,
        episode_seconds=episode_seconds,
        no_touch_seconds=no_touch_seconds,
    )
    if state_setter is not None:
        settings["state_setter"] = dict(state_setter)
    return BatchedEnv(EnvConfig.from_dict(settings), device="cpu")


def _seed_batched(batched: BatchedEnv, np_random: np.random.Generator) -> None:
    """Reseed BatchedEnv's reset generator from a gymnasium np_random (reproducible under its seed)."""
    batched.seed(int(np_random.integers(0, _MAX_SEED)))


def _as_numeric_array(actions: Any, what: str) -> np.ndarray:
    if isinstance(actions, torch.Tensor):
        actions = actions.detach().cpu().numpy()
    try:
        array = np.asarray(actions)
    except (TypeError, ValueError) as error:
        raise InvalidActionError(f"{what} could not be read as a numeric array: {error}") from error
    if array.dtype.kind not in "biuf":
        raise InvalidActionError(f"{what} has dtype {array.dtype}; expected numbers")
    return array


def _check_actions(actions: Any, kind: str, count: int, single: bool, what: str) -> torch.Tensor:
    """Shape-check `count` cars' actions and return them as a tensor (count,) or (count, 8).

    `single` accepts one car's action in its natural shape: an index (or shape (1,)) or (8,).
    Values (range, NaN, whole numbers) are checked by BatchedEnv's action parser.
    """
    array = _as_numeric_array(actions, what)
    if kind == "discrete":
        if array.dtype.kind == "b":
            raise InvalidActionError(f"{what} has dtype bool; expected integer indices 0..{NUM_DISCRETE_ACTIONS - 1}")
        allowed = [(), (1,)] if single else [(count,), (count, 1)]
        if array.shape not in allowed:
            raise InvalidActionError(
                f"{what} has shape {array.shape}; expected {' or '.join(map(str, allowed))} "
                f"of lookup-table indices 0..{NUM_DISCRETE_ACTIONS - 1}"
            )
        return torch.from_numpy(np.ascontiguousarray(array.reshape(count)))
    expected = (NUM_CONTROLS,) if single else (count, NUM_CONTROLS)
    if array.shape != expected:
        raise InvalidActionError(
            f"{what} has shape {array.shape}; expected {expected} "
            "(throttle, steer, pitch, yaw, roll, jump, boost, handbrake)"
        )
    if array.dtype.kind in "biu":
        array = array.astype(np.float32)
    return torch.from_numpy(np.ascontiguousarray(array.reshape(count, NUM_CONTROLS)))


class _Driver:
    """Builds the BatchedEnv action batch from the learners' actions (blue car 0 of every arena)
    and the other cars' actions: no-op controls, or an opponent policy's output."""

    def __init__(self, batched: BatchedEnv, opponent_policy: OpponentPolicy | None) -> None:
        if opponent_policy is not None and not callable(opponent_policy):
            raise TypeError(f"opponent_policy must be callable (obs (K, 180) -> actions), got {opponent_policy!r}")
        self.parser = batched.action_parser
        self.policy = opponent_policy
        self.kind = self.parser.kind
        self.num_arenas = batched.num_arenas
        self.num_others = batched.num_cars - 1
        if self.kind == "discrete":
            table = batched.action_parser.table
            zero_rows = torch.nonzero((table == 0).all(dim=1)).flatten()
            if zero_rows.numel() == 0:  # pragma: no cover - the standard table has one
                raise RuntimeError("the lookup table has no all-zero row to keep non-learning cars still")
            self.noop = torch.full((self.num_arenas, self.num_others), int(zero_rows[0]), dtype=torch.long)
        else:
            self.noop = torch.zeros(self.num_arenas, self.num_others, NUM_CONTROLS)

    def compose(self, learner: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
        """learner (A,) or (A, 8); obs (A, C, 180) the current observations -> actions (A, C[, 8])."""
        a, k = self.num_arenas, self.num_others
        others = self.noop
        if self.policy is not None and k > 0:
            other_obs = obs[:, 1:].reshape(a * k, OBS_SIZE).cpu().numpy()
            raw = _check_actions(self.policy(other_obs), self.kind, a * k, False, "opponent_policy's actions")
            shape = (a, k) if self.kind == "discrete" else (a, k, NUM_CONTROLS)
            try:
                self.parser.parse(raw.reshape(shape), a, k)
            except InvalidActionError as error:
                raise InvalidActionError(f"opponent_policy returned invalid actions: {error}") from error
            others = raw.reshape(shape)
        dtype = torch.promote_types(learner.dtype, others.dtype)
        if self.kind == "discrete":
            return torch.cat([learner.reshape(a, 1).to(dtype), others.to(dtype)], dim=1)
        return torch.cat([learner.reshape(a, 1, NUM_CONTROLS).to(dtype), others.to(dtype)], dim=1)


def _stats_of(episodes: dict[str, torch.Tensor], row: int, car: int) -> dict[str, float | int]:
    """One car's statistics of the episode in row `row` of StepResult.episodes."""
    return {
        "return": float(episodes["return"][row, car]),
        "length": int(episodes["length"][row]),
        "goals_blue": int(episodes["goals_blue"][row]),
        "goals_orange": int(episodes["goals_orange"][row]),
        "touches": int(episodes["touches"][row, car]),
    }


# ----------------------------------------------------------------------------------------- gymnasium
class _OwnsBatchedEnv:
    """Closing for the faces that own one BatchedEnv (`self.batched`, `self._closed`)."""

    batched: BatchedEnv
    _closed: bool

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"this {type(self).__name__} was closed; build a new one")

    def close(self) -> None:
        """Close the engine. Safe to call twice."""
        if not self._closed:
            self.batched.close()
            self._closed = True


class RocketSimEnv(_OwnsBatchedEnv, gymnasium.Env):
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
        episode_seconds: float = 300.0,
        no_touch_seconds: float = 30.0,
        state_setter: dict[str, float] | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        if render_mode is not None:
            raise ValueError(f"render_mode={render_mode!r}: RocketSimEnv does not render (use None)")
        self.render_mode = render_mode
        self.observation_space = observation_space()
        self.action_space = action_space(action)
        self.batched = _make_batched(
            1, blue_size, orange_size, action, episode_seconds, no_touch_seconds, state_setter, overrides
        )
        self.metadata = {**self.metadata, "render_fps": round(120 / self.batched.config.tick_skip)}
        self._driver = _Driver(self.batched, opponent_policy)
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
            _seed_batched(self.batched, self.np_random)
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
        learner = _check_actions(action, self._driver.kind, 1, True, f"action {action!r}")
        result: StepResult = self.batched.step(self._driver.compose(learner, self._obs))
        terminated, truncated = bool(result.terminated[0]), bool(result.truncated[0])
        info: dict[str, Any] = {}
        self._obs = result.obs
        if terminated or truncated:
            self._episode_over = True
            self._fresh_after_autoreset = True
            info["episode_stats"] = _stats_of(result.episodes, 0, 0)
        obs = result.final_obs[0, 0].numpy().copy()
        return obs, float(result.reward[0, 0]), terminated, truncated, info


# ----------------------------------------------------------------------------------------- pettingzoo
class RocketSimParallelEnv(_OwnsBatchedEnv, ParallelEnv):
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
        episode_seconds: float = 300.0,
        no_touch_seconds: float = 30.0,
        state_setter: dict[str, float] | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        if render_mode is not None:
            raise ValueError(f"render_mode={render_mode!r}: RocketSimParallelEnv does not render (use None)")
        self.render_mode = render_mode
        self.batched = _make_batched(
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
            _seed_batched(self.batched, self._np_random)
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
        per_car = [_check_actions(actions[agent], self._kind, 1, True, f"{agent}'s action") for agent in self.agents]
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
                infos[agent]["episode_stats"] = _stats_of(result.episodes, 0, c)
            self.agents = []
            self._fresh_after_autoreset = True
        return obs, rewards, terminations, truncations, infos


# ----------------------------------------------------------------------------------------- vector
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
        episode_seconds: float = 300.0,
        no_touch_seconds: float = 30.0,
        state_setter: dict[str, float] | None = None,
        stepping: str = "processes",
        num_workers: int | None = None,
        **overrides: Any,
    ) -> None:
        self.batched = _make_batched(
            num_envs,
            blue_size,
            orange_size,
            action,
            episode_seconds,
            no_touch_seconds,
            state_setter,
            {"stepping": stepping, "num_workers": num_workers, **overrides},
        )
        self.num_envs = num_envs
        self.single_observation_space = observation_space()
        self.single_action_space = action_space(action)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._driver = _Driver(self.batched, opponent_policy)
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
        _seed_batched(self.batched, self.np_random)
        self._obs = self.batched.reset()
        return self._obs[:, 0].numpy().copy(), {}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every arena once; finished arenas are reset in the same step (see the class doc)."""
        if self.closed:
            raise RuntimeError("this RocketSimVectorEnv was closed; build a new one")
        if self._obs is None:
            raise RuntimeError("RocketSimVectorEnv.step() needs reset() first")
        learner = _check_actions(actions, self._driver.kind, self.num_envs, False, "actions")
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
