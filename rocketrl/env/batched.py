"""BatchedEnv: engine + state setter + observations + actions + rewards + done conditions.

All agents of all arenas are stepped at once as (A, C) tensors on one device. Finished arenas are
reset automatically; the observation each finished episode ended on is handed back separately
(`final_obs`) so a learner can bootstrap truncated episodes. `step` is `step_async` + `step_wait`:
between the two the engine's workers step while the caller may run inference for other arenas.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from rocketrl.env.actions import ContinuousAction, InvalidActionError, make_action_parser
from rocketrl.env.config import EnvConfig, default_rewards_path
from rocketrl.env.done import DoneConditions
from rocketrl.env.obs import DefaultObs
from rocketrl.env.rewards import RewardConfig, RewardFunction
from rocketrl.env.setters import make_setter
from rocketrl.infra.compile_fallback import CompiledOrEager
from rocketrl.sim.arena import TICK_TIME
from rocketrl.sim.engines import make_engine
from rocketrl.sim.state import BatchState, ResetState


@dataclass
class StepResult:
    """What one BatchedEnv.step returns. A = arenas, C = cars per arena."""

    obs: torch.Tensor
    """(A, C, obs_size) observations to act on next (after auto-reset where an episode ended)."""
    reward: torch.Tensor
    """(A, C) rewards of the step."""
    terminated: torch.Tensor
    """(A,) bool: the episode ended by a goal (do not bootstrap)."""
    truncated: torch.Tensor
    """(A,) bool: the episode was cut by a time limit (bootstrap from final_obs)."""
    final_obs: torch.Tensor
    """(A, C, obs_size) the last observation of each episode that ended; equals obs elsewhere."""
    episodes: dict[str, torch.Tensor]
    """Statistics of the episodes that ended this step, K = number of them: 'arena' (K,),
    'return' (K, C), 'length' (K,) steps, 'goals_blue' (K,), 'goals_orange' (K,), 'touches' (K, C)."""
    state: BatchState | None = None
    """The engine state this step ended in, before any auto-reset (events: goals, touches, demos)."""


class BatchedEnv:
    """A batch of soccar arenas as one environment over (A, C) agents."""

    def __init__(self, config: EnvConfig | None = None, device: str | torch.device = "cpu", **overrides) -> None:
        if config is None:
            config = EnvConfig(**overrides)
        elif overrides:
            config = EnvConfig.from_dict({**vars(config), **overrides})
        self.config = config
        self.device = torch.device(device)
        self.engine = make_engine(config, self.device)
        self.num_arenas = config.num_arenas
        self.num_cars = config.blue_size + config.orange_size
        self.obs_builder = DefaultObs(config.blue_size, config.orange_size, self.device)
        self.obs_size = self.obs_builder.size
        self.action_parser = make_action_parser(config.action, self.device)
        self.setter = make_setter(config.state_setter, config.blue_size, config.orange_size, config.kickoff_jitter)
        rewards_path = config.rewards if config.rewards is not None else default_rewards_path()
        self.reward_fn = RewardFunction(RewardConfig.from_yaml(rewards_path), config.blue_size, config.orange_size)
        self.done = DoneConditions(
            config.num_arenas,
            step_seconds=config.tick_skip * TICK_TIME,
            episode_seconds=config.episode_seconds,
            no_touch_seconds=config.no_touch_seconds,
            device=self.device,
        )
        self.generator = torch.Generator().manual_seed(config.seed)
        a, n = self.num_arenas, self.num_cars
        self.prev_controls = torch.zeros(a, n, 8, device=self.device)
        self.episode_return = torch.zeros(a, n, device=self.device)
        self.episode_touches = torch.zeros(a, n, dtype=torch.long, device=self.device)
        self.episode_goals = torch.zeros(a, 2, dtype=torch.long, device=self.device)
        self._obs: torch.Tensor | None = None
        self._pending: tuple[BatchState, torch.Tensor] | None = None
        """(state before, controls (A, C, 8), state after if the engine stepped synchronously) of the
        step in flight between step_async and step_wait."""
        # With compile, the layer fused by torch.compile (warns once and stays eager on a failure).
        self._layer = (
            CompiledOrEager(self._eager_layer, "env.compile", dynamic=False) if config.compile else self._eager_layer
        )

    @property
    def state(self) -> BatchState:
        return self.engine.state

    @property
    def observations(self) -> torch.Tensor:
        """(A, C, obs_size) the observations to act on next (after the latest reset or step)."""
        if self._obs is None:
            raise RuntimeError("call BatchedEnv.reset() first")
        return self._obs

    def seed(self, seed: int) -> None:
        """Reseed the reset generator (takes effect at the next reset)."""
        self.generator.manual_seed(seed)

    def reset(self) -> torch.Tensor:
        """Reset every arena with the state setter; returns observations (A, C, obs_size)."""
        self._check_idle("reset()")
        everything = torch.ones(self.num_arenas, dtype=torch.bool, device=self.device)
        self._reset_arenas(everything)
        self._obs = self.obs_builder.build(self.engine.state, self.prev_controls)
        return self._obs

    def step(self, actions: torch.Tensor | np.ndarray) -> StepResult:
        """Apply actions for every car: indices (A, C) for discrete, (A, C, 8) for continuous."""
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions: torch.Tensor | np.ndarray) -> None:
        """Start a step with actions (as in `step`) and return before the physics has finished.

        `step_wait()` finishes it and returns the StepResult that `step` would have returned. In
        between the engine steps on its own (worker processes or threads), so the caller can run
        other work, such as inference for another BatchedEnv (the warp engine runs its whole step in
        `step_async`).
        """
        if self._obs is None:
            raise RuntimeError("call BatchedEnv.reset() before step()")
        actions = torch.as_tensor(actions, device=self.device)
        controls = self.action_parser.parse(actions, self.num_arenas, self.num_cars, self.config.validate_actions)
        self.step_controls_async(controls, validate=False)

    def step_controls(self, controls: torch.Tensor, validate: bool = True) -> StepResult:
        """Step with car controls (A, C, 8) given directly (throttle, steer, pitch, yaw, roll, jump,
        boost, handbrake), bypassing the action parser; used when each team has its own policy."""
        self.step_controls_async(controls, validate)
        return self.step_wait()

    @property
    def step_in_flight(self) -> bool:
        """True between `step_async`/`step_controls_async` and `step_wait`."""
        return self._pending is not None

    def step_controls_async(self, controls: torch.Tensor, validate: bool = True) -> None:
        """`step_controls` up to the engine step: start it with controls (A, C, 8) and return at once."""
        if self._obs is None:
            raise RuntimeError("call BatchedEnv.reset() before step_controls()")
        if self._pending is not None:
            raise RuntimeError("a step is already in flight; call step_wait() before starting another")
        controls = controls.to(self.device, torch.float32)
        if validate:
            expected = (self.num_arenas, self.num_cars, 8)
            if tuple(controls.shape) != expected:
                raise InvalidActionError(f"controls have shape {tuple(controls.shape)}, expected {expected}")
            if not torch.isfinite(controls).all():
                raise InvalidActionError("controls contain NaN or inf; every control must be finite")
            controls = ContinuousAction().parse(controls, self.num_arenas, self.num_cars, validate=False)
        prev_state = self.engine.state
        self.engine.step_async(controls)
        self._pending = (prev_state, controls)

    def step_wait(self) -> StepResult:
        """Finish the step in flight: wait for the engine, then rewards, observations, done
        conditions, episode statistics and auto-resets, as `step` does; returns its StepResult."""
        if self._pending is None:
            raise RuntimeError("step_wait() without a step in flight; call step_async(actions) first")
        prev_state, controls = self._pending
        self._pending = None
        state = self.engine.step_wait()
        self.prev_controls = controls
        reward, self.reward_fn.last_term_means, obs = self._layer(prev_state, state, controls)
        terminated, truncated = self.done.update(state)
        self.episode_return += reward
        self.episode_touches += state.car_touched_ball.long()
        scored = state.goal_scored
        self.episode_goals[:, 0] += (scored == 0).long()
        self.episode_goals[:, 1] += (scored == 1).long()

        done = terminated | truncated
        episodes: dict[str, torch.Tensor] = {}
        final_obs = obs
        if bool(done.any()):
            final_obs = obs.clone()
            episodes = self._episode_stats(done)
            self._reset_arenas(done)
            fresh = self.obs_builder.build(self.engine.state.index(done), self.prev_controls[done])
            obs = obs.clone()
            obs[done] = fresh
        self._obs = obs
        return StepResult(obs, reward, terminated, truncated, final_obs, episodes, state)

    def _eager_layer(
        self, prev: BatchState, state: BatchState, controls: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rewards (A, C), reward term means (T,) and observations (A, C, obs_size) of one step."""
        reward, term_means = self.reward_fn.compute(prev, state)
        return reward, term_means, self.obs_builder.build(state, controls)

    def reset_arenas(self, mask: torch.Tensor) -> torch.Tensor:
        """Reset the arenas where mask (A,) is true with the state setter, dropping their episodes
        (no stats are reported for them); returns the observations of every arena (A, C, obs_size)."""
        if self._obs is None:
            return self.reset()
        self._check_idle("reset_arenas()")
        mask = mask.to(self.device, torch.bool)
        if bool(mask.any()):
            self._reset_arenas(mask)
            fresh = self.obs_builder.build(self.engine.state.index(mask), self.prev_controls[mask])
            obs = self._obs.clone()
            obs[mask] = fresh
            self._obs = obs
        return self._obs

    def _check_idle(self, what: str) -> None:
        if self._pending is not None:
            raise RuntimeError(f"BatchedEnv.{what} while a step is in flight; call step_wait() first")

    def _episode_stats(self, done: torch.Tensor) -> dict[str, torch.Tensor]:
        return {
            "arena": torch.nonzero(done).flatten(),
            "return": self.episode_return[done].clone(),
            "length": self.done.steps[done].clone(),
            "goals_blue": self.episode_goals[done, 0].clone(),
            "goals_orange": self.episode_goals[done, 1].clone(),
            "touches": self.episode_touches[done].clone(),
        }

    def _reset_arenas(self, mask: torch.Tensor) -> None:
        self.engine.reset(mask.cpu(), self._reset_state)
        self.done.reset(mask)
        keep = (~mask).view(-1, 1)
        self.prev_controls = self.prev_controls * keep.unsqueeze(-1)
        self.episode_return = self.episode_return * keep
        self.episode_touches = self.episode_touches * keep
        self.episode_goals = self.episode_goals * keep

    def _reset_state(self, k: int) -> ResetState:
        """K arenas' reset state from the state setter, with the order cars join each arena drawn at
        random (RocketSim favours one car of a head-on contact by that order; see ResetState)."""
        state = self.setter(k, self.generator)
        if state.blue_first is None:
            state.blue_first = torch.rand(k, generator=self.generator) < 0.5
        return state

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> BatchedEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
