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
The points of all cars at the ball are solved together (two cars in a 50/50 meet through the ball); Bullet
also solves them with the cars' other contacts (the arena, each other); this does not. No point is kept from
the tick before (RocketSim's broadphase makes every manifold anew each tick).
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
    TICK_TIME,
    extra_impulse_factor,
)
from rocketrl.sim.warp.layout import E_TOUCHED, F_FORCE_DV, F_TORQUE_DW, I_DEMOED, I_LAST_HIT_TICK, SimStateRef
from rocketrl.sim.warp.near_faces import hitbox_centre

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


MAX_BALL_CONTACTS = wp.constant(6)
"""Cars in one arena at most (3v3): each meets the ball with at most one point."""
Rows6 = wp.types.matrix(shape=(6, 3), dtype=wp.float32)
Values6 = wp.types.vector(length=6, dtype=wp.float32)
Index6 = wp.types.vector(length=6, dtype=wp.int32)


@wp.struct
class BallContacts:
    """This tick's car-ball points of one arena, one per car that reaches the ball, solved together."""

    count: int
    car: Index6
    r1: Rows6
    """Point on the car relative to the car origin (uu)."""
    r2: Rows6
    """Point on the ball relative to its centre (uu)."""
    n: Rows6
    """Unit normal from the car towards the ball."""
    t: Rows6
    """Friction direction."""
    inv_n: Values6
    target_n: Values6
    """Normal impulse that stops the approach (restitution 0), before the others act."""
    target_push: Values6
    """Push-out impulse of the penetration (split impulse)."""
    inv_t: Values6
    target_t: Values6
    """Friction impulse that stops the sliding."""


@wp.func
def car_ball_point(s: SimStateRef, a: int, c: int, tick: int, contacts: BallContacts) -> BallContacts:
    """contacts with car c's point against the ball added if the car reaches it (module docstring), after
    RocketSim's callback for it (the touch and the extra hit)."""
    q = s.car_rot[a, c]
    cp = s.car_pos[a, c]
    centre = hitbox_centre(cp, q)
    bp = s.ball_pos[a]
    if wp.length(bp - centre) > BALL_REACH:
        return contacts
    gap, n_local, core_point = rounded_box_gap(wp.quat_rotate_inv(q, bp - centre))
    if gap > CONTACT_REACH:
        return contacts
    return ball_point_setup(s, a, c, tick, q, cp, centre, bp, gap, n_local, core_point, contacts)


@wp.func(inline=False)  # large: kept out of the step kernel, which calls it only for a car at the ball
def ball_point_setup(
    s: SimStateRef,
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
    contacts: BallContacts,
) -> BallContacts:
    """car_ball_point's work for a car within reach of the ball: the callback, then the point's solver rows."""
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
    slip = cv + wp.cross(cw, r1) - bv - wp.cross(bw, r2)
    t = tangent_of(n, slip)
    rt1 = wp.cross(r1, t)
    rt2 = wp.cross(r2, t)
    out = contacts
    k = out.count
    out.count = k + 1
    out.car[k] = c
    out.r1[k] = r1
    out.r2[k] = r2
    out.n[k] = n
    out.t[k] = t
    out.inv_n[k] = inv_n
    out.target_n[k] = -approach * inv_n  # restitution 0: stop the approach
    out.target_push[k] = 0.0
    if gap < 0.0:
        out.target_push[k] = -gap * SPLIT_ERP / TICK_TIME * inv_n
    inv_t = 1.0 / (inv_mass + wp.dot(rt1, inv_inertia_world(q, rt1)) + wp.dot(rt2, rt2) * BALL_INV_INERTIA)
    out.inv_t[k] = inv_t
    # Bullet's friction target: the angular part without this tick's torques.
    out.target_t[k] = -(wp.dot(t, cv - bv) + wp.dot(rt1, cw_pre) - wp.dot(rt2, bw)) * inv_t
    return out


@wp.func(inline=False)  # large: kept out of the step kernel, which calls it only when a car is at the ball
def solve_ball_contacts(s: SimStateRef, a: int, bc: BallContacts):
    """The car-ball points of an arena solved together, as Bullet solves the bodies of one island: each sweep
    every point's normal (and penetration) row, then every point's friction row (a single point: the order the
    pair alone had)."""
    bp = s.ball_pos[a]
    bv = s.ball_vel[a]
    bw = s.ball_ang[a]
    dv1 = Rows6()
    dw1 = Rows6()
    pv1 = Rows6()
    pw1 = Rows6()
    applied = Values6()
    applied_t = Values6()
    applied_push = Values6()
    dv2 = wp.vec3(0.0)
    dw2 = wp.vec3(0.0)
    pv2 = wp.vec3(0.0)
    for _it in range(SOLVER_ITERATIONS):
        for k in range(bc.count):
            c = bc.car[k]
            q = s.car_rot[a, c]
            n = bc.n[k]
            r1 = bc.r1[k]
            r2 = bc.r2[k]
            rn1 = wp.cross(r1, n)
            rn2 = wp.cross(r2, n)
            change = wp.dot(n, dv2 + wp.cross(dw2, r2) - dv1[k] - wp.cross(dw1[k], r1))
            total = wp.max(applied[k] + bc.target_n[k] - change * bc.inv_n[k], 0.0)
            step = total - applied[k]
            applied[k] = total
            dv1[k] = dv1[k] - n * (step / CAR_MASS)
            dw1[k] = dw1[k] - inv_inertia_world(q, rn1 * step)
            dv2 = dv2 + n * (step / BALL_MASS)
            dw2 = dw2 + rn2 * (step * BALL_INV_INERTIA)
            if bc.target_push[k] != 0.0:
                change = wp.dot(n, pv2 - pv1[k] - wp.cross(pw1[k], r1))
                total = wp.max(applied_push[k] + bc.target_push[k] - change * bc.inv_n[k], 0.0)
                step = total - applied_push[k]
                applied_push[k] = total
                pv1[k] = pv1[k] - n * (step / CAR_MASS)
                pw1[k] = pw1[k] - inv_inertia_world(q, rn1 * step)
                pv2 = pv2 + n * (step / BALL_MASS)
        for k in range(bc.count):
            if applied[k] > 0.0:
                c = bc.car[k]
                q = s.car_rot[a, c]
                t = bc.t[k]
                r1 = bc.r1[k]
                r2 = bc.r2[k]
                rt1 = wp.cross(r1, t)
                rt2 = wp.cross(r2, t)
                limit = CARBALL_FRICTION * applied[k]
                change = wp.dot(t, dv1[k] + wp.cross(dw1[k], r1) - dv2 - wp.cross(dw2, r2))
                total = wp.clamp(applied_t[k] + bc.target_t[k] - change * bc.inv_t[k], -limit, limit)
                step = total - applied_t[k]
                applied_t[k] = total
                dv1[k] = dv1[k] + t * (step / CAR_MASS)
                dw1[k] = dw1[k] + inv_inertia_world(q, rt1 * step)
                dv2 = dv2 - t * (step / BALL_MASS)
                dw2 = dw2 - rt2 * (step * BALL_INV_INERTIA)
    pushed = float(0.0)  # noqa: UP018 (a variable for Warp)
    for k in range(bc.count):
        c = bc.car[k]
        s.car_vel[a, c] = s.car_vel[a, c] + dv1[k]
        s.car_ang[a, c] = s.car_ang[a, c] + dw1[k]
        if applied_push[k] > 0.0:
            pushed = 1.0
            s.car_pos[a, c] = s.car_pos[a, c] + pv1[k] * TICK_TIME
            s.car_rot[a, c] = turn(s.car_rot[a, c], pw1[k])
    s.ball_vel[a] = bv + dv2
    s.ball_ang[a] = bw + dw2
    if pushed != 0.0:
        s.ball_pos[a] = bp + pv2 * TICK_TIME


@wp.func
def car_ball_contacts(s: SimStateRef, a: int, num_cars: int, tick: int):
    """Every car against the ball for one tick (module docstring): each car's point, from the last car to the
    first, then all solved together in that order. The order is RocketSim's: a head-on 50/50 follows RocketSim's
    only in it (docs/results/engine-parity.md, contact order); the last touch is the first car's."""
    bc = BallContacts()
    bc.count = 0
    for back in range(num_cars):
        c = num_cars - 1 - back
        if s.car_i[a, c, I_DEMOED] == 0:
            bc = car_ball_point(s, a, c, tick, bc)
    if bc.count > 0:
        solve_ball_contacts(s, a, bc)
