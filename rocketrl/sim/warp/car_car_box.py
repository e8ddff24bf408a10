"""Two cars' hitboxes against each other: the contact points of Bullet's box-box detector
(rocketrl.sim.warp.box_box) answered as RocketSim's Bullet answers them.

Response, as Bullet's sequential impulse solver with RocketSim's car-car material (restitution 0.1,
friction 0.09): per point a normal impulse aiming at restitution x the points' approach speed (none under
RESTITUTION_MIN_SPEED; gravity, the same for both cars, does not change it), a penetration recovered by
moving both cars (split impulse, 80% per tick), one friction direction along the sliding velocity within
0.09 x the normal impulse; SOLVER_ITERATIONS sweeps, normals then friction. No point is kept from the tick
before or warm-started: RocketSim's broadphase removes every pair and adds it again each tick, so each
manifold starts empty. Bullet solves the points together with the cars' other contacts; this solves the car
pair alone. Car i is Bullet's first body (box 1), car j the second.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.box_box import BT_UNIT, PairContacts, Rows4, Values4, box_box
from rocketrl.sim.warp.car_arena_box import SOLVER_ITERATIONS, SPLIT_ERP, SPLIT_TURN_ERP, inv_inertia_world, tangent_of
from rocketrl.sim.warp.constants import (
    CAR_MASS,
    CARCAR_FRICTION,
    CARCAR_RESTITUTION,
    RESTITUTION_MIN_SPEED,
    TICK_TIME,
)


@wp.func
def pair_contacts(
    pos_i: wp.vec3, q_i: wp.quat, pos_j: wp.vec3, q_j: wp.quat, offset: wp.vec3, half: wp.vec3
) -> PairContacts:
    """Contacts of cars i and j (origins pos (uu), orientations q) whose boxes of half extents `half` (uu) sit
    at `offset` in body axes."""
    inv = 1.0 / BT_UNIT
    c_i = (pos_i + wp.quat_rotate(q_i, offset)) * inv
    c_j = (pos_j + wp.quat_rotate(q_j, offset)) * inv
    return box_box(c_i, wp.quat_to_matrix(q_i), half * inv, c_j, wp.quat_to_matrix(q_j), half * inv)


@wp.func
def turning(q: wp.quat, rn: wp.vec3) -> float:
    """rn . I^-1 rn for a car with orientation q: what turning adds to a point's inverse effective mass."""
    return wp.dot(rn, inv_inertia_world(q, rn))


@wp.func
def turn(q: wp.quat, w: wp.vec3) -> wp.quat:
    """q turned by the split impulse's angular push velocity w (rad/s) over one tick, of which Bullet takes
    SPLIT_TURN_ERP."""
    speed = wp.length(w)
    if speed * TICK_TIME > 1.0e-9:
        return wp.normalize(wp.quat_from_axis_angle(w / speed, speed * SPLIT_TURN_ERP * TICK_TIME) * q)
    return q


@wp.struct
class PairState:
    """Velocities and positions of two cars, i then j, as the solver changes them."""

    vel_i: wp.vec3
    ang_i: wp.vec3
    pos_i: wp.vec3
    rot_i: wp.quat
    vel_j: wp.vec3
    ang_j: wp.vec3
    pos_j: wp.vec3
    rot_j: wp.quat


@wp.func
def solve_pair(st: PairState, c: PairContacts) -> PairState:
    """The impulses and push-out of contacts c between cars i and j (module docstring); returns the cars'
    new velocities, positions and orientations."""
    n = c.normal
    r_i = Rows4()
    r_j = Rows4()
    t = Rows4()
    inv_n = Values4()
    rhs = Values4()
    push_rhs = Values4()
    inv_t = Values4()
    rhs_t = Values4()
    two_inv_mass = 2.0 / CAR_MASS
    for k in range(c.count):
        on_j = c.on_second[k]
        ri = on_j + n * c.depth[k] - st.pos_i
        rj = on_j - st.pos_j
        r_i[k] = ri
        r_j[k] = rj
        cn_i = wp.cross(ri, n)
        cn_j = wp.cross(rj, n)
        inv_n[k] = 1.0 / (two_inv_mass + turning(st.rot_i, cn_i) + turning(st.rot_j, cn_j))
        point_i = st.vel_i + wp.cross(st.ang_i, ri)
        point_j = st.vel_j + wp.cross(st.ang_j, rj)
        approach = wp.dot(n, point_j - point_i)  # both cars fell alike this tick: gravity cancels
        restitution = float(0.0)  # noqa: UP018 (a variable for Warp)
        if wp.abs(approach) >= RESTITUTION_MIN_SPEED:
            restitution = wp.max(-CARCAR_RESTITUTION * approach, 0.0)
        rhs[k] = (restitution - approach) * inv_n[k]
        push_rhs[k] = c.depth[k] * SPLIT_ERP / TICK_TIME * inv_n[k]
        tk = tangent_of(n, point_i - point_j)
        t[k] = tk
        ct_i = wp.cross(ri, tk)
        ct_j = wp.cross(rj, tk)
        inv_t[k] = 1.0 / (two_inv_mass + turning(st.rot_i, ct_i) + turning(st.rot_j, ct_j))
        rhs_t[k] = -wp.dot(tk, point_i - point_j) * inv_t[k]
    applied = Values4()
    applied_t = Values4()
    applied_push = Values4()
    dv_i = wp.vec3(0.0)
    dw_i = wp.vec3(0.0)
    dv_j = wp.vec3(0.0)
    dw_j = wp.vec3(0.0)
    pv_i = wp.vec3(0.0)
    pw_i = wp.vec3(0.0)
    pv_j = wp.vec3(0.0)
    pw_j = wp.vec3(0.0)
    for _it in range(SOLVER_ITERATIONS):
        for k in range(c.count):
            ri = r_i[k]
            rj = r_j[k]
            change = wp.dot(n, dv_j + wp.cross(dw_j, rj) - dv_i - wp.cross(dw_i, ri))
            total = wp.max(applied[k] + rhs[k] - change * inv_n[k], 0.0)
            step = total - applied[k]
            applied[k] = total
            dv_i = dv_i - n * (step / CAR_MASS)
            dw_i = dw_i - inv_inertia_world(st.rot_i, wp.cross(ri, n) * step)
            dv_j = dv_j + n * (step / CAR_MASS)
            dw_j = dw_j + inv_inertia_world(st.rot_j, wp.cross(rj, n) * step)
            change = wp.dot(n, pv_j + wp.cross(pw_j, rj) - pv_i - wp.cross(pw_i, ri))
            total = wp.max(applied_push[k] + push_rhs[k] - change * inv_n[k], 0.0)
            step = total - applied_push[k]
            applied_push[k] = total
            pv_i = pv_i - n * (step / CAR_MASS)
            pw_i = pw_i - inv_inertia_world(st.rot_i, wp.cross(ri, n) * step)
            pv_j = pv_j + n * (step / CAR_MASS)
            pw_j = pw_j + inv_inertia_world(st.rot_j, wp.cross(rj, n) * step)
        for k in range(c.count):
            if applied[k] > 0.0:
                ri = r_i[k]
                rj = r_j[k]
                tk = t[k]
                limit = CARCAR_FRICTION * applied[k]
                slip = wp.dot(tk, dv_i + wp.cross(dw_i, ri) - dv_j - wp.cross(dw_j, rj))
                total = wp.clamp(applied_t[k] + rhs_t[k] - slip * inv_t[k], -limit, limit)
                step = total - applied_t[k]
                applied_t[k] = total
                dv_i = dv_i + tk * (step / CAR_MASS)
                dw_i = dw_i + inv_inertia_world(st.rot_i, wp.cross(ri, tk) * step)
                dv_j = dv_j - tk * (step / CAR_MASS)
                dw_j = dw_j - inv_inertia_world(st.rot_j, wp.cross(rj, tk) * step)
    out = PairState()
    out.vel_i = st.vel_i + dv_i
    out.ang_i = st.ang_i + dw_i
    out.vel_j = st.vel_j + dv_j
    out.ang_j = st.ang_j + dw_j
    out.pos_i = st.pos_i + pv_i * TICK_TIME
    out.pos_j = st.pos_j + pv_j * TICK_TIME
    out.rot_i = turn(st.rot_i, pw_i)
    out.rot_j = turn(st.rot_j, pw_j)
    return out
