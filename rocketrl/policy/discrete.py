"""The discrete policy head's distribution: a categorical over the lookup table's rows.

torch.distributions.Categorical does the same sums, but on a CPU its sampling (torch.multinomial) and its
argument checks cost far more than the network for the small batches a rollout acts on
(benchmarks/policy_sampling.py; docs/results/speed.md, Training throughput). Here a sample is drawn by
inverting the cumulative distribution with one uniform number per row.
"""

from __future__ import annotations

import torch


class DiscreteDistribution:
    """Categorical distribution over the last dimension of `logits` [..., K] (unnormalised log-probabilities)."""

    def __init__(self, logits: torch.Tensor) -> None:
        self.log_probs = torch.log_softmax(logits, dim=-1)
        """[..., K] normalised log-probabilities."""

    @property
    def probs(self) -> torch.Tensor:
        """[..., K] probabilities."""
        return self.log_probs.exp()

    def sample(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """[...] int64 action indices, each drawn with its row's probabilities: the first index whose cumulative
        probability passes a uniform draw (scaled by the row's total, so rounding never leaves it short)."""
        cumulative = self.probs.cumsum(dim=-1)
        uniform = torch.rand(
            cumulative.shape[:-1] + (1,), generator=generator, device=cumulative.device, dtype=cumulative.dtype
        )
        index = (cumulative < uniform * cumulative[..., -1:]).sum(dim=-1)
        return index.clamp_(max=cumulative.shape[-1] - 1)

    def mode(self) -> torch.Tensor:
        """[...] the most likely action of each row (the first of equals)."""
        return self.log_probs.argmax(dim=-1)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """[...] log-probability of `actions` [...] (integer indices into the last dimension)."""
        return self.log_probs.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        """[...] entropy in nats."""
        return -(self.probs * self.log_probs).sum(dim=-1)
