"""More scripted opponents, of styles unlike RulePolicy's: two to measure how bots generalize, one team.

ShadowGoalie and BallChaser are kept out of every training preset: a bot never meets them while it learns, so
its results against them say how its play holds up against opponents it did not train on. Rotation
(`rocketrl.policy.rotation`) is a team opponent that takes turns at the ball; team presets train against it.
All read the same observation as every policy (blue-side frame, so they play either team) and drive through
RulePolicy's driving layer (`rule.drive_controls`: steering, boost, jumps, dodges, air control); only where they go
differs. Stateless and deterministic.

  * ShadowGoalie ("shadow_goalie"): a defender. It stays goal-side, on the line from its own goal to the
    ball 30% of the way out (never past y = -1800 in its own frame), facing the ball. It challenges only
    from goal-side: when it will reach the ball clearly first (400 uu ahead of any opponent, the ball short
    of the far third), when the ball is deep in its half and close, or when the ball enters its box; then
    it plays the ball as RulePolicy's attacker does. Beaten (the ball between it and its goal), it races
    back to the goal mouth. It keeps its boost topped up from pads in its own half while the ball is far.
  * BallChaser ("ball_chaser"): an attacker with no patience. It always drives at the ball (aiming a
    little behind it on the line from the opponent goal, so its hits tend goalward), boosts whenever it
    faces its target, and never goes for boost pads: it runs dry and plays on without.
"""

from __future__ import annotations

import torch

from rocketrl.env.obs import (
    CAR_BOOST,
    CAR_POS,
    MAX_TEAMMATES,
    NUM_OTHER_SLOTS,
    OTHER_DEMOLISHED,
    OTHER_PRESENT,
    OTHER_REL_POS,
    OTHER_SIZE,
    OTHERS,
    PADS,
)
from rocketrl.infra.compile_fallback import CompiledOrEager
from rocketrl.policy.base import PolicyState
from rocketrl.policy.rotation import rotation_controls
from rocketrl.policy.rule import (
    ATTACK,
    BOOST,
    DEFEND,
    SCALE,
    choose_target,
    clamp_field,
    drive_controls,
    predict_ball,
    unit,
    xy,
)
from rocketrl.sim.arena import BACK_WALL_Y, BOOST_PADS

_OWN_GOAL = (0.0, -BACK_WALL_Y)
_OPP_GOAL_Y = BACK_WALL_Y + 200.0


def shadow_goalie_target(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Where ShadowGoalie drives: (target [N, 3] uu in the agent's blue-side frame, mode [N] as in rule.py)."""
    n = obs.shape[0]
    car = obs[:, CAR_POS] * SCALE
    boost = obs[:, CAR_BOOST] * 100.0
    pred = predict_ball(obs)
    own = torch.tensor(_OWN_GOAL, dtype=obs.dtype, device=obs.device)
    to_own = unit(own - pred[:, :2])
    goal_side = ((car[:, :2] - pred[:, :2]) * to_own).sum(-1) > 0.0  # between the ball and its own goal
    my_dist = xy(pred - car).norm(dim=-1)
    others = obs[:, OTHERS].reshape(n, NUM_OTHER_SLOTS, OTHER_SIZE)
    opponents = others[:, MAX_TEAMMATES:]  # the opponent slots
    alive = (opponents[..., OTHER_PRESENT] > 0.5) & (opponents[..., OTHER_DEMOLISHED] < 0.5)  # present, not demolished
    opp_pos = car.unsqueeze(1) + opponents[..., OTHER_REL_POS] * SCALE
    opp_dist = xy(pred.unsqueeze(1) - opp_pos).norm(dim=-1).masked_fill(~alive, float("inf")).min(dim=1).values
    in_box = (pred[:, 0].abs() < 1300.0) & (pred[:, 1] < -3900.0)
    first_to_it = goal_side & (my_dist + 400.0 < opp_dist) & (pred[:, 1] < 1500.0)
    danger = in_box | (goal_side & (pred[:, 1] < -2500.0) & (my_dist < 2200.0))
    challenge = first_to_it | danger

    shadow = torch.zeros_like(pred)
    shadow[:, :2] = own + (pred[:, :2] - own) * 0.3
    shadow[:, 0] = shadow[:, 0].clamp(-1500.0, 1500.0)
    shadow[:, 1] = shadow[:, 1].clamp(-BACK_WALL_Y + 300.0, -1800.0)
    retreat = torch.zeros_like(pred)
    retreat[:, 1] = -BACK_WALL_Y + 300.0
    target = torch.where(goal_side.unsqueeze(-1), shadow, retreat)
    mode = torch.full_like(my_dist, DEFEND, dtype=torch.long)
    # A challenge plays the ball as RulePolicy's attacker would: from the side that sends it up the field.
    rule_target, rule_mode = choose_target(obs)
    target = torch.where(challenge.unsqueeze(-1), rule_target, target)
    mode = torch.where(challenge, rule_mode, mode)

    # Boost from its own half while the ball is far up the field.
    pads = torch.tensor(BOOST_PADS, dtype=obs.dtype, device=obs.device)[:, :3]
    active = (obs[:, PADS] > 0.5) & (pads[:, 1] < 0.0).unsqueeze(0)
    pad_dist = (pads.unsqueeze(0) - car.unsqueeze(1)).norm(dim=-1).masked_fill(~active, float("inf"))
    best, pad = pad_dist.min(dim=1)
    refuel = (boost < 50.0) & (pred[:, 1] > 500.0) & (best < 2500.0) & ~challenge
    target = torch.where(refuel.unsqueeze(-1), pads[pad], target)
    mode = torch.where(refuel, BOOST, mode)
    return clamp_field(target), mode


def shadow_goalie_controls(obs: torch.Tensor) -> torch.Tensor:
    """ShadowGoalie as one pure function: obs [N, 180] float32 -> controls [N, 8] float32."""
    return drive_controls(obs, *shadow_goalie_target(obs))


def ball_chaser_target(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Where BallChaser drives: (target [N, 3] uu in the agent's blue-side frame, mode [N], always ATTACK)."""
    car = obs[:, CAR_POS] * SCALE
    pred = predict_ball(obs)
    aim = torch.stack([pred[:, 0].clamp(-600.0, 600.0), torch.full_like(pred[:, 0], _OPP_GOAL_Y)], dim=-1)
    away = unit(pred[:, :2] - aim)  # from the opponent goal through the ball
    offset = (xy(pred - car).norm(dim=-1) * 0.15).clamp(max=250.0).unsqueeze(-1)
    target = pred.clone()
    target[:, :2] = pred[:, :2] + away * offset
    mode = torch.full_like(offset[:, 0], ATTACK, dtype=torch.long)
    return clamp_field(target), mode


def ball_chaser_controls(obs: torch.Tensor) -> torch.Tensor:
    """BallChaser as one pure function: obs [N, 180] float32 -> controls [N, 8] float32."""
    return drive_controls(obs, *ball_chaser_target(obs))


class _Scripted:
    """A scripted controls function as a Policy: act(obs [N, 180], None) -> (controls [N, 8], None)."""

    action_kind = "controls"
    name = "scripted"

    def __init__(self, function, seed: int = 0, compiled: bool = False) -> None:
        """seed: accepted like any policy's, changes nothing (no randomness). compiled: torch.compile."""
        self.seed = seed
        self._controls = CompiledOrEager(function, type(self).__name__) if compiled else function

    def initial_state(self, batch: int, device: torch.device | str) -> PolicyState:
        return None

    @torch.no_grad()
    def act(self, obs: torch.Tensor, state: PolicyState = None) -> tuple[torch.Tensor, PolicyState]:
        return self._controls(obs.float()), None


class ShadowGoalie(_Scripted):
    """The defensive shadowing goalie (see the module docstring)."""

    name = "shadow_goalie"

    def __init__(self, seed: int = 0, compiled: bool = False) -> None:
        super().__init__(shadow_goalie_controls, seed, compiled)


class BallChaser(_Scripted):
    """The boost-starved ball chaser (see the module docstring)."""

    name = "ball_chaser"

    def __init__(self, seed: int = 0, compiled: bool = False) -> None:
        super().__init__(ball_chaser_controls, seed, compiled)


class Rotation(_Scripted):
    """The rotating team: first man challenges, second supports, last man back shadows (rotation.py)."""

    name = "rotation"

    def __init__(self, seed: int = 0, compiled: bool = False) -> None:
        super().__init__(rotation_controls, seed, compiled)


SCRIPTED_OPPONENTS = {"shadow_goalie": ShadowGoalie, "ball_chaser": BallChaser, "rotation": Rotation}
"""Scripted opponents beside RulePolicy, by the name `load_policy`, `rocketrl eval` and `rocketrl select` accept."""
GENERALIZATION_OPPONENTS = ("shadow_goalie", "ball_chaser")
"""The scripted opponents no training preset meets."""
