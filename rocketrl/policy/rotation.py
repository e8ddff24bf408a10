"""Rotation: a scripted team that takes turns at the ball, as rotation bots of the community play.

Every step each car ranks its team's alive cars by how well placed they are to play the ball, the same way for
every teammate (all read the same ball point and the same positions, so they agree on the roles without
talking), and plays its role:

  * first man (rank 0): challenges, exactly as a lone RulePolicy would (its attack, defence and boost rules
    with its teammates left out of the observation, so it never yields the ball to them);
  * second man (the middle car of three): supports about SUPPORT_DISTANCE behind the ball toward its own goal,
    ready for the next touch;
  * last man back (the rearmost role of two or three): shadows between the ball and its own goal, on the line
    from the goal to the ball (half of the way out in 2v2, a quarter in 3v3, never far up the field).

The rank of a car is its distance to the ball point (the ball 0.3 s ahead) plus WRONG_SIDE_PENALTY when it
is on the far side of the ball from its own goal, so a car already goal-side takes the challenge and a car
that has just hit the ball past itself rotates back instead of turning to chase. Support roles with little
boost collect a pad close to their way, and never drive through the ball on the way back. A team of one plays
as RulePolicy. All driving (steering, boost, jumps, dodges, air control) is RulePolicy's (`rule.drive_controls`).
Stateless and deterministic; sees the field from the blue side like every policy, so it plays either team.
"""

from __future__ import annotations

import torch

from rocketrl.env.obs import (
    BALL_POS,
    BALL_VEL,
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
from rocketrl.policy.rule import (
    BOOST,
    DEFEND,
    GOALIE,
    SCALE,
    SUPPORT,
    around_ball,
    choose_target,
    clamp_field,
    drive_controls,
    unit,
)
from rocketrl.sim.arena import BACK_WALL_Y, BOOST_PADS

LOOKAHEAD = 0.3
"""Seconds: the ball point every teammate ranks against is the ball this far ahead (no gravity, no bounces)."""
WRONG_SIDE_PENALTY = 2500.0
"""uu added to the rank distance of a car more than 300 uu on the far side of the ball from its own goal."""
SUPPORT_DISTANCE = 1800.0
"""uu behind the ball (toward the own goal) where the second man waits."""
LAST_MAN_SHARE = {2: 0.5, 3: 0.25}
"""Share of the way from the own goal to the ball where the last man stands, by the number of alive cars."""
LAST_MAN_MAX_Y = {2: 0.0, 3: -2500.0}
"""uu: the last man never stands farther up the field (blue-side frame) than this, by alive cars."""
BALL_ROOM = 800.0
"""uu: the last man keeps at least this far from the ball toward its own goal (when the goal leaves room)."""

FIRST, SECOND, LAST = 0, 1, 2
"""Roles returned by `team_roles`."""

_OWN_GOAL = (0.0, -BACK_WALL_Y)


def without_teammates(obs: torch.Tensor) -> torch.Tensor:
    """obs [N, 180] with every teammate slot marked absent: the view of a car playing alone."""
    out = obs.clone()
    for slot in range(MAX_TEAMMATES):
        out[:, OTHERS.start + slot * OTHER_SIZE + OTHER_PRESENT] = 0.0
    return out


def ball_point(obs: torch.Tensor) -> torch.Tensor:
    """The ball LOOKAHEAD seconds ahead, [N, 3] uu in the blue-side frame, kept inside the field; the same
    for every car of a team (it does not depend on the car)."""
    ball, vel = obs[:, BALL_POS] * SCALE, obs[:, BALL_VEL] * SCALE
    return clamp_field(ball + vel * LOOKAHEAD)


def team_roles(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(role [N] int64: FIRST, SECOND or LAST; alive [N] int64: alive cars of the agent's team, itself included).

    Cars are ranked by `rank_distance`; ties are settled by x, seen alike by every teammate.
    """
    n = obs.shape[0]
    car = obs[:, CAR_POS] * SCALE
    others = obs[:, OTHERS].reshape(n, NUM_OTHER_SLOTS, OTHER_SIZE)[:, :MAX_TEAMMATES]
    present = (others[..., OTHER_PRESENT] > 0.5) & (others[..., OTHER_DEMOLISHED] < 0.5)  # [N, 2]
    mates = car.unsqueeze(1) + others[..., OTHER_REL_POS] * SCALE  # [N, 2, 3]
    point = ball_point(obs)
    mine = rank_distance(car, point) + 1e-2 * car[:, 0]
    theirs = rank_distance(mates, point.unsqueeze(1)) + 1e-2 * mates[..., 0]
    rank = ((theirs < mine.unsqueeze(1)) & present).sum(dim=1)
    alive = 1 + present.sum(dim=1)
    role = torch.where(rank == 0, FIRST, torch.where(rank == alive - 1, LAST, SECOND))
    return role.long(), alive.long()


def rank_distance(car: torch.Tensor, point: torch.Tensor) -> torch.Tensor:
    """How far a car [..., 3] is from playing the ball point [..., 3], uu: the distance in x, y plus
    WRONG_SIDE_PENALTY when the car is more than 300 uu on the far side of the ball from its own goal."""
    own = torch.tensor(_OWN_GOAL, dtype=car.dtype, device=car.device)
    to_own = unit(own - point[..., :2])
    beyond = ((car[..., :2] - point[..., :2]) * to_own).sum(-1)
    return (car[..., :2] - point[..., :2]).norm(dim=-1) + WRONG_SIDE_PENALTY * (beyond < -300.0)


def rotation_target(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Where each car of a rotation team drives: (target [N, 3] uu in the agent's blue-side frame, mode [N]
    as in rule.py)."""
    car = obs[:, CAR_POS] * SCALE
    boost = obs[:, CAR_BOOST] * 100.0
    role, alive = team_roles(obs)
    point = ball_point(obs)
    own = torch.tensor(_OWN_GOAL, dtype=obs.dtype, device=obs.device)
    to_own = unit(own - point[:, :2])

    support = point.clone()
    support[:, :2] = point[:, :2] + to_own * SUPPORT_DISTANCE
    support[:, 0] = support[:, 0] * 0.6
    support[:, 2] = 0.0
    share = torch.where(alive >= 3, LAST_MAN_SHARE[3], LAST_MAN_SHARE[2]).to(obs.dtype).unsqueeze(-1)
    max_y = torch.where(alive >= 3, LAST_MAN_MAX_Y[3], LAST_MAN_MAX_Y[2]).to(obs.dtype)
    last = torch.zeros_like(point)
    out = (point[:, :2] - own).norm(dim=-1, keepdim=True)  # the ball's distance from the own goal
    last[:, :2] = own + (point[:, :2] - own) * torch.minimum(share, (1.0 - BALL_ROOM / out.clamp_min(1.0)).clamp_min(0))
    last[:, 0] = last[:, 0].clamp(-1200.0, 1200.0)
    last[:, 1] = torch.minimum(last[:, 1].clamp_min(-BACK_WALL_Y + 300.0), max_y)
    target = torch.where((role == LAST).unsqueeze(-1), last, clamp_field(support))
    mode = torch.where(role == LAST, GOALIE, SUPPORT)
    # On the far side of the ball, a support role goes back by the far post, away from the ball's line.
    beyond = ((car[:, :2] - point[:, :2]) * to_own).sum(-1) < 0.0
    side = torch.where(point[:, 0].abs() > 200.0, -point[:, 0].sign(), car[:, 0].sign() + (car[:, 0] == 0))
    post = torch.stack([side * 900.0, torch.full_like(side, -BACK_WALL_Y + 300.0), torch.zeros_like(side)], dim=-1)
    target = torch.where(beyond.unsqueeze(-1), post, target)
    mode = torch.where(beyond, DEFEND, mode)

    # Support roles low on boost take an active pad close to their way.
    pads = torch.tensor(BOOST_PADS, dtype=obs.dtype, device=obs.device)  # [34, 4]
    pad_pos, big = pads[:, :3], pads[:, 3]
    via = (pad_pos.unsqueeze(0) - car.unsqueeze(1)).norm(dim=-1) + (pad_pos.unsqueeze(0) - target.unsqueeze(1)).norm(
        dim=-1
    )
    detour = via - (target - car).norm(dim=-1, keepdim=True) - 300.0 * big
    detour = detour.masked_fill(obs[:, PADS] < 0.5, float("inf"))
    best, pad = detour.min(dim=1)
    refuel = (boost < 40.0) & (best < 800.0) & (point[:, 1] > -2500.0)
    target = torch.where(refuel.unsqueeze(-1), pad_pos[pad], target)
    mode = torch.where(refuel, BOOST, mode)
    target = around_ball(target, car, point, torch.ones_like(refuel))

    first_target, first_mode = choose_target(without_teammates(obs))
    first = role == FIRST
    return torch.where(first.unsqueeze(-1), first_target, target), torch.where(first, first_mode, mode)


def rotation_controls(obs: torch.Tensor) -> torch.Tensor:
    """The rotation team as one pure function: obs [N, 180] float32 -> controls [N, 8] float32."""
    return drive_controls(obs, *rotation_target(obs))
