"""Done conditions: a goal terminates an episode; a game-time limit or a no-touch limit truncates it.

`terminated` and `truncated` stay separate: learning bootstraps the value after a truncation and
not after a termination.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rocketrl.sim.state import BatchState


@dataclass
class DoneConditions:
    """Tracks per-arena step counters and decides which arenas end their episode."""

    num_arenas: int
    step_seconds: float
    """Game time of one environment step (s): rocketrl.sim.arena.step_seconds(tick_skip)."""
    episode_seconds: float = 0.0
    """Truncate after this much game time; 0 (no limit) disables it. BatchedEnv passes env.episode_seconds."""
    no_touch_seconds: float = 0.0
    """Truncate when nobody touched the ball for this long; 0 (no limit) disables it. BatchedEnv passes
    env.no_touch_seconds."""
    terminate_on_goal: bool = True
    device: torch.device | str = "cpu"

    def __post_init__(self) -> None:
        if self.episode_seconds < 0:
            raise ValueError(f"episode_seconds={self.episode_seconds}: must be >= 0 (0 disables the limit)")
        if self.no_touch_seconds < 0:
            raise ValueError(f"no_touch_seconds={self.no_touch_seconds}: must be >= 0 (0 disables the limit)")
        self.steps = torch.zeros(self.num_arenas, dtype=torch.long, device=self.device)
        """(A,) steps since the episode began."""
        self.steps_since_touch = torch.zeros(self.num_arenas, dtype=torch.long, device=self.device)
        # A positive limit lasts at least one step (0 means disabled, so it must not round to 0).
        self._max_steps = max(1, round(self.episode_seconds / self.step_seconds)) if self.episode_seconds else 0
        self._max_no_touch = max(1, round(self.no_touch_seconds / self.step_seconds)) if self.no_touch_seconds else 0

    def update(self, state: BatchState) -> tuple[torch.Tensor, torch.Tensor]:
        """Count one step and return (terminated, truncated), each (A,) bool."""
        self.steps += 1
        touched = state.car_touched_ball.any(dim=1)
        self.steps_since_touch = torch.where(touched, torch.zeros_like(self.steps), self.steps_since_touch + 1)
        terminated = state.goal_scored >= 0 if self.terminate_on_goal else torch.zeros_like(touched)
        truncated = torch.zeros_like(terminated)
        if self._max_steps:
            truncated = truncated | (self.steps >= self._max_steps)
        if self._max_no_touch:
            truncated = truncated | (self.steps_since_touch >= self._max_no_touch)
        return terminated, truncated & ~terminated

    def reset(self, mask: torch.Tensor) -> None:
        """Restart the counters of the arenas in `mask` (A,) bool."""
        self.steps = torch.where(mask, torch.zeros_like(self.steps), self.steps)
        self.steps_since_touch = torch.where(mask, torch.zeros_like(self.steps), self.steps_since_touch)
