"""Reward scaling by the running std of the discounted return, kept on the training device.

State dicts hold tensors only (they go straight into safetensors).
"""

from __future__ import annotations

import torch
from torch import Tensor

from rocketrl.policy.normalize import RunningMeanStd, load_buffer


class ReturnScaler:
    """Scales rewards by the running std of the per-env discounted return (no mean subtraction).

    Keeps ret[b] = gamma * ret[b] + r[b], reset to 0 after an episode ends.
    """

    def __init__(
        self,
        num_envs: int,
        gamma: float,
        device: torch.device | str,
        clip: float = 10.0,
        epsilon: float = 1e-8,
        *,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        self.num_envs = num_envs
        self.gamma = gamma
        self.clip = clip
        self.epsilon = epsilon
        """Added to the return variance before the square root."""
        self.rms = RunningMeanStd((), device, dtype=dtype)
        self.running_return = torch.zeros(num_envs, dtype=dtype, device=device)
        """[B] discounted return of the current episode of each env."""

    @property
    def device(self) -> torch.device:
        return self.running_return.device

    @torch.no_grad()
    def update_and_scale(self, rewards: Tensor, episode_end: Tensor) -> Tensor:
        """rewards [B], episode_end [B] bool (episode ended after this step) -> scaled rewards [B] in rewards' dtype."""
        if tuple(rewards.shape) != (self.num_envs,) or tuple(episode_end.shape) != (self.num_envs,):
            raise ValueError(
                f"ReturnScaler expects rewards and episode_end of shape ({self.num_envs},); "
                f"got {tuple(rewards.shape)} and {tuple(episode_end.shape)}"
            )
        # ret_t = gamma * ret_{t-1} + r_t
        self.running_return.mul_(self.gamma).add_(rewards.to(self.running_return.dtype))
        self.rms.update(self.running_return)
        scaled = self.scale(rewards)
        # The return of a finished episode starts again from 0 (after its last return entered the stats).
        self.running_return.masked_fill_(episode_end.to(torch.bool), 0.0)
        return scaled

    def scale(self, rewards: Tensor) -> Tensor:
        """clamp(r / sqrt(var_ret + epsilon), -clip, clip) without updating anything; shape and dtype of rewards."""
        std = (self.rms.var + self.epsilon).sqrt().to(rewards.dtype)
        return (rewards / std).clamp(-self.clip, self.clip)

    def state_dict(self) -> dict[str, Tensor]:
        """{'mean', 'var', 'count'} of the return statistics plus 'running_return' [B]."""
        return {**self.rms.state_dict(), "running_return": self.running_return.clone()}

    def load_state_dict(self, d: dict[str, Tensor]) -> None:
        self.rms.load_state_dict(d)
        load_buffer(self.running_return, d, "running_return")

    def to(self, device: torch.device | str) -> ReturnScaler:
        self.rms.to(device)
        self.running_return = self.running_return.to(device)
        return self
