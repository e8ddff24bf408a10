"""A plain-loop reference of Generalized Advantage Estimation, to check rocketrl.ppo.gae.compute_gae against."""

from __future__ import annotations

import torch
from torch import Tensor


@torch.no_grad()
def compute_gae_reference(
    rewards: Tensor,
    values: Tensor,
    next_values: Tensor,
    terminated: Tensor,
    episode_end: Tensor,
    gamma: float,
    lam: float,
) -> tuple[Tensor, Tensor]:
    """Same as `compute_gae`, written as a plain Python double loop over t and b on [T, B] inputs.

    Slow (moves everything to Python floats): the reference the tests hold compute_gae to.
    """
    shapes = {tuple(t.shape) for t in (rewards, values, next_values, terminated, episode_end)}
    if len(shapes) != 1 or values.dim() != 2:
        raise ValueError(f"compute_gae_reference takes [T, B] inputs; got shape {tuple(values.shape)}")
    r, v, nv = rewards.tolist(), values.tolist(), next_values.tolist()
    term, end = terminated.tolist(), episode_end.tolist()
    steps, agents = values.shape
    adv = [[0.0] * agents for _ in range(steps)]
    for b in range(agents):
        next_adv = 0.0
        for t in reversed(range(steps)):
            bootstrap = 0.0 if term[t][b] else nv[t][b]
            delta = r[t][b] + gamma * bootstrap - v[t][b]
            next_adv = delta + (0.0 if end[t][b] else gamma * lam * next_adv)
            adv[t][b] = next_adv
    advantages = torch.tensor(adv, dtype=values.dtype, device=values.device)
    return advantages, advantages + values
