"""The entity attention network (model.kind=attention): shapes, invariance to the order of teammates and of
opponents, masking of empty car slots, every team size through one network, its config errors, checkpoints,
and a short run of the real trainer that saves and resumes."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import torch
from export_helpers import ATTENTION, make_checkpoint

from rocketrl.config import load_config
from rocketrl.env.obs import MAX_TEAMMATES, NUM_OTHER_SLOTS, OBS_SIZE, OTHER_PRESENT, OTHER_SIZE, OTHERS
from rocketrl.infra.checkpoint import load_checkpoint
from rocketrl.policy.actor_critic import ActorCritic
from rocketrl.policy.attention import PRESENCE_COLUMNS, AttentionShape
from rocketrl.policy.config import LSTM_UNSUPPORTED, ModelConfig
from rocketrl.policy.load import policy_from_checkpoint
from rocketrl.policy.normalize import ObservationNormalizer
from rocketrl.ppo.train_logger import UpdateReport
from rocketrl.ppo.trainer import Trainer

NUM_ACTIONS = 90


def attention_model(seed: int = 0) -> ActorCritic:
    torch.manual_seed(seed)
    cfg = ModelConfig(kind="attention", actor_hidden=[32], critic_hidden=[32], **ATTENTION)
    model = ActorCritic.from_config(OBS_SIZE, NUM_ACTIONS, cfg).eval()
    with torch.no_grad():
        model.actor.head[-1].weight.mul_(100.0)  # spread the logits, so that differences show
    return model


def observations(batch: int, teammates: int, opponents: int, seed: int = 0, garbage: bool = False) -> torch.Tensor:
    """Observations [batch, 180] with `teammates` and `opponents` cars present; the empty slots hold zeros,
    or (garbage) random values with present = 0."""
    generator = torch.Generator().manual_seed(seed)
    obs = torch.randn(batch, OBS_SIZE, generator=generator)
    others = obs[:, OTHERS].reshape(batch, NUM_OTHER_SLOTS, OTHER_SIZE)
    present = torch.zeros(NUM_OTHER_SLOTS, dtype=torch.bool)
    present[:teammates] = True
    present[MAX_TEAMMATES : MAX_TEAMMATES + opponents] = True
    others[:, present, OTHER_PRESENT] = 1.0
    noise = torch.randn(batch, int((~present).sum()), OTHER_SIZE, generator=generator) * 5.0
    others[:, ~present] = noise if garbage else 0.0
    others[:, ~present, OTHER_PRESENT] = 0.0
    obs[:, OTHERS] = others.reshape(batch, -1)
    return obs


def outputs(model: ActorCritic, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad():
        return model.actor(obs), model.critic(obs).squeeze(-1)


def permuted(obs: torch.Tensor, order: list[int]) -> torch.Tensor:
    """obs with its five other-car slots reordered: slot k takes the old slot order[k]."""
    others = obs[:, OTHERS].reshape(obs.shape[0], NUM_OTHER_SLOTS, OTHER_SIZE)[:, order]
    out = obs.clone()
    out[:, OTHERS] = others.reshape(obs.shape[0], -1)
    return out


def test_shapes_of_acting_evaluating_and_values() -> None:
    model = attention_model()
    obs = observations(7, 2, 3)
    action, logprob, value, state = model.act(obs)
    assert action.shape == logprob.shape == value.shape == (7,) and state is None
    logprob, entropy, value = model.evaluate(obs, action)
    assert logprob.shape == entropy.shape == value.shape == (7,)
    assert model.value(obs).shape == (7,)
    assert model.actor(obs.reshape(1, 7, OBS_SIZE)).shape == (1, 7, NUM_ACTIONS)


@pytest.mark.parametrize("order", [[1, 0, 2, 3, 4], [0, 1, 4, 2, 3], [1, 0, 3, 4, 2], [0, 1, 2, 4, 3]])
def test_outputs_ignore_the_order_of_teammates_and_of_opponents(order) -> None:
    model = attention_model()
    obs = observations(64, 2, 3)
    logits, values = outputs(model, obs)
    logits_p, values_p = outputs(model, permuted(obs, order))
    torch.testing.assert_close(logits_p, logits, rtol=0, atol=1e-4)
    torch.testing.assert_close(values_p, values, rtol=0, atol=1e-5)


def test_a_teammate_and_an_opponent_are_told_apart() -> None:
    model = attention_model()
    obs = observations(64, 1, 1)
    swapped = permuted(obs, [2, 1, 0, 3, 4])  # the teammate becomes an opponent and the opponent a teammate
    assert (outputs(model, swapped)[0] - outputs(model, obs)[0]).abs().max() > 1e-2


@pytest.mark.parametrize("teammates,opponents", [(0, 1), (1, 2), (0, 0), (2, 2)])
def test_empty_slots_are_masked_whatever_they_hold(teammates, opponents) -> None:
    model = attention_model()
    clean = observations(32, teammates, opponents, seed=1)
    garbage = observations(32, teammates, opponents, seed=1, garbage=True)
    assert not torch.equal(clean, garbage) or teammates + opponents == NUM_OTHER_SLOTS
    logits, values = outputs(model, clean)
    assert torch.isfinite(logits).all() and torch.isfinite(values).all()
    logits_g, values_g = outputs(model, garbage)
    torch.testing.assert_close(logits_g, logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(values_g, values, rtol=0, atol=1e-6)


def test_every_team_size_runs_through_one_network_in_one_batch() -> None:
    model = attention_model()
    sizes = [(0, 1), (1, 2), (2, 3)]  # the other cars of 1v1, 2v2 and 3v3
    parts = [observations(5, t, o, seed=k) for k, (t, o) in enumerate(sizes)]
    logits, values = outputs(model, torch.cat(parts))
    for k, part in enumerate(parts):
        alone_logits, alone_values = outputs(model, part)
        torch.testing.assert_close(logits[5 * k : 5 * k + 5], alone_logits, rtol=0, atol=1e-4)
        torch.testing.assert_close(values[5 * k : 5 * k + 5], alone_values, rtol=0, atol=1e-5)
    assert logits.shape == (15, NUM_ACTIONS) and torch.isfinite(values).all()


def test_gradients_reach_every_parameter() -> None:
    model = attention_model().train()
    obs = observations(16, 2, 3)
    logprob, entropy, value = model.evaluate(obs, torch.randint(0, NUM_ACTIONS, (16,)))
    (logprob.sum() + entropy.sum() + value.sum()).backward()
    missing = [name for name, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not missing, missing


@pytest.mark.parametrize(
    "fields,message",
    [
        ({"kind": "attention", "lstm": True}, LSTM_UNSUPPORTED),
        ({"kind": "attention", "embed_size": 30, "attention_heads": 4}, "model.embed_size=30 is not a multiple"),
        ({"kind": "attention", "attention_layers": 0}, "model.attention_layers=0"),
        ({"kind": "attention", "attention_heads": 0}, "model.attention_heads=0"),
        ({"kind": "transformer"}, "model.kind"),
    ],
)
def test_config_errors_name_the_field(fields, message) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        ModelConfig(**fields)


def test_the_command_line_selects_the_attention_network_and_refuses_it_with_an_lstm() -> None:
    cfg = load_config(None, ["--model.kind", "attention", "--model.embed-size", "64"])
    assert cfg.model.kind == "attention" and cfg.model.embed_size == 64
    with pytest.raises(ValueError, match="model.lstm=true is not supported with model.kind=attention"):
        load_config(None, ["--model.kind", "attention", "--model.lstm", "true"])


def test_the_network_itself_refuses_an_lstm_and_a_foreign_observation_size() -> None:
    with pytest.raises(ValueError, match="model.lstm=true is not supported"):
        ActorCritic(OBS_SIZE, NUM_ACTIONS, kind="attention", lstm_hidden=16)
    with pytest.raises(ValueError, match="180-float observation layout"):
        ActorCritic(12, NUM_ACTIONS, kind="attention", attention=AttentionShape(16, 2, 1))


def test_from_config_builds_the_mlp_exactly_as_before() -> None:
    torch.manual_seed(3)
    direct = ActorCritic(OBS_SIZE, NUM_ACTIONS, actor_hidden=[64, 32], critic_hidden=[48], lstm_hidden=16)
    torch.manual_seed(3)
    cfg = {"actor_hidden": [64, 32], "critic_hidden": [48], "lstm": True, "lstm_hidden": 16, "unknown": 1}
    built = ActorCritic.from_config(OBS_SIZE, NUM_ACTIONS, cfg)
    assert list(built.state_dict()) == list(direct.state_dict())
    for key, value in direct.state_dict().items():
        assert torch.equal(built.state_dict()[key], value), key
    assert built.raw_obs_columns == ()


def test_the_normalizer_keeps_the_presence_flags_raw() -> None:
    model = attention_model()
    norm = ObservationNormalizer(OBS_SIZE, "cpu", raw_columns=model.raw_obs_columns)
    assert list(model.raw_obs_columns) == list(PRESENCE_COLUMNS) == [99, 119, 139, 159, 179]
    one_v_one = observations(50, 0, 1)
    norm.update(one_v_one)  # the opponent slot always present, the others never: both would normalize to 0
    torch.testing.assert_close(norm.normalize(one_v_one)[:, list(PRESENCE_COLUMNS)], one_v_one[:, PRESENCE_COLUMNS])
    assert norm.normalize(one_v_one)[:, 0].abs().max() > 0.5


def test_a_checkpoint_rebuilds_the_attention_network(tmp_path: Path) -> None:
    checkpoint = make_checkpoint(tmp_path, kind="attention")
    policy = policy_from_checkpoint(checkpoint, deterministic=True)
    assert policy.model.kind == "attention"
    state, _ = load_checkpoint(checkpoint)
    for key, value in state["model"].items():
        assert torch.equal(policy.model.state_dict()[key], value), key
    obs = observations(9, 1, 2)
    action, _ = policy.act(obs)
    assert action.shape == (9,)


class StopAfter:
    """A logger that interrupts training (as Ctrl-C would) once `updates` updates are done."""

    def __init__(self, updates: int) -> None:
        self.updates = updates

    def log_update(self, report: UpdateReport) -> None:
        if report.updates >= self.updates:
            signal.raise_signal(signal.SIGINT)


def test_the_trainer_trains_saves_and_resumes_an_attention_network(tmp_path: Path) -> None:
    batch = 2 * 2 * 8  # arenas x cars x rollout steps
    args = [
        "--env.num-arenas", "2", "--env.stepping", "serial", "--env.num-workers", "1",
        "--ppo.rollout-steps", "8", "--ppo.minibatches", "2", "--ppo.epochs", "1",
        "--model.kind", "attention", "--model.embed-size", "16", "--model.attention-heads", "2",
        "--model.attention-layers", "1", "--model.actor-hidden", "16", "--model.critic-hidden", "16",
        "--run.device", "cpu", "--run.timesteps", str(2 * batch), "--run.checkpoint-interval", str(batch),
        "--run.logdir", str(tmp_path), "--run.name", "attention",
    ]  # fmt: skip
    first = Trainer(load_config(None, args))
    try:
        first.learn(StopAfter(1))
    finally:
        first.close()
    assert first.counters.updates == 1
    resumed = Trainer(load_config(None, args))
    try:
        resumed.resume("latest")
        resumed.learn()
    finally:
        resumed.close()
    assert resumed.counters.updates == 2 and resumed.counters.global_step == 2 * batch
    state, meta = load_checkpoint(resumed.checkpoints.latest())
    assert any(key.startswith("actor.blocks.0.attention.") for key in state["model"])
    assert meta["config"]["model"]["kind"] == "attention"
    policy = policy_from_checkpoint(resumed.checkpoints.latest())
    assert policy.model.kind == "attention"
    assert all(torch.isfinite(value).all() for value in state["model"].values())


def test_the_learner_keeps_the_presence_flags_raw() -> None:
    from rocketrl.ppo.algorithm import PPO

    cfg = load_config(None, ["--model.kind", "attention", "--run.device", "cpu"])
    learner = PPO(cfg.ppo, cfg.model, cfg.speed, OBS_SIZE, NUM_ACTIONS, True, torch.device("cpu"), seed=0)
    assert learner.obs_norm.raw_columns == list(PRESENCE_COLUMNS)
