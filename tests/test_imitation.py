"""Imitation early in training (ppo/imitation.py), of RulePolicy or of a trained bot: the action labels, the
weight's schedule, that the loss pulls the policy to the teacher's choices (a bot's too, into a network of
another shape), and the settings it refuses."""

from __future__ import annotations

import pytest
import torch

from rocketrl.env.actions import lookup_table
from rocketrl.env.batched import BatchedEnv
from rocketrl.env.config import EnvConfig
from rocketrl.policy.config import ModelConfig
from rocketrl.policy.load import load_policy
from rocketrl.policy.rule import rule_controls
from rocketrl.ppo.algorithm import PPO
from rocketrl.ppo.config import PPOConfig, SpeedConfig
from rocketrl.ppo.imitation import BotTeacher, RuleTeacher, imitation_weight, nearest_table_actions

TABLE = lookup_table()


def _row(**controls: float) -> int:
    """The index of the table row with these controls (the rest 0)."""
    names = ("throttle", "steer", "pitch", "yaw", "roll", "jump", "boost", "handbrake")
    wanted = torch.tensor([float(controls.get(name, 0.0)) for name in names])
    matches = torch.nonzero((TABLE == wanted).all(dim=1)).flatten()
    assert matches.numel() == 1, f"no single table row {controls}"
    return int(matches[0])


def test_every_table_row_is_its_own_nearest_action() -> None:
    assert torch.equal(nearest_table_actions(TABLE, TABLE), torch.arange(TABLE.shape[0]))


def test_rule_controls_map_to_the_rows_that_do_the_same() -> None:
    controls = torch.tensor(
        [
            [1.0, 0.7, 0.0, 0.7, 0.0, 0.0, 1.0, 0.0],  # boosting through a right turn
            [1.0, -0.2, -1.0, -0.2, 0.0, 1.0, 0.0, 0.0],  # a forward dodge (stick forward, jump)
            [1.0, 0.1, 0.0, 0.1, 0.0, 1.0, 0.0, 0.0],  # a jump off the floor, wheels straight
            [-1.0, -0.9, 0.0, -0.9, 0.0, 0.0, 0.0, 1.0],  # braking into a handbrake turn to the left
        ]
    )
    expected = [
        _row(throttle=1, steer=1, yaw=1, boost=1),
        _row(pitch=-1, jump=1, handbrake=1),
        _row(jump=1),
        _row(throttle=-1, steer=-1, yaw=-1, handbrake=1),
    ]
    assert nearest_table_actions(controls, TABLE).tolist() == expected


def test_the_teacher_labels_rule_policys_jumps_and_dodges_as_jumps() -> None:
    env = BatchedEnv(
        EnvConfig(num_arenas=16, engine="rocketsim", stepping="serial", state_setter={"dodge_shot": 1.0}, seed=3)
    )
    teacher = RuleTeacher(torch.device("cpu"))
    obs = env.reset()
    jumps = labelled_jumps = 0
    for _ in range(40):
        flat = obs.reshape(-1, obs.shape[-1])
        labels = teacher.actions(flat)
        rule_jump = rule_controls(flat)[:, 5] > 0.5
        assert torch.equal(TABLE[labels, 5] > 0.5, rule_jump)  # a jump is a jump, and no jump is added
        jumps += int(rule_jump.sum())
        labelled_jumps += int((TABLE[labels, 5] > 0.5).sum())
        obs = env.step(labels.view(16, -1)).obs
    env.close()
    assert jumps > 10 and labelled_jumps == jumps  # dodge_shot starts: RulePolicy dodges into the ball


def test_the_imitation_weight_falls_linearly_to_zero() -> None:
    assert imitation_weight(2.0, 0.4, 0.0) == 2.0
    assert imitation_weight(2.0, 0.4, 0.1) == pytest.approx(1.5)
    assert imitation_weight(2.0, 0.4, 0.3) == pytest.approx(0.5)
    assert imitation_weight(2.0, 0.4, 0.4) == 0.0
    assert imitation_weight(2.0, 0.4, 0.9) == 0.0
    assert imitation_weight(0.0, 0.4, 0.0) == 0.0


def _observations(count: int) -> torch.Tensor:
    """count real observations [count, 180] from arenas driven by RulePolicy's own table actions."""
    env = BatchedEnv(EnvConfig(num_arenas=8, engine="rocketsim", stepping="serial", seed=5))
    teacher = RuleTeacher(torch.device("cpu"))
    obs, seen = env.reset(), []
    while sum(len(o) for o in seen) < count:
        flat = obs.reshape(-1, obs.shape[-1])
        seen.append(flat)
        obs = env.step(teacher.actions(flat).view(8, -1)).obs
    env.close()
    return torch.cat(seen)[:count]


def _agreement_after_training(
    imitation_coef: float,
    obs: torch.Tensor,
    updates: int,
    teacher: str = "rule_policy",
    model: ModelConfig | None = None,
) -> tuple[float, float]:
    """Train a small policy (`model`; an MLP of 64 x 64 by default) on rollouts of `obs` with zero rewards (no PPO
    signal) and no entropy bonus, imitating `teacher`; the share of states where its most likely action is the
    teacher's, (before, after)."""
    agents, steps = 16, 16
    torch.manual_seed(0)
    ppo = PPO(
        PPOConfig(
            rollout_steps=steps, minibatches=2, epochs=2, learning_rate=3e-3, lr_schedule="constant",
            entropy_coef=0.0, imitation_coef=imitation_coef, imitation_until=1.0, target_kl=None,
            imitation_teacher=teacher,
        ),
        model or ModelConfig(actor_hidden=[64, 64], critic_hidden=[16]),
        SpeedConfig(), 180, TABLE.shape[0], discrete=True, device=torch.device("cpu"), seed=0,
    )  # fmt: skip
    ppo.resize(agents)
    ppo.setup_precision()
    labeller = (
        RuleTeacher(torch.device("cpu"))
        if teacher == "rule_policy"
        else BotTeacher(teacher, torch.device("cpu"), 180, TABLE.shape[0])
    )
    labels = labeller.actions(obs)

    def agreement() -> float:
        with torch.no_grad():
            logits = ppo.model.actor(ppo.obs_norm.normalize(obs))
        return float((logits.argmax(dim=1) == labels).float().mean())

    before = agreement()
    for update in range(updates):
        state, start = ppo.initial_state(), torch.zeros(agents, dtype=torch.bool)
        ppo.begin_rollout()
        for t in range(steps):
            first = (update * steps + t) * agents % len(obs)
            _, state = ppo.act(t, obs[first : first + agents], state, start)
            ppo.process_step(t, torch.zeros(agents), start, start, None, state)
        ppo.compute_returns(obs[:agents], state, start)
        ppo.update(progress=update / updates)
    return before, agreement()


def test_imitation_pulls_the_policy_to_rule_policys_choices_and_nothing_else_does() -> None:
    obs = _observations(16 * 16 * 8)
    before, after = _agreement_after_training(5.0, obs, updates=24)
    assert before < 0.1 and after > 0.6, (before, after)  # measured: 0.0 -> 0.71 (0.59 after 12 updates)
    plain_before, plain_after = _agreement_after_training(0.0, obs, updates=24)
    assert plain_after < 0.1, (plain_before, plain_after)  # zero rewards, no imitation: no pull to the teacher


def test_a_trained_bot_teaches_its_choices_to_an_attention_network() -> None:
    obs = _observations(16 * 16 * 8)
    bot = load_policy("pretrained", deterministic=True)
    labels = BotTeacher("pretrained", torch.device("cpu"), 180, TABLE.shape[0]).actions(obs)
    assert torch.equal(labels, bot.act(obs)[0])  # the bot's own greedy action, through its own normalizer
    assert float((labels == RuleTeacher(torch.device("cpu")).actions(obs)).float().mean()) < 0.5  # not RulePolicy's
    attention = ModelConfig(kind="attention", embed_size=16, attention_heads=2, actor_hidden=[64], critic_hidden=[16])
    before, after = _agreement_after_training(5.0, obs, updates=24, teacher="pretrained", model=attention)
    assert before < 0.1 and after > 0.5, (before, after)  # measured: 0.001 -> 0.76 (0.68 after 12 updates)


def test_imitation_refuses_settings_it_cannot_serve() -> None:
    with pytest.raises(ValueError, match="ppo.imitation_until"):
        PPOConfig(imitation_coef=1.0, imitation_until=0.0)
    with pytest.raises(ValueError, match="ppo.imitation_coef"):
        PPOConfig(imitation_coef=-1.0)
    model, speed, cpu = ModelConfig(actor_hidden=[8], critic_hidden=[8]), SpeedConfig(), torch.device("cpu")
    with pytest.raises(ValueError, match="env.action to 'discrete'"):
        PPO(PPOConfig(imitation_coef=1.0), model, speed, 180, 8, discrete=False, device=cpu, seed=0)
    with pytest.raises(ValueError, match="180-float observation"):
        PPO(PPOConfig(imitation_coef=1.0), model, speed, 96, 90, discrete=True, device=cpu, seed=0)
    bot = PPOConfig(imitation_coef=1.0, imitation_teacher="pretrained")
    with pytest.raises(ValueError, match="imitation_teacher='pretrained': the teacher reads 180-float"):
        PPO(bot, model, speed, 96, TABLE.shape[0], discrete=True, device=cpu, seed=0)
    with pytest.raises(ValueError, match="imitation_teacher='pretrained': the teacher acts on"):
        PPO(bot, model, speed, 180, 8, discrete=True, device=cpu, seed=0)
    with pytest.raises(ValueError, match="env.action to 'discrete'"):
        PPO(bot, model, speed, 180, 8, discrete=False, device=cpu, seed=0)
    with pytest.raises(FileNotFoundError):
        PPO(PPOConfig(imitation_coef=1.0, imitation_teacher="no/such.safetensors"), model, speed, 180,
            TABLE.shape[0], discrete=True, device=cpu, seed=0)  # fmt: skip
    with pytest.raises(ValueError, match="ppo.imitation_teacher"):
        PPOConfig(imitation_teacher=" ")


def test_training_with_imitation_logs_the_imitation_loss_until_its_weight_reaches_zero(tmp_path) -> None:
    from rocketrl.config import load_config
    from rocketrl.ppo.trainer import Trainer

    cfg = load_config(
        None,
        [
            "--env.num-arenas", "4", "--env.stepping", "serial", "--env.num-workers", "1",
            "--ppo.rollout-steps", "16", "--ppo.minibatches", "2", "--ppo.epochs", "1",
            "--model.actor-hidden", "32", "--model.critic-hidden", "32", "--run.device", "cpu",
            "--ppo.imitation-coef", "2.0", "--ppo.imitation-until", "0.75",
            "--run.timesteps", str(4 * 4 * 2 * 16), "--run.logdir", str(tmp_path), "--run.name", "imitate",
        ],
    )  # fmt: skip
    seen: list[dict[str, float]] = []

    class Recorder:
        def log_update(self, report) -> None:
            seen.append(dict(report.stats.values))

    trainer = Trainer(cfg)
    try:
        trainer.learn(Recorder())
    finally:
        trainer.close()
    assert len(seen) == 4  # each update at the progress after its rollout: 0.25, 0.5, 0.75, 1
    assert [round(s.get("imitation_coef", 0.0), 3) for s in seen] == [1.333, 0.667, 0.0, 0.0]
    assert all(s["imitation"] > 0 for s in seen[:2]) and all("imitation" not in s for s in seen[2:])
