"""Imitation of a teacher early in training ("kickstarting"): the scripted RulePolicy, or a trained bot.

While `ppo.imitation_coef` > 0, each rollout step also records which lookup-table action the teacher
(`ppo.imitation_teacher`; RulePolicy by default) would take in the learner's place (from the same raw
observation), and the update adds `coef(progress) * -log pi(teacher action | obs)` to the PPO loss, the weight
falling linearly from `ppo.imitation_coef` to 0 at `ppo.imitation_until` of training. The policy so starts from
the scripted bot's driving, jumps and dodges, and reinforcement learning alone shapes it afterwards; a policy
learnt from scratch drops jumping in its first million steps, before any dodge pays
(docs/results/learning-experiments.md).

RulePolicy is stateless (its previous controls are part of the observation), so it can label any state the
learner reaches, and it reads the default 180-float observation: imitation needs that observation and the
lookup-table actions. A bot teacher (`BotTeacher`) labels each state with its greedy action, read through its
own frozen observation normalizer; it must be feed-forward (no LSTM state to carry) and act on the same
observation and lookup table as the learner. It hands a trained bot's play to a network of another shape (an
MLP's to an entity attention network), which copying weights (`run.init_from`) cannot.
"""

from __future__ import annotations

import torch

from rocketrl.env.actions import lookup_table
from rocketrl.env.obs import CAR_ON_GROUND, OBS_SIZE
from rocketrl.policy.load import RULE_POLICY
from rocketrl.policy.rule import RulePolicy

RULE_OBS_SIZE = OBS_SIZE
"""The observation RulePolicy reads (the default observation builder's)."""

CONTROL_WEIGHTS = (1.0, 1.0, 1.0, 1.0, 1.0, 4.0, 1.0, 0.25)
"""Weights of the squared differences of throttle, steer, pitch, yaw, roll, jump, boost and handbrake when a
control vector is matched to its nearest table row: the jump must match first (it starts jumps and dodges),
the handbrake least (the table ties it to a dodge's direction)."""


def nearest_table_actions(controls: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Index [N] (int64) of the row of `table` [K, 8] nearest to each control vector of `controls` [N, 8],
    by the squared differences weighted by CONTROL_WEIGHTS."""
    weights = torch.tensor(CONTROL_WEIGHTS, dtype=controls.dtype, device=controls.device)
    distance = ((controls.unsqueeze(1) - table.unsqueeze(0)).square() * weights).sum(-1)  # [N, K]
    return distance.argmin(dim=1)


class RuleTeacher:
    """RulePolicy's choice among the lookup table's actions: actions(obs [B, 180] raw) -> [B] int64."""

    def __init__(self, device: torch.device, compiled: bool = False) -> None:
        self.rule = RulePolicy(compiled=compiled)
        self.table = lookup_table().to(device)

    @torch.no_grad()
    def actions(self, obs: torch.Tensor) -> torch.Tensor:
        """The table index of RulePolicy's controls in each of the B states of obs [B, 180] (raw, as the
        learner sees them). On the ground pitch and roll are dropped (they do nothing there, and the ground
        rows hold 0), so a car driving on a slope keeps a ground action."""
        controls, _ = self.rule.act(obs)
        controls = controls.to(self.table.device).clone()
        grounded = (obs[:, CAR_ON_GROUND] > 0.5).to(self.table.device) & (controls[:, 5] < 0.5)
        controls[grounded, 2] = 0.0
        controls[grounded, 4] = 0.0
        return nearest_table_actions(controls, self.table)


class BotTeacher:
    """A trained bot's greedy choice: actions(obs [B, O] raw) -> [B] int64 lookup-table indices."""

    def __init__(self, spec: str, device: torch.device, obs_size: int, num_actions: int) -> None:
        from rocketrl.policy.load import policy_from_checkpoint

        self.policy = policy_from_checkpoint(spec, device=device, deterministic=True)
        model = self.policy.model
        where = f"ppo.imitation_teacher={spec!r}"
        if not model.discrete or model.num_actions != num_actions:
            raise ValueError(
                f"{where}: the teacher acts on {model.num_actions} {'discrete' if model.discrete else 'continuous'} "
                f"actions, the learner on {num_actions} lookup-table actions; give a teacher trained with env.action "
                "discrete"
            )
        if model.obs_size != obs_size:
            raise ValueError(
                f"{where}: the teacher reads {model.obs_size}-float observations, the learner's env builds "
                f"{obs_size}; give a teacher trained on the same observation builder"
            )
        if model.recurrent:
            raise ValueError(
                f"{where}: the teacher has an LSTM, whose state a label cannot carry; give a feed-forward teacher"
            )

    @torch.no_grad()
    def actions(self, obs: torch.Tensor) -> torch.Tensor:
        """The teacher's greedy table index in each of the B states of obs [B, O] (raw, as the learner sees them)."""
        action, _ = self.policy.act(obs.float())
        return action.long()


def make_teacher(
    spec: str, device: torch.device, obs_size: int, num_actions: int, discrete: bool, compiled: bool = False
) -> RuleTeacher | BotTeacher:
    """The teacher that `ppo.imitation_teacher` names ('rule_policy'/'rule' or a bot), after checking that it can
    label this learner's states (ValueError naming the setting otherwise)."""
    if not discrete:
        raise ValueError(
            f"ppo.imitation_coef > 0 needs the lookup-table actions (the teacher {spec!r} labels each state with one "
            "of their rows); set env.action to 'discrete' or ppo.imitation_coef to 0"
        )
    if spec not in (RULE_POLICY, "rule"):
        return BotTeacher(spec, device, obs_size, num_actions)
    if obs_size != RULE_OBS_SIZE:
        raise ValueError(
            f"ppo.imitation_coef > 0 needs the default {RULE_OBS_SIZE}-float observation that RulePolicy reads, "
            f"but the env builds {obs_size} floats; use the default observation or set ppo.imitation_coef to 0"
        )
    return RuleTeacher(device, compiled=compiled)


def imitation_weight(coef: float, until: float, progress: float) -> float:
    """The imitation loss weight at `progress` in [0, 1] of training: coef falling linearly to 0 at `until`
    (0 from there on, and always 0 when coef or until is 0)."""
    if coef <= 0.0 or until <= 0.0 or progress >= until:
        return 0.0
    return coef * (1.0 - progress / until)
