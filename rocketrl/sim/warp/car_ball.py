"""A car's hitbox against the ball, as RocketSim's Bullet finds and answers it, plus Rocket League's extra hit.

Detection: Bullet meets a sphere and a box with GJK on their margin-less cores, then moves the closest points
out by the margins. The box's core is HITBOX_CORE and its margin HITBOX_MARGIN, so the box Bullet collides
has edges and corners rounded by 1.93 uu; the sphere's core is its centre. A point is made once the gap is
under the car's contact breaking threshold (CONTACT_REACH, 2.03 uu), before the two touch; a ball centre
inside the core box takes the nearest face (Bullet's penetration solver).

RocketSim's contact callback runs for the point: it counts as a touch, and at most every other tick it adds
the extra hit velocity to the ball at the end of the tick (Ball::_OnHit, from the velocities before this
tick's forces). Response, as Bullet's sequential impulse solver with RocketSim's car-ball material
(restitution 0, friction 2): a normal impulse that stops the approach (whatever the gap, as RocketSim's
Bullet sets up contacts), a penetration recovered by moving both bodies (split impulse, 80% per tick), one
friction direction along the sliding velocity within 2 x the normal impulse; SOLVER_ITERATIONS sweeps.
Bullet keeps the point from tick to tick and warm-starts it, and solves it with the car's other contacts;
this solves the pair alone, afresh each tick.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.car_arena_box import CONTACT_REACH, SOLVER_ITERATIONS, SPLIT_ERP, inv_inertia_world, tangent_of
from rocketrl.sim.warp.car_car_box import turn
from rocketrl.sim.warp.collisions import BALL_INV_INERTIA
from rocketrl.sim.warp.constants import (
    BALL_CAR_EXTRA_FORWARD_SCALE,
    BALL_CAR_EXTRA_MAX_DELTA,
    BALL_CAR_EXTRA_Z_SCALE,
    BALL_MASS,
    BALL_RADIUS,
    CAR_MASS,
    CARBALL_FRICTION,
    GRAVITY_Z,
    HITBOX_CORE,
    HITBOX_MARGIN,
    HITBOX_OFFSET,
    TICK_TIME,
    extra_impulse_factor,
)
from rocketrl.sim.warp.layout import E_TOUCHED, F_FORCE_DV, F_TORQUE_DW, I_LAST_HIT_TICK, SimState

BALL_REACH = wp.constant(60.2535 + 43.3497 + 19.32955 + 91.25 + 2.0334)
"""Centre distance (uu) beyond which the ball cannot reach the hitbox (the sum of its half extents, the
ball's radius and the threshold: a cheap bound)."""


@wp.func
def rounded_box_gap(local: wp.vec3):
    """The ball centre at `local` (hitbox axes, from its centre) against the rounded box: (gap (uu) between
    the ball's and the box's surfaces, unit normal from the box towards the ball in hitbox axes, the point
    of the core box the normal leaves from)."""
    core = HITBOX_CORE
    clamped = wp.vec3(
        wp.clamp(local[0], -core[0], core[0]),
        wp.clamp(local[1], -core[1], core[1]),
        wp.clamp(local[2], -core[2], core[2]),
    )
    out = local - clamped
    d = wp.length(out)
    if d > 0.0:
        return d - HITBOX_MARGIN - BALL_RADIUS, out / d, clamped
    # The centre inside the core: leave through the nearest face.
    axis = int(0)  # noqa: UP018 (a variable for Warp)
    room = core[0] - wp.abs(local[0])
    for k in range(1, 3):
        if core[k] - wp.abs(local[k]) < room:
            room = core[k] - wp.abs(local[k])
            axis = k
    n = wp.vec3(0.0)
    sign = float(1.0)  # noqa: UP018 (a variable for Warp)
    if local[axis] < 0.0:
        sign = -1.0
    n[axis] = sign
    face = local
    face[axis] = sign * core[axis]
    return -room - HITBOX_MARGIN - BALL_RADIUS, n, face


@wp.func
def car_ball_contact(s: SimState, a: int, c: int, tick: int):
    """Car c against the ball for one tick (module docstring)."""
    q = s.car_rot[a, c]
    cp = s.car_pos[a, c]
    centre = cp + wp.quat_rotate(q, HITBOX_OFFSET)
    bp = s.ball_pos[a]
    if wp.length(bp - centre) > BALL_REACH:
        return
    gap, n_local, core_point = rounded_box_gap(wp.quat_rotate_inv(q, bp - centre))
    if gap >= CONTACT_REACH:
        return
    resolve_car_ball(s, a, c, tick, q, cp, centre, bp, gap, n_local, core_point)


@wp.func(inline=False)  # large: kept out of the step kernel, which calls it only for a car at the ball
def resolve_car_ball(
    s: SimState,
    a: int,
    c: int,
    tick: int,
    q: wp.quat,
    cp: wp.vec3,
    centre: wp.vec3,
    bp: wp.vec3,
    gap: float,
    n_local: wp.vec3,
    core_point: wp.vec3,
):
    """car_ball_contact's work for a car within reach of the ball: the callback, then the impulses."""
    n = wp.quat_rotate(q, n_local)  # from the car towards the ball
    on_car = centre + wp.quat_rotate(q, core_point) + n * HITBOX_MARGIN
    on_ball = bp - n * BALL_RADIUS
    s.ev_car[a, c, E_TOUCHED] = 1
    s.ev_last_touch[a] = c
    cv = s.car_vel[a, c]
    cw = s.car_ang[a, c]
    bv = s.ball_vel[a]
    bw = s.ball_ang[a]
    force_dv = wp.vec3(s.car_f[a, c, F_FORCE_DV], s.car_f[a, c, F_FORCE_DV + 1], s.car_f[a, c, F_FORCE_DV + 2])
    cw_pre = cw - wp.vec3(s.car_f[a, c, F_TORQUE_DW], s.car_f[a, c, F_TORQUE_DW + 1], s.car_f[a, c, F_TORQUE_DW + 2])

    # Extra hit velocity (RocketSim's Ball::_OnHit), from the bodies' velocities before this tick's forces.
    last = s.car_i[a, c, I_LAST_HIT_TICK]
    if tick > last + 1 or last > tick:
        s.car_i[a, c, I_LAST_HIT_TICK] = tick
        ball_pre = bv - wp.vec3(0.0, 0.0, GRAVITY_Z * TICK_TIME)
        rel_speed = wp.min(wp.length(ball_pre - (cv - force_dv)), BALL_CAR_EXTRA_MAX_DELTA)
        if rel_speed > 0.0:
            fwd = wp.quat_rotate(q, wp.vec3(1.0, 0.0, 0.0))
            rel = bp - cp
            hit = wp.normalize(wp.vec3(rel[0], rel[1], rel[2] * BALL_CAR_EXTRA_Z_SCALE))
            hit = wp.normalize(hit - fwd * (wp.dot(hit, fwd) * (1.0 - BALL_CAR_EXTRA_FORWARD_SCALE)))
            s.ball_cache[a] = s.ball_cache[a] + hit * (rel_speed * extra_impulse_factor(rel_speed))

    r1 = on_car - cp
    r2 = on_ball - bp
    inv_mass = 1.0 / CAR_MASS + 1.0 / BALL_MASS
    rn1 = wp.cross(r1, n)
    rn2 = wp.cross(r2, n)
    inv_n = 1.0 / (inv_mass + wp.dot(rn1, inv_inertia_world(q, rn1)) + wp.dot(rn2, rn2) * BALL_INV_INERTIA)
    approach = wp.dot(n, bv + wp.cross(bw, r2) - cv - wp.cross(cw, r1))
    rhs = -approach * inv_n  # restitution 0: stop the approach
    push_rhs = float(0.0)  # noqa: UP018 (a variable for Warp)
    if gap < 0.0:
        push_rhs = -gap * SPLIT_ERP / TICK_TIME * inv_n
    slip = cv + wp.cross(cw, r1) - bv - wp.cross(bw, r2)
    t = tangent_of(n, slip)
    rt1 = wp.cross(r1, t)
    rt2 = wp.cross(r2, t)
    inv_t = 1.0 / (inv_mass + wp.dot(rt1, inv_inertia_world(q, rt1)) + wp.dot(rt2, rt2) * BALL_INV_INERTIA)
    # Bullet's friction target: the angular part without this tick's torques.
    rhs_t = -(wp.dot(t, cv - bv) + wp.dot(rt1, cw_pre) - wp.dot(rt2, bw)) * inv_t
    applied = float(0.0)  # noqa: UP018 (a variable for Warp)
    applied_t = float(0.0)  # noqa: UP018 (a variable for Warp)
    applied_push = float(0.0)  # noqa: UP018 (a variable for Warp)
    dv1 = wp.vec3(0.0)
    dw1 = wp.vec3(0.0)
    dv2 = wp.vec3(0.0)
    dw2 = wp.vec3(0.0)
    pv1 = wp.vec3(0.0)
    pw1 = wp.vec3(0.0)
    pv2 = wp.vec3(0.0)
    for _it in range(SOLVER_ITERATIONS):
        change = wp.dot(n, dv2 + wp.cross(dw2, r2) - dv1 - wp.cross(dw1, r1))
        total = wp.max(applied + rhs - change * inv_n, 0.0)
        step = total - applied
        applied = total
        dv1 = dv1 - n * (step / CAR_MASS)
        dw1 = dw1 - inv_inertia_world(q, rn1 * step)
        dv2 = dv2 + n * (step / BALL_MASS)
        dw2 = dw2 + rn2 * (step * BALL_INV_INERTIA)
        if push_rhs != 0.0:
            change = wp.dot(n, pv2 - pv1 - wp.cross(pw1, r1))
            total = wp.max(applied_push + push_rhs - change * inv_n, 0.0)
            step = total - applied_push
            applied_push = total
            pv1 = pv1 - n * (step / CAR_MASS)
            pw1 = pw1 - inv_inertia_world(q, rn1 * step)
            pv2 = pv2 + n * (step / BALL_MASS)
        if applied > 0.0:
            limit = CARBALL_FRICTION * applied
            change = wp.dot(t, dv1 + wp.cross(dw1, r1) - dv2 - wp.cross(dw2, r2))
            total = wp.clamp(applied_t + rhs_t - change * inv_t, -limit, limit)
            step = total - applied_t
            applied_t = total
            dv1 = dv1 + t * (step / CAR_MASS)
            dw1 = dw1 + inv_inertia_world(q, rt1 * step)
            dv2 = dv2 - t * (step / BALL_MASS)
            dw2 = dw2 - rt2 * (step * BALL_INV_INERTIA)
    s.car_vel[a, c] = cv + dv1
    s.car_ang[a, c] = cw + dw1
    s.ball_vel[a] = bv + dv2
    s.ball_ang[a] = bw + dw2
    if applied_push > 0.0:
        s.car_pos[a, c] = cp + pv1 * TICK_TIME
        s.car_rot[a, c] = turn(q, pw1)
        s.ball_pos[a] = bp + pv2 * TICK_TIME
