"""What the Gymnasium, PettingZoo and vector faces of BatchedEnv share: their spaces, building and seeding
their BatchedEnv, checking the actions a user passes in, driving the cars that do not learn, and closing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from rocketrl.env.actions import NUM_CONTROLS, InvalidActionError, lookup_table
from rocketrl.env.batched import BatchedEnv
from rocketrl.env.config import EnvConfig
from rocketrl.env.obs import OBS_SIZE

OpponentPolicy = Callable[[np.ndarray], Any]
"""policy(obs (K, 180) float32) -> actions (K,) indices or (K, 8) floats (numpy, torch or lists)."""

_MAX_SEED = 2**63 - 1
NUM_DISCRETE_ACTIONS = int(lookup_table().shape[0])
"""Rows of the lookup table (90): the size of the Discrete action space."""


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


def make_batched(
    num_arenas: int,
    blue_size: int,
    orange_size: int,
    action: str,
    episode_seconds: float | None,
    no_touch_seconds: float | None,
    state_setter: dict[str, float] | None,
    overrides: dict[str, Any],
) -> BatchedEnv:
    """A CPU BatchedEnv; `overrides` are further EnvConfig fields (single-arena faces step serially). A limit
    or state_setter of None keeps EnvConfig's default."""
    if "num_arenas" in overrides:
        raise ValueError("num_arenas is set by the face: 1 for RocketSimEnv/ParallelEnv, num_envs for the vector env")
    settings: dict[str, Any] = {"stepping": "serial", "num_workers": 1}
    settings.update(overrides)
    settings.update(
        num_arenas=num_arenas,
        blue_size=blue_size,
        orange_size=orange_size,
        action=action,
    )
    if episode_seconds is not None:
        settings["episode_seconds"] = episode_seconds
    if no_touch_seconds is not None:
        settings["no_touch_seconds"] = no_touch_seconds
    if state_setter is not None:
        settings["state_setter"] = dict(state_setter)
    return BatchedEnv(EnvConfig.from_dict(settings), device="cpu")


def seed_batched(batched: BatchedEnv, np_random: np.random.Generator) -> None:
    """Reseed BatchedEnv's reset generator from a gymnasium np_random (reproducible under its seed)."""
    batched.seed(int(np_random.integers(0, _MAX_SEED)))


def as_numeric_array(actions: Any, what: str) -> np.ndarray:
    if isinstance(actions, torch.Tensor):
        actions = actions.detach().cpu().numpy()
    try:
        array = np.asarray(actions)
    except (TypeError, ValueError) as error:
        raise InvalidActionError(f"{what} could not be read as a numeric array: {error}") from error
    if array.dtype.kind not in "biuf":
        raise InvalidActionError(f"{what} has dtype {array.dtype}; expected numbers")
    return array


def check_actions(actions: Any, kind: str, count: int, single: bool, what: str) -> torch.Tensor:
    """Shape-check `count` cars' actions and return them as a tensor (count,) or (count, 8).

    `single` accepts one car's action in its natural shape: an index (or shape (1,)) or (8,).
    Values (range, NaN, whole numbers) are checked by BatchedEnv's action parser.
    """
    array = as_numeric_array(actions, what)
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


class OpponentDriver:
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
            raw = check_actions(self.policy(other_obs), self.kind, a * k, False, "opponent_policy's actions")
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


def car_episode_stats(episodes: dict[str, torch.Tensor], row: int, car: int) -> dict[str, float | int]:
    """One car's statistics of the episode in row `row` of StepResult.episodes."""
    return {
        "return": float(episodes["return"][row, car]),
        "length": int(episodes["length"][row]),
        "goals_blue": int(episodes["goals_blue"][row]),
        "goals_orange": int(episodes["goals_orange"][row]),
        "touches": int(episodes["touches"][row, car]),
    }


class OwnsBatchedEnv:
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
