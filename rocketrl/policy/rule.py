"""RulePolicy: a scripted soccar bot acting on batched observations, for evaluation and as an opponent.

Every agent sees the field from the blue side (it defends -y and attacks +y), so the same rules play
either team and any team size. All decisions are tensor ops over the agent batch; the policy keeps
no state (its previous controls are part of the observation) and has no randomness.

Behaviour, per agent:
  * Roles: among present, non-demolished teammates only the one closest to the ball attacks; the
    second closest supports from about 2000 uu behind the ball, the third keeps goal; a car lined up
    close behind the ball still takes it. Equal distances are settled by x, seen alike by both cars.
  * Attack: aim at a point behind the (briefly predicted) ball on the line from the opponent goal
    through the ball, offset in proportion to the distance (more when the car is off the shot line,
    never past a wall), so the car arrives from the side that sends the ball at the goal. When the
    ball is close in front and lined up, drive straight at it.
  * Defend: when the ball is between the car and its own goal, or an opponent is much closer to the
    ball, fall back to a point between the ball and the own goal, near the goal (with the ball deep
    in the opponent half and no opponent closer, regroup 1800 uu behind the ball on that line).
  * A path that would run through the ball detours around it on the car's side.
  * Boost: with little boost and the ball far and not threatening, pick up the best active pad.
  * Driving: proportional steering damped by the yaw rate, handbrake for sharp turns, braking when
    the target lies inside the turning circle, boost on straights; jumps for balls within reach in
    the air and forward dodges into balls close in front (jump, release, then jump again with the
    stick toward the ball); rights itself in the air.
"""

from __future__ import annotations

import torch

from rocketrl.env.obs import (
    BALL_IN_CAR_FRAME,
    BALL_POS,
    BALL_VEL,
    BALL_VEL_IN_CAR_FRAME,
    CAR_ANG_VEL,
    CAR_BOOST,
    CAR_FORWARD,
    CAR_HAS_FLIP,
    CAR_ON_GROUND,
    CAR_POS,
    CAR_UP,
    CAR_VEL,
    NUM_OTHER_SLOTS,
    OTHER_DEMOLISHED,
    OTHER_PRESENT,
    OTHER_REL_POS,
    OTHER_SIZE,
    OTHERS,
    PADS,
    PREV_JUMP,
)
from rocketrl.infra.compile_fallback import CompiledOrEager
from rocketrl.policy.base import PolicyState
from rocketrl.sim.arena import BACK_WALL_Y, BALL_RADIUS, BOOST_PADS, SIDE_WALL_X

SCALE = 2300.0
"""Observation positions and velocities are uu (and uu/s) divided by this."""

ATTACK, DEFEND, SUPPORT, GOALIE, BOOST = 0, 1, 2, 3, 4
"""Modes returned by `choose_target`."""

_GRAVITY = 650.0
_OPP_GOAL_Y = BACK_WALL_Y + 200.0
_OWN_GOAL_Y = -BACK_WALL_Y
_FIELD_X = SIDE_WALL_X - 200.0
_FIELD_Y = BACK_WALL_Y - 200.0


def unit(v: torch.Tensor) -> torch.Tensor:
    """v [..., D] scaled to unit length (zero vectors stay near zero)."""
    return v / v.norm(dim=-1, keepdim=True).clamp_min(1e-6)


def xy(v: torch.Tensor) -> torch.Tensor:
    """v [..., 3] with z set to 0."""
    return torch.cat([v[..., :2], torch.zeros_like(v[..., 2:])], dim=-1)


def to_car_frame(v: torch.Tensor, forward: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """World vectors v [N, 3] as (forward, left, up) components of each car's frame [N, 3]."""
    left = torch.cross(up, forward, dim=-1)
    return torch.stack([(v * forward).sum(-1), (v * left).sum(-1), (v * up).sum(-1)], dim=-1)


def clamp_field(p: torch.Tensor) -> torch.Tensor:
    """Points [N, 3] clamped inside the field (x, y); z kept."""
    x = p[:, 0].clamp(-_FIELD_X, _FIELD_X)
    y = p[:, 1].clamp(-_FIELD_Y, _FIELD_Y)
    return torch.stack([x, y, p[:, 2]], dim=-1)


def predict_ball(obs: torch.Tensor) -> torch.Tensor:
    """The ball [N, 3] (uu, blue-side frame) a short time ahead, no bounces: the time grows with the
    car's distance to it, up to 1 s, and the point is kept inside the field."""
    ball, ball_vel = obs[:, BALL_POS] * SCALE, obs[:, BALL_VEL] * SCALE
    car, vel = obs[:, CAR_POS] * SCALE, obs[:, CAR_VEL] * SCALE
    dist_now = (ball - car).norm(dim=-1)
    t = (dist_now / (vel.norm(dim=-1) + 1000.0)).clamp(0.0, 1.0).unsqueeze(-1)
    pred = ball + ball_vel * t
    pred_z = (ball[:, 2:3] + ball_vel[:, 2:3] * t - 0.5 * _GRAVITY * t * t).clamp_min(BALL_RADIUS)
    return clamp_field(torch.cat([pred[:, :2], pred_z], dim=-1))


def choose_target(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Where each agent drives: (target [N, 3] in uu in the agent's blue-side frame, mode [N] int64).

    The mode is ATTACK, DEFEND, SUPPORT, GOALIE or BOOST (module constants).
    """
    n, device = obs.shape[0], obs.device
    ball, ball_vel = obs[:, BALL_POS] * SCALE, obs[:, BALL_VEL] * SCALE
    car = obs[:, CAR_POS] * SCALE
    boost = obs[:, CAR_BOOST] * 100.0
    others = obs[:, OTHERS].reshape(n, NUM_OTHER_SLOTS, OTHER_SIZE)
    alive = (others[..., OTHER_PRESENT] > 0.5) & (others[..., OTHER_DEMOLISHED] < 0.5)  # [N, 5]
    other_pos = car.unsqueeze(1) + others[..., OTHER_REL_POS] * SCALE  # [N, 5, 3]

    pred = predict_ball(obs)

    # Roles: rank by distance to the ball among alive teammates (ties broken by x, seen alike by both).
    my_key = xy(pred - car).norm(dim=-1) + 1e-2 * car[:, 0]
    mate_key = xy(pred.unsqueeze(1) - other_pos[:, :2]).norm(dim=-1) + 1e-2 * other_pos[:, :2, 0]
    rank = ((mate_key < my_key.unsqueeze(1)) & alive[:, :2]).sum(dim=1)
    opp_dist = xy(pred.unsqueeze(1) - other_pos[:, 2:]).norm(dim=-1).masked_fill(~alive[:, 2:], float("inf"))
    my_dist = xy(pred - car).norm(dim=-1)

    # Attack: behind the ball on the line from the opponent goal through it.
    aim = torch.stack([pred[:, 0].clamp(-350.0, 350.0), torch.full_like(pred[:, 0], _OPP_GOAL_Y)], dim=-1)
    away = unit(pred[:, :2] - aim)  # from the goal through the ball
    alignment = (unit(pred[:, :2] - car[:, :2]) * -away).sum(-1)  # 1: the car is right behind the shot line
    miss = torch.acos(alignment.clamp(-1.0, 1.0))  # radians between the approach and the shot line
    # Keep the point inside the field by shortening the offset (a ball at a wall is taken as it lies).
    room_x = (_FIELD_X - pred[:, 0] * away[:, 0].sign()) / away[:, 0].abs().clamp_min(1e-3)
    room_y = (_FIELD_Y - pred[:, 1] * away[:, 1].sign()) / away[:, 1].abs().clamp_min(1e-3)
    room = torch.minimum(room_x, room_y).clamp_min(0.0)
    offset = torch.minimum(my_dist * (0.2 + 1.2 * miss), room).clamp(max=1600.0).unsqueeze(-1)
    attack = pred.clone()
    attack[:, :2] = pred[:, :2] + away * offset
    attack = clamp_field(attack)

    # Defence: the ball between the car and its own goal, or an opponent much closer to the ball.
    own = torch.tensor([0.0, _OWN_GOAL_Y], device=device)
    to_own = unit(own - pred[:, :2])
    beyond = ((car[:, :2] - pred[:, :2]) * to_own).sum(-1)  # < 0: the car is on the far side of the ball
    wrong_side = beyond < -300.0
    beaten = (opp_dist.min(dim=1).values < 0.5 * my_dist) & (my_dist > 1500.0)
    defend = torch.zeros_like(pred)
    defend[:, :2] = own + (pred[:, :2] - own) * 0.25
    defend[:, 0] = defend[:, 0].clamp(-700.0, 700.0)
    defend[:, 1] = defend[:, 1].clamp(-BACK_WALL_Y + 300.0, -3200.0)
    # With the ball deep in the opponent half and no opponent ahead, regroup behind it instead.
    regroup = clamp_field(torch.cat([pred[:, :2] + to_own * 1800.0, pred[:, 2:]], dim=-1))
    regroup_ok = (pred[:, 1] > 500.0) & ~beaten
    defend = torch.where(regroup_ok.unsqueeze(-1), regroup, defend)

    support = torch.zeros_like(pred)
    support[:, :2] = pred[:, :2] + to_own * 2000.0
    support[:, 0] = support[:, 0] * 0.6
    support = clamp_field(support)
    goalie = torch.zeros_like(pred)
    goalie[:, :2] = own + (pred[:, :2] - own) * 0.1
    goalie[:, 1] = goalie[:, 1].clamp(max=-4400.0)

    # The second and third car still take a ball right in front of them when lined up.
    lined_up = (beyond > 0.0) & (my_dist < 700.0)
    attacker = (rank == 0) | lined_up
    mode = torch.where(rank >= 2, GOALIE, SUPPORT)
    mode = torch.where(attacker, torch.where(wrong_side | beaten, DEFEND, ATTACK), mode)
    target = torch.where((mode == ATTACK).unsqueeze(-1), attack, support)
    target = torch.where((mode == DEFEND).unsqueeze(-1), defend, target)
    target = torch.where((mode == GOALIE).unsqueeze(-1), goalie, target)

    # Boost: low on boost, the ball far and not threatening -> the active pad with the best detour.
    pads = torch.tensor(BOOST_PADS, dtype=obs.dtype, device=device)  # [34, 4]
    pad_pos, big = pads[:, :3], pads[:, 3]
    active = obs[:, PADS] > 0.5
    via = (pad_pos.unsqueeze(0) - car.unsqueeze(1)).norm(dim=-1) + (pad_pos.unsqueeze(0) - target.unsqueeze(1)).norm(
        dim=-1
    )
    detour = via - (target - car).norm(dim=-1, keepdim=True) - 400.0 * big
    detour = detour.masked_fill(~active, float("inf"))
    best, pad = detour.min(dim=1)
    threat = (pred[:, 1] < -2500.0) | ((ball_vel[:, 1] < -800.0) & (ball[:, 1] < 0.0))
    far = torch.where(mode == ATTACK, my_dist > 2500.0, my_dist > 1500.0)
    want = (boost < 30.0) & far & ~threat & (best < 1200.0) & (mode != GOALIE)
    target = torch.where(want.unsqueeze(-1), pad_pos[pad], target)
    mode = torch.where(want, BOOST, mode)

    # Never drive through the ball on the way: detour around it on the car's side of the path.
    target = around_ball(target, car, pred, (mode != ATTACK) | (offset[:, 0] > 300.0))
    return target, mode


def around_ball(target: torch.Tensor, car: torch.Tensor, ball: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """target [N, 3] (uu), or a point 450 uu beside the ball [N, 3] on the car's [N, 3] side of the path where
    the straight path would run through the ball and `allowed` [N] bool."""
    path = xy(target - car)
    path_len = path.norm(dim=-1).clamp_min(1.0)
    along = (xy(ball - car) * path).sum(-1) / path_len
    perp = xy(car - ball) - unit(path) * (xy(car - ball) * unit(path)).sum(-1, keepdim=True)
    side = unit(perp + torch.stack([-path[:, 1], path[:, 0], torch.zeros_like(path_len)], -1) * 1e-4)
    blocked = (perp.norm(dim=-1) < 250.0) & (along > 150.0) & (along < path_len - 150.0) & allowed
    around = clamp_field(ball + side * 450.0)
    return torch.where(blocked.unsqueeze(-1), around, target)


class RulePolicy:
    """The scripted bot as a Policy: act(obs [N, 180], None) -> (controls [N, 8] float32, None)."""

    action_kind = "controls"

    def __init__(self, seed: int = 0, compiled: bool = False) -> None:
        """seed: accepted like any policy's; the rules involve no randomness, so it changes nothing.
        compiled: run the rules through torch.compile (about 10x faster on a CPU, where the ~1,500 small
        ops of one call cost more than their arithmetic; the first call compiles for about 30 s). On a
        compile failure it warns once and stays eager."""
        self.seed = seed
        self._controls = CompiledOrEager(rule_controls, "RulePolicy") if compiled else rule_controls

    @property
    def compiled(self) -> bool:
        """True while the rules run through torch.compile (False if asked not to, or after a failure)."""
        return isinstance(self._controls, CompiledOrEager) and self._controls.active

    def initial_state(self, batch: int, device: torch.device | str) -> PolicyState:
        return None

    @torch.no_grad()
    def act(self, obs: torch.Tensor, state: PolicyState = None) -> tuple[torch.Tensor, PolicyState]:
        """obs [N, 180] -> controls [N, 8]: throttle, steer, pitch, yaw, roll in [-1, 1]; jump, boost,
        handbrake in {0, 1}."""
        return self._controls(obs.float()), None


def rule_controls(obs: torch.Tensor) -> torch.Tensor:
    """The rules as one pure function: obs [N, 180] float32 -> controls [N, 8] float32."""
    target, mode = choose_target(obs)
    return drive_controls(obs, target, mode)


def drive_controls(obs: torch.Tensor, target: torch.Tensor, mode: torch.Tensor) -> torch.Tensor:
    """Driving toward target [N, 3] (uu, blue-side frame) in mode [N] (ATTACK, DEFEND, SUPPORT, GOALIE or
    BOOST): steering, throttle, boost, jumps and dodges, air control -> controls [N, 8] float32."""
    ball = obs[:, BALL_POS] * SCALE
    car, vel = obs[:, CAR_POS] * SCALE, obs[:, CAR_VEL] * SCALE
    ang_vel = obs[:, CAR_ANG_VEL] * 5.5
    forward, up = obs[:, CAR_FORWARD], obs[:, CAR_UP]
    on_ground, has_flip = obs[:, CAR_ON_GROUND] > 0.5, obs[:, CAR_HAS_FLIP] > 0.5
    prev_jump = obs[:, PREV_JUMP] > 0.5
    ball_local, rel_vel = obs[:, BALL_IN_CAR_FRAME] * SCALE, obs[:, BALL_VEL_IN_CAR_FRAME] * SCALE
    left = torch.cross(up, forward, dim=-1)
    speed = (vel * forward).sum(-1)
    closing = -rel_vel[:, 0]

    # Lined-up ball close in front: drive straight at it instead of the offset point.
    to_goal = unit(torch.stack([-ball[:, 0], _OPP_GOAL_Y - ball[:, 1]], dim=-1))
    approach = unit(ball[:, :2] - car[:, :2])
    lined = (approach * to_goal).sum(-1) > 0.5
    ball_angle = torch.atan2(ball_local[:, 1], ball_local[:, 0])
    straight = (mode == ATTACK) & lined & (ball_local[:, 0] > 0) & (ball_local[:, 0] < 900.0)
    straight &= ball_angle.abs() < 0.35
    local = to_car_frame(target - car, forward, up)
    angle = torch.where(straight, ball_angle, torch.atan2(local[:, 1], local[:, 0]))
    dist = torch.where(straight, ball_local[:, :2].norm(dim=-1), local[:, :2].norm(dim=-1))

    # Steering: proportional, damped by the yaw rate to keep it from oscillating.
    yaw_rate = (ang_vel * up).sum(-1)
    steer = (3.0 * angle - 0.25 * yaw_rate).clamp(-1.0, 1.0)
    handbrake = on_ground & (angle.abs() > 1.4) & (speed > 300.0)

    # Waiting at a defensive spot: slow down and face the ball.
    parked = (mode != ATTACK) & (mode != BOOST) & (dist < 500.0)
    steer = torch.where(parked, (3.0 * ball_angle).clamp(-1.0, 1.0), steer)
    # A target inside the turning circle at this speed cannot be reached: brake to tighten the turn.
    radius = 120.0 + 0.15 * speed.abs() + 1.4e-4 * speed * speed
    side = torch.where(straight, ball_local[:, 1], local[:, 1]).abs()
    ahead = torch.where(straight, ball_local[:, 0], local[:, 0])
    inside = ahead.square() + (side - radius).square() < radius.square()
    throttle = torch.where(inside & (speed > 500.0), -1.0, 1.0)
    throttle = torch.where(parked, torch.where(speed > 500.0, -1.0, (ball_angle.abs() > 0.5) * 0.4), throttle)
    use_boost = (angle.abs() < 0.3) & (speed < 2200.0) & ~parked & (forward[:, 2] > -0.5)
    use_boost &= (mode == ATTACK) | (dist > 1500.0)

    # Jumps: a ball in the air within reach, or a lined-up ball close in front (for a dodge).
    height = ball_local[:, 2]
    reach_time = ((ball_local[:, 0] - 120.0) / closing.clamp_min(300.0)).clamp_min(0.0)
    aerial = (height > 160.0) & (height < 420.0) & (ball_local[:, 1].abs() < 180.0) & (ball_local[:, 0] > -40.0)
    aerial &= reach_time < 0.45
    shot = (height < 160.0) & (ball_local[:, 1].abs() < 140.0) & (ball_local[:, 0] > 0.0) & (reach_time < 0.22)
    shot &= (mode == ATTACK) & lined
    start = on_ground & (aerial | shot) & (forward[:, 2].abs() < 0.5)
    rising = (vel * up).sum(-1) > 100.0
    hold = ~on_ground & prev_jump & (height > 100.0) & rising & has_flip
    near = ball_local.norm(dim=-1) < 330.0
    dodge = ~on_ground & ~prev_jump & has_flip & near & (ball_local[:, 0] > -50.0)
    jump = start | hold | dodge

    # In the air: level the car and turn toward the target; a dodge points the stick at the ball.
    pitch = (-2.0 * forward[:, 2]).clamp(-1.0, 1.0)
    roll = (2.0 * left[:, 2]).clamp(-1.0, 1.0)
    yaw = steer
    direction = unit(ball_local[:, :2])
    pitch = torch.where(dodge, -direction[:, 0], pitch)
    yaw = torch.where(dodge, direction[:, 1], yaw)
    roll = torch.where(dodge, torch.zeros_like(roll), roll)
    # Upside down on the floor: tap jump to roll back onto the wheels.
    stuck = ~on_ground & (up[:, 2] < -0.3) & (car[:, 2] < 120.0)
    jump = torch.where(stuck, ~prev_jump, jump)

    controls = torch.stack(
        [throttle, steer, pitch, yaw, roll, jump.float(), use_boost.float(), handbrake.float()], dim=-1
    )
    return controls.float()
