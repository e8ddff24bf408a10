"""PPO clipped-surrogate losses and training diagnostics on flat minibatches of N samples."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class PPOLossTerms:
    """Loss terms of one minibatch, each a 0-dim tensor on the inputs' device.

    `policy`, `value` and `entropy` carry gradients; `approx_kl` and `clipfrac` are detached diagnostics.
    """

    policy: Tensor
    """Clipped surrogate loss (to minimize)."""
    value: Tensor
    """0.5 * mean squared error of the value head (optionally clipped)."""
    entropy: Tensor
    """Mean policy entropy in nats (to maximize: the trainer subtracts ent_coef * entropy)."""
    approx_kl: Tensor
    """k3 estimate of KL(old || new) in nats: mean((ratio - 1) - log ratio)."""
    clipfrac: Tensor
    """Fraction of samples with |ratio - 1| > clip_coef."""


def ppo_losses(
    new_logprob: Tensor,
    old_logprob: Tensor,
    advantages: Tensor,
    new_values: Tensor,
    old_values: Tensor,
    returns: Tensor,
    entropy: Tensor,
    clip_coef: float,
    value_clip_coef: float | None,
) -> PPOLossTerms:
    """PPO loss terms; every input is [N] (log-probs in nats). `value_clip_coef=None` disables value clipping."""
    logratio = new_logprob - old_logprob
    ratio = logratio.exp()
    # Clipped surrogate: mean(max(-A * ratio, -A * clip(ratio, 1 - c, 1 + c))).
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1.0 - clip_coef, 1.0 + clip_coef)
    policy = torch.maximum(unclipped, clipped).mean()

    # Value loss: 0.5 * mean((V - R)^2)
    value_err = (new_values - returns).square()
    if value_clip_coef is not None:
        # Clipped: 0.5 * mean(max((V - R)^2, (V_old + clip(V - V_old, -vc, vc) - R)^2))
        v_clipped = old_values + (new_values - old_values).clamp(-value_clip_coef, value_clip_coef)
        value_err = torch.maximum(value_err, (v_clipped - returns).square())
    value = 0.5 * value_err.mean()

    with torch.no_grad():
        # k3 estimator of KL(old || new): E_old[(r - 1) - log r], r = pi_new / pi_old; >= 0, low variance.
        approx_kl = ((ratio - 1.0) - logratio).mean()
        clipfrac = ((ratio - 1.0).abs() > clip_coef).to(ratio.dtype).mean()

    return PPOLossTerms(policy=policy, value=value, entropy=entropy.mean(), approx_kl=approx_kl, clipfrac=clipfrac)


def normalize_advantages(adv: Tensor, eps: float = 1e-8) -> Tensor:
    """(adv - mean) / (std + eps) over all elements (any shape), population std (so N=1 gives 0, not NaN)."""
    mean = adv.mean()
    std = adv.std(correction=0)
    return (adv - mean) / (std + eps)


@torch.no_grad()
def explained_variance(values: Tensor, returns: Tensor) -> Tensor:
    """1 - var(R - V) / var(R) as a 0-dim tensor ([N] or any equal shapes, flattened).

    1 = perfect prediction, 0 = no better than a constant, < 0 = worse. When var(R) == 0 (the
    returns are constant, so there is nothing to explain) the result is 0, never NaN or inf.
    """
    values, returns = values.reshape(-1), returns.reshape(-1)
    var_r = returns.var(correction=0)
    var_err = (returns - values).var(correction=0)
    ratio = var_err / torch.where(var_r > 0, var_r, torch.ones_like(var_r))
    return torch.where(var_r > 0, 1.0 - ratio, torch.zeros_like(var_r))
