"""Generalized Advantage Estimation (Schulman et al. 2016) over a [T, B] rollout.

Conventions (T = rollout steps, B = agents):
    values[t]      = V(s_t)
    next_values[t] = V(s_{t+1}) of the *same* episode: V(final observation) after a truncation,
                     V(s_T) at the last rollout step.
    terminated[t]  = the episode ended by a terminal event after step t -> no bootstrap.
    episode_end[t] = terminated OR truncated after step t -> the recursion does not carry across t.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _check_shapes(**tensors: Tensor) -> None:
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    first = next(iter(shapes.values()))
    if len(first) < 1 or any(shape != first for shape in shapes.values()):
        raise ValueError(f"GAE inputs must all have the same [T, B] shape; got {shapes}")


@torch.no_grad()
def compute_gae(
    rewards: Tensor,
    values: Tensor,
    next_values: Tensor,
    terminated: Tensor,
    episode_end: Tensor,
    gamma: float,
    lam: float,
) -> tuple[Tensor, Tensor]:
    """Advantages and value targets, both [T, B] in the dtype of `values`, on the inputs' device.

    Inputs are all [T, B] (trailing dims beyond B also work); `terminated` and `episode_end` are bool
    (or 0/1). Runs without autograd: the results are regression/advantage targets, never differentiated.
    """
    _check_shapes(
        rewards=rewards, values=values, next_values=next_values, terminated=terminated, episode_end=episode_end
    )
    dtype = values.dtype
    not_terminated = 1.0 - terminated.to(dtype)
    not_end = 1.0 - episode_end.to(dtype)
    # TD error: delta_t = r_t + gamma * V(s_{t+1}) * (1 - terminated_t) - V(s_t), all steps at once.
    deltas = rewards.to(dtype) + gamma * next_values.to(dtype) * not_terminated - values
    # Carry factor of the recursion: gamma * lam * (1 - episode_end_t).
    carry = (gamma * lam) * not_end
    advantages = torch.empty_like(values)
    last = torch.zeros_like(values[0])
    for t in range(values.shape[0] - 1, -1, -1):
        # A_t = delta_t + gamma * lam * (1 - episode_end_t) * A_{t+1}
        last = deltas[t] + carry[t] * last
        advantages[t] = last
    # Value targets (lambda-returns): R_t = A_t + V(s_t).
    returns = advantages + values
    return advantages, returns
