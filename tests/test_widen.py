"""Widening a trained actor-critic: the wider network acts and values as the trained one, and its new units learn."""

from __future__ import annotations

import pytest
import torch

from rocketrl.env.obs import OBS_SIZE
from rocketrl.policy.actor_critic import ActorCritic
from rocketrl.policy.widen import widened_state_dict

NUM_ACTIONS = 90


def network(hidden: list[int], lstm: bool = False, seed: int = 0) -> ActorCritic:
    torch.manual_seed(seed)
    cfg = {"actor_hidden": hidden, "critic_hidden": hidden, "lstm": lstm, "lstm_hidden": 32}
    return ActorCritic.from_config(OBS_SIZE, NUM_ACTIONS, cfg)


def trained(hidden: list[int], lstm: bool = False) -> ActorCritic:
    """A network whose weights are far from any fresh initialisation (so a copy that drops them shows)."""
    model = network(hidden, lstm, seed=1)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.3)
    return model


@pytest.mark.parametrize(("small", "wide"), [([64, 64], [96, 128]), ([64, 32], [64, 80]), ([48], [200])])
def test_the_wider_network_acts_and_values_exactly_as_the_trained_one(small, wide) -> None:
    source, target = trained(small), network(wide)
    target.load_state_dict(widened_state_dict(source.state_dict(), target.state_dict()))
    obs = torch.randn(257, OBS_SIZE) * 2.0
    with torch.no_grad():
        torch.testing.assert_close(target.actor(obs), source.actor(obs), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(target.critic(obs), source.critic(obs), rtol=1e-5, atol=1e-5)
        assert torch.equal(target.act(obs, deterministic=True)[0], source.act(obs, deterministic=True)[0])


def test_new_units_keep_fresh_incoming_weights_and_silent_outgoing_ones() -> None:
    source, target = trained([64, 64]), network([96, 128])
    fresh = {k: v.clone() for k, v in target.state_dict().items()}
    widened = widened_state_dict(source.state_dict(), fresh)
    first, second, out = widened["actor.0.weight"], widened["actor.2.weight"], widened["actor.4.weight"]
    assert first.shape == (96, OBS_SIZE) and second.shape == (128, 96) and out.shape == (NUM_ACTIONS, 128)
    assert torch.equal(first[:64], source.state_dict()["actor.0.weight"])
    assert torch.equal(first[64:], fresh["actor.0.weight"][64:])  # new units of layer 1 compute from the start
    assert torch.count_nonzero(second[:, 64:]) == 0  # ... and feed nothing yet
    assert torch.equal(second[64:, :64], fresh["actor.2.weight"][64:, :64])
    assert torch.count_nonzero(out[:, 64:]) == 0
    assert torch.equal(widened["actor.0.bias"][:64], source.state_dict()["actor.0.bias"])


def test_the_new_units_learn_from_the_first_gradient() -> None:
    source, target = trained([64, 64]), network([96, 96])
    target.load_state_dict(widened_state_dict(source.state_dict(), target.state_dict()))
    obs = torch.randn(64, OBS_SIZE)
    target.critic(obs).pow(2).mean().backward()
    grad = target.critic[4].weight.grad
    assert grad is not None and grad[:, 64:].abs().sum() > 0  # the silent outgoing weights move first


def test_an_lstm_network_widens_its_heads_behind_the_same_lstm() -> None:
    source, target = trained([64, 64], lstm=True), network([128, 64], lstm=True)
    target.load_state_dict(widened_state_dict(source.state_dict(), target.state_dict()))
    obs = torch.randn(5, OBS_SIZE)
    state = source.initial_state(5, "cpu")
    with torch.no_grad():
        a = source.act(obs, state, deterministic=True)
        b = target.act(obs, state, deterministic=True)
    assert torch.equal(a[0], b[0])
    torch.testing.assert_close(b[2], a[2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("small", "other", "lstm", "message"),
    [
        ([64, 64], [32, 64], False, r"actor\.0\.weight.*only the hidden widths"),
        ([64, 64], [64, 64, 64], False, "number of layers"),
        ([64], [64, 64], False, "number of layers"),
        ([64, 64], [96, 96], True, "number of layers"),
    ],
)
def test_what_cannot_be_widened_is_refused_by_name(small, other, lstm, message) -> None:
    source, target = trained(small), network(other, lstm=lstm)
    with pytest.raises(ValueError, match=message):
        widened_state_dict(source.state_dict(), target.state_dict())


def test_other_observation_or_action_sizes_are_refused() -> None:
    source = trained([64, 64])
    torch.manual_seed(0)
    more_actions = ActorCritic.from_config(OBS_SIZE, NUM_ACTIONS + 2, {"actor_hidden": [96, 96]})
    with pytest.raises(ValueError, match=r"actor\.4\.weight.*90 outputs.*92"):
        widened_state_dict(source.state_dict(), more_actions.state_dict())
    more_obs = ActorCritic.from_config(OBS_SIZE + 4, NUM_ACTIONS, {"actor_hidden": [96, 96]})
    with pytest.raises(ValueError, match=r"actor\.0\.weight.*reads 180 features.*184"):
        widened_state_dict(source.state_dict(), more_obs.state_dict())
