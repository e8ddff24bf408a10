"""The discrete policy head's distribution matches torch's Categorical: log-probabilities, entropy, gradients,
the most likely action, and samples drawn with the right frequencies."""

from __future__ import annotations

import math

import torch
from torch.distributions import Categorical

from rocketrl.policy.discrete import DiscreteDistribution


def test_log_prob_entropy_and_their_gradients_match_categorical() -> None:
    logits = torch.randn(64, 90, generator=torch.Generator().manual_seed(0)) * 3
    actions = torch.randint(0, 90, (64,), generator=torch.Generator().manual_seed(1))
    ours_in = logits.clone().requires_grad_(True)
    theirs_in = logits.clone().requires_grad_(True)
    ours, theirs = DiscreteDistribution(ours_in), Categorical(logits=theirs_in)
    torch.testing.assert_close(ours.log_prob(actions), theirs.log_prob(actions))
    torch.testing.assert_close(ours.entropy(), theirs.entropy())
    torch.testing.assert_close(ours.probs, theirs.probs)
    (ours.log_prob(actions).sum() + 0.3 * ours.entropy().sum()).backward()
    (theirs.log_prob(actions).sum() + 0.3 * theirs.entropy().sum()).backward()
    torch.testing.assert_close(ours_in.grad, theirs_in.grad)


def test_hand_computed_case() -> None:
    dist = DiscreteDistribution(torch.log(torch.tensor([[0.5, 0.25, 0.25]])))
    assert math.isclose(float(dist.log_prob(torch.tensor([1]))), math.log(0.25), rel_tol=1e-6)
    assert math.isclose(float(dist.entropy()), 1.5 * math.log(2), rel_tol=1e-6)  # 0.5 ln 2 + 2 * 0.25 ln 4
    assert int(dist.mode()) == 0


def test_samples_follow_the_probabilities_and_skip_impossible_actions() -> None:
    probs = torch.tensor([0.1, 0.0, 0.6, 0.3, 0.0])
    logits = torch.log(probs).expand(20_000, 5)  # -inf for the impossible actions
    samples = DiscreteDistribution(logits).sample(torch.Generator().manual_seed(2))
    assert samples.dtype == torch.int64 and samples.shape == (20_000,)
    counts = torch.bincount(samples, minlength=5).float() / 20_000
    assert counts[1] == 0 and counts[4] == 0
    # 4.5 standard errors of a frequency near 0.5 over 20,000 draws: about 0.016
    torch.testing.assert_close(counts, probs, atol=0.016, rtol=0)


def test_a_generator_makes_samples_repeat_and_rows_draw_independently() -> None:
    dist = DiscreteDistribution(torch.zeros(1000, 90))
    first = dist.sample(torch.Generator().manual_seed(3))
    assert torch.equal(first, dist.sample(torch.Generator().manual_seed(3)))
    assert len(first.unique()) > 80  # uniform rows: 1,000 independent draws cover nearly every action
