"""The PPO algorithm object on its own, without arenas: what it stores, how it bootstraps, how it updates."""

from __future__ import annotations

import pytest
import torch
from gae_reference import compute_gae_reference

from rocketrl.policy.config import ModelConfig
from rocketrl.ppo.algorithm import PPO
from rocketrl.ppo.config import PPOConfig, SpeedConfig

OBS, ACTIONS, AGENTS, STEPS = 6, 5, 4, 8


def _ppo(**ppo_settings) -> PPO:
    torch.manual_seed(0)
    settings = {"rollout_steps": STEPS, "minibatches": 2, "epochs": 2, "scale_rewards": False, **ppo_settings}
    algorithm = PPO(
        PPOConfig(**settings),
        ModelConfig(actor_hidden=[16], critic_hidden=[16]),
        SpeedConfig(),
        OBS,
        ACTIONS,
        discrete=True,
        device=torch.device("cpu"),
        seed=0,
    )
    algorithm.resize(AGENTS)
    algorithm.setup_precision()
    return algorithm


def _rollout(algorithm: PPO, truncate_at: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """A rollout of random observations and rewards; agent 0's episode is terminated at step 3 and, with
    `truncate_at`, agent 1's truncated there. Returns (the last observations, the final observation given)."""
    generator = torch.Generator().manual_seed(1)
    obs = torch.randn(AGENTS, OBS, generator=generator)
    state, start = algorithm.initial_state(), torch.ones(AGENTS, dtype=torch.bool)
    final = torch.randn(AGENTS, OBS, generator=generator)
    algorithm.begin_rollout()
    for t in range(STEPS):
        _, state = algorithm.act(t, obs, state, start)
        reward = torch.randn(AGENTS, generator=generator)
        terminated = torch.zeros(AGENTS, dtype=torch.bool)
        truncated = torch.zeros(AGENTS, dtype=torch.bool)
        terminated[0] = t == 3
        truncated[1] = t == truncate_at
        start = algorithm.process_step(t, reward, terminated, truncated, final if truncated.any() else None, state)
        obs = torch.randn(AGENTS, OBS, generator=generator)
    algorithm.compute_returns(obs, state, start)
    return obs, final


def test_a_rollout_stores_what_the_update_needs_and_gae_matches_the_reference() -> None:
    algorithm = _ppo()
    last_obs, _ = _rollout(algorithm)
    s = algorithm.storage
    assert s is not None and bool((s.logprobs < 0).all()) and bool(s.actions.lt(ACTIONS).all())
    with torch.no_grad():  # the values are the critic's values of the stored (normalized) observations
        expected = torch.stack([algorithm.model.value(s.obs[t]) for t in range(STEPS)])
        last = algorithm.model.value(algorithm.obs_norm.normalize(last_obs))
    torch.testing.assert_close(s.values, expected)
    assert bool(s.terminated[3, 0]) and bool(s.episode_end[3, 0]) and bool(s.episode_start[4, 0])
    torch.testing.assert_close(s.next_values[-1], torch.where(s.episode_end[-1], 0.0, last))
    assert s.next_values[3, 0] == 0.0  # no bootstrap after a goal
    advantages, returns = compute_gae_reference(
        s.rewards, s.values, s.next_values, s.terminated, s.episode_end, 0.99, 0.95
    )
    torch.testing.assert_close(s.advantages, advantages)
    torch.testing.assert_close(s.returns, returns)


def test_a_truncated_episode_bootstraps_from_its_final_observation() -> None:
    algorithm = _ppo()
    _, final = _rollout(algorithm, truncate_at=STEPS - 1)  # the last step: the normalizer has not moved since
    s = algorithm.storage
    with torch.no_grad():
        bootstrap = algorithm.model.value(algorithm.obs_norm.normalize(final))
    assert bool(s.episode_end[-1, 1]) and not bool(s.terminated[-1, 1])
    assert s.next_values[-1, 1] == pytest.approx(float(bootstrap[1]), abs=1e-6)
    assert s.next_values[-1, 2] != pytest.approx(float(bootstrap[2]), abs=1e-6)  # others: V of the next obs


def test_an_update_changes_the_weights_and_reports_its_terms() -> None:
    algorithm = _ppo()
    _rollout(algorithm)
    before = [p.detach().clone() for p in algorithm.model.parameters()]
    stats, skipped = algorithm.update(progress=0.0)
    assert skipped == 0 and {"policy", "value", "entropy", "approx_kl"} <= set(stats.values)
    assert any(not torch.equal(a, b) for a, b in zip(before, algorithm.model.parameters(), strict=True))


def test_state_round_trips_into_a_fresh_algorithm() -> None:
    algorithm = _ppo()
    _rollout(algorithm)
    algorithm.update(progress=0.0)
    fresh = _ppo(learning_rate=1e-2)
    fresh.load_state_dict(algorithm.state_dict())
    for a, b in zip(algorithm.model.parameters(), fresh.model.parameters(), strict=True):
        assert torch.equal(a, b)
    assert torch.equal(algorithm.shuffle.get_state(), fresh.shuffle.get_state())
    torch.testing.assert_close(algorithm.obs_norm.state_dict()["mean"], fresh.obs_norm.state_dict()["mean"])


def test_too_many_minibatches_for_the_agents_name_the_fix() -> None:
    algorithm = _ppo(minibatches=STEPS * AGENTS)
    with pytest.raises(ValueError, match=r"ppo.minibatches=.*lower ppo.minibatches or raise env.num_arenas"):
        algorithm.resize(1)


def test_generator_state_restores_from_any_device_and_kind():
    """A checkpoint's shuffle-generator state loads whatever device its tensors were mapped to; a state saved by
    a generator of the other device kind (16 bytes of CUDA's Philox on a CPU run) reseeds reproducibly."""
    from rocketrl.ppo.algorithm import restorable_generator_state

    generator = torch.Generator().manual_seed(7)
    saved = generator.get_state()
    expected = torch.rand(4, generator=generator)
    generator.set_state(restorable_generator_state(saved.to(torch.float32).to(torch.uint8), generator))
    assert torch.equal(torch.rand(4, generator=generator), expected)
    philox = torch.arange(16, dtype=torch.uint8)
    draws = []
    for _ in range(2):
        generator.set_state(restorable_generator_state(philox, generator))
        draws.append(torch.rand(4, generator=generator))
    assert torch.equal(draws[0], draws[1]) and not torch.equal(draws[0], expected)
