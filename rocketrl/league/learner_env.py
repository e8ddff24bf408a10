"""The arenas as the learner sees them: its own B agents only.

Behind `LearnerEnv` sit the league's parts of a step: which cars the learner drives (the arena plan), the
opponents' actions (RulePolicy, past snapshots), the training replays and the training outcomes against
each opponent. In plain self-play (no plan) the learner drives every car, B = arenas x cars. The runner
acts on [B, O] observations and gets [B] rewards and episode flags back.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rocketrl.env.batched import BatchedEnv
from rocketrl.league.league import League
from rocketrl.league.plan import ArenaPlan


@dataclass
class LearnerStep:
    """One step of the learner's agents, B of them."""

    obs: torch.Tensor
    """[B, O] observations to act on next (after auto-resets)."""
    reward: torch.Tensor
    """[B] rewards."""
    terminated: torch.Tensor
    """[B] bool: the agent's episode ended by a goal."""
    truncated: torch.Tensor
    """[B] bool: the agent's episode was cut by a time limit."""
    final_obs: torch.Tensor | None
    """[B, O] each agent's last observation where some episode was truncated (to bootstrap from), else None."""
    episodes: dict[str, torch.Tensor]
    """Arena-level statistics of the episodes that ended (StepResult.episodes); empty when none did."""


class LearnerEnv:
    """A BatchedEnv seen through the learner's agents; see the module docstring."""

    def __init__(self, env: BatchedEnv, league: League | None, device: torch.device) -> None:
        self.env, self.league, self.device = env, league, device
        plan = league.make_plan(env.config) if league is not None else None
        self.plan: ArenaPlan | None = None if plan is None or plan.pure_selfplay else plan
        """None when the learner drives every car (the plain self-play path)."""
        self.num_agents = self.plan.num_learners if self.plan else env.num_arenas * env.num_cars

    def learner_obs(self, obs: torch.Tensor) -> torch.Tensor:
        """Observations (A, C, O) -> the learner's [B, O]."""
        flat = obs.reshape(-1, obs.shape[-1])
        return flat if self.plan is None else flat[self.plan.learner_index]

    def reset(self) -> torch.Tensor:
        """Reset every arena (and start the training replays afresh); the learner's observations [B, O]."""
        obs = self.env.reset()
        if self.league is not None:
            self.league.restart_replays(self.env.config)
        return self.learner_obs(obs)

    def assign_opponents(self) -> None:
        """Pick the opponents of the next rollout (league matchmaking)."""
        if self.plan is not None and self.league is not None:
            self.league.assign_opponents(self.plan)

    def learner_mean(self, episodes: dict[str, torch.Tensor], key: str) -> torch.Tensor:
        """(K,) mean of a per-car episode statistic (K, C) over the cars the learner drove."""
        values = episodes[key].float()
        if self.plan is None:
            return values.mean(dim=1)
        mask = self.plan.learner_mask[episodes["arena"]]
        return (values * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)

    def step(self, action: torch.Tensor, global_step: int) -> LearnerStep:
        """Step every arena with the learner's actions [B] (or [B, 8]) and its opponents' own; `global_step`
        (agent-steps so far) labels the training replays."""
        env, plan = self.env, self.plan
        a, n = env.num_arenas, env.num_cars
        replays = self.league.replays if self.league is not None else None
        before = env.state if replays is not None else None
        parser = env.action_parser
        if plan is None:
            actions = action.reshape(a, n, *action.shape[1:])
            result = env.step(actions)
            controls = parser.parse(actions, a, n, validate=False) if replays is not None else None
        else:
            obs = env.observations.reshape(a * n, -1)
            flat = torch.zeros(a * n, 8, device=self.device)
            learner = action.view(1, -1, *action.shape[1:])
            flat[plan.learner_index] = parser.parse(learner, 1, self.num_agents, validate=False).view(-1, 8)
            for slot in plan.slots:
                flat[slot.agents] = slot.driver.act(obs[slot.agents]).to(self.device)  # type: ignore[union-attr]
            controls = flat.view(a, n, 8)
            result = env.step_controls(controls, validate=False)
        if replays is not None:
            replays.record(before, controls)
            if result.episodes:
                returns = self.learner_mean(result.episodes, "return")
                replays.episodes_ended(result.episodes["arena"], returns, global_step, result.state)
        if plan is not None and result.episodes:
            ended = torch.zeros(a, dtype=torch.bool, device=self.device)
            ended[result.episodes["arena"]] = True
            for slot in plan.slots:
                slot.driver.reset(ended[slot.agents // n])  # type: ignore[union-attr]
            self.league.record_training_outcomes(plan, result.episodes)  # type: ignore[union-attr]
        if plan is None:
            reward = result.reward.reshape(-1)
            terminated = result.terminated.repeat_interleave(n)
            truncated = result.truncated.repeat_interleave(n)
        else:
            reward = result.reward.reshape(-1)[plan.learner_index]
            terminated = result.terminated[plan.learner_arena]
            truncated = result.truncated[plan.learner_arena]
        final = self.learner_obs(result.final_obs) if bool(truncated.any()) else None
        return LearnerStep(self.learner_obs(result.obs), reward, terminated, truncated, final, result.episodes)
