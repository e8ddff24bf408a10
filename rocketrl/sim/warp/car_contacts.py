"""Contacts of one tick between cars: a car against the ball (Bullet's impulse plus RocketSim's extra
"ball hit" impulse) and a car against a car (bumps and demolitions by RocketSim's rules, the contact itself
in rocketrl.sim.warp.car_car_box). The ball against
the arena: rocketrl.sim.warp.collisions; a car's body against the arena: rocketrl.sim.warp.car_arena_box.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.car_car_box import PairState, pair_contacts, solve_pair
from rocketrl.sim.warp.collisions import (
    BALL_INV_INERTIA,
)
from rocketrl.sim.warp.constants import (
    BALL_CAR_EXTRA_FORWARD_SCALE,
    BALL_CAR_EXTRA_MAX_DELTA,
    BALL_CAR_EXTRA_Z_SCALE,
    BALL_MASS,
    BALL_RADIUS,
    BUMP_COOLDOWN_TIME,
    BUMP_MIN_FORWARD_DIST,
    CAR_INV_INERTIA,
    CAR_MASS,
    CARBALL_FRICTION,
    DEMO_RESPAWN_TIME,
    HITBOX_HALF,
    HITBOX_OFFSET,
    bump_air,
    bump_ground,
    bump_up,
    extra_impulse_factor,
)
from rocketrl.sim.warp.layout import (
    E_DEMOS,
    E_TOUCHED,
    E_WAS_DEMOED,
    F_BUMP_COOLDOWN,
    F_DEMO_TIMER,
    I_BUMP_OTHER,
    I_DEMOED,
    I_GROUND,
    I_LAST_HIT_TICK,
    I_SUPERSONIC,
    SimState,
)

PAIR_REACH = wp.constant(160.0)
"""Hitbox centres farther apart (uu) than this cannot touch: twice the box's half diagonal (153.4) and a
margin."""


@wp.func
def car_inv_inertia_world(q: wp.quat, x: wp.vec3) -> wp.vec3:
    """Inverse inertia tensor of a car with orientation q applied to the world vector x."""
    local = wp.quat_rotate_inv(q, x)
    local = wp.cw_mul(local, CAR_INV_INERTIA)
    return wp.quat_rotate(q, local)


@wp.func
def box_closest(q: wp.quat, centre: wp.vec3, p: wp.vec3) -> wp.vec3:
    """Closest point to p of the hitbox with orientation q centred at `centre` (world)."""
    local = wp.quat_rotate_inv(q, p - centre)
    h = HITBOX_HALF
    clamped = wp.vec3(wp.clamp(local[0], -h[0], h[0]), wp.clamp(local[1], -h[1], h[1]), wp.clamp(local[2], -h[2], h[2]))
    return centre + wp.quat_rotate(q, clamped)


@wp.func
def car_ball_contact(s: SimState, a: int, c: int, tick: int):
    """Car c against the ball: impulse (friction 2, no bounce) and Rocket League's extra hit impulse."""
    q = s.car_rot[a, c]
    cp = s.car_pos[a, c]
    centre = cp + wp.quat_rotate(q, HITBOX_OFFSET)
    bp = s.ball_pos[a]
    closest = box_closest(q, centre, bp)
    diff = bp - closest
    dist = wp.length(diff)
    if dist >= BALL_RADIUS:
        return
    n = wp.vec3(0.0, 0.0, 1.0)
    if dist > 1.0e-3:
        n = diff / dist
    else:
        n = wp.normalize(bp - centre)
    s.ev_car[a, c, E_TOUCHED] = 1
    s.ev_last_touch[a] = c
    cv = s.car_vel[a, c]
    cw = s.car_ang[a, c]
    bv = s.ball_vel[a]
    bw = s.ball_ang[a]
    fwd = wp.quat_rotate(q, wp.vec3(1.0, 0.0, 0.0))

    # Extra impulse, added at the end of the tick, at most every other tick.
    last = s.car_i[a, c, I_LAST_HIT_TICK]
    if tick > last + 1 or last > tick:
        s.car_i[a, c, I_LAST_HIT_TICK] = tick
        rel_speed = wp.min(wp.length(bv - cv), BALL_CAR_EXTRA_MAX_DELTA)
        if rel_speed > 0.0:
            rel = bp - cp
            hit = wp.normalize(wp.vec3(rel[0], rel[1], rel[2] * BALL_CAR_EXTRA_Z_SCALE))
            hit = wp.normalize(hit - fwd * (wp.dot(hit, fwd) * (1.0 - BALL_CAR_EXTRA_FORWARD_SCALE)))
            s.ball_cache[a] = s.ball_cache[a] + hit * (rel_speed * extra_impulse_factor(rel_speed))

    contact = bp - n * BALL_RADIUS
    r1 = contact - cp
    r2 = contact - bp
    vrel = (bv + wp.cross(bw, r2)) - (cv + wp.cross(cw, r1))
    vn = wp.dot(vrel, n)
    if vn < 0.0:
        k = 1.0 / BALL_MASS + 1.0 / CAR_MASS
        k = k + wp.dot(n, wp.cross(car_inv_inertia_world(q, wp.cross(r1, n)), r1))
        k = k + wp.dot(n, wp.cross(wp.cross(r2, n) * BALL_INV_INERTIA, r2))
        jn = -vn / k
        impulse = n * jn
        vt = vrel - n * vn
        speed_t = wp.length(vt)
        if speed_t > 1.0e-4:
            t = vt / speed_t
            kt = 1.0 / BALL_MASS + 1.0 / CAR_MASS
            kt = kt + wp.dot(t, wp.cross(car_inv_inertia_world(q, wp.cross(r1, t)), r1))
            kt = kt + wp.dot(t, wp.cross(wp.cross(r2, t) * BALL_INV_INERTIA, r2))
            impulse = impulse - t * wp.min(speed_t / kt, CARBALL_FRICTION * jn)
        s.ball_vel[a] = bv + impulse / BALL_MASS
        s.ball_ang[a] = bw + wp.cross(r2, impulse) * BALL_INV_INERTIA
        s.car_vel[a, c] = cv - impulse / CAR_MASS
        s.car_ang[a, c] = cw - car_inv_inertia_world(q, wp.cross(r1, impulse))
    push = BALL_RADIUS - dist
    s.ball_pos[a] = bp + n * (push * CAR_MASS / (CAR_MASS + BALL_MASS))
    s.car_pos[a, c] = cp - n * (push * BALL_MASS / (CAR_MASS + BALL_MASS))


@wp.func
def demolish(s: SimState, a: int, victim: int, attacker: int):
    if s.car_i[a, victim, I_DEMOED] != 0:
        return
    s.car_i[a, victim, I_DEMOED] = 1
    s.car_f[a, victim, F_DEMO_TIMER] = DEMO_RESPAWN_TIME
    s.ev_car[a, victim, E_WAS_DEMOED] = 1
    s.ev_car[a, attacker, E_DEMOS] = s.ev_car[a, attacker, E_DEMOS] + 1


@wp.func
def bump(s: SimState, a: int, i: int, j: int, contact: wp.vec3):
    """Car i hitting car j at `contact` (a point on car i, world uu): RocketSim's
    _BtCallback_OnCarCarCollision, one direction."""
    if s.car_i[a, i, I_DEMOED] != 0 or s.car_i[a, j, I_DEMOED] != 0:
        return
    if s.car_i[a, i, I_BUMP_OTHER] == j and s.car_f[a, i, F_BUMP_COOLDOWN] > 0.0:
        return
    pi = s.car_pos[a, i]
    pj = s.car_pos[a, j]
    vi = s.car_vel[a, i]
    delta = pj - pi
    if wp.dot(vi, delta) <= 0.0 or wp.length(vi) < 1.0e-3:
        return
    vel_dir = wp.normalize(vi)
    towards = wp.dot(vi, wp.normalize(delta))
    if towards <= wp.dot(s.car_vel[a, j], vel_dir):
        return
    qi = s.car_rot[a, i]
    local = wp.quat_rotate_inv(qi, contact - pi)
    if local[0] <= BUMP_MIN_FORWARD_DIST:
        return
    if s.car_i[a, i, I_SUPERSONIC] != 0:
        if s.car_team[a, i] != s.car_team[a, j]:
            demolish(s, a, j, i)
        return
    on_ground = s.car_i[a, j, I_GROUND] != 0
    base = bump_air(towards)
    up = wp.vec3(0.0, 0.0, 1.0)
    if on_ground:
        base = bump_ground(towards)
        up = wp.quat_rotate(s.car_rot[a, j], wp.vec3(0.0, 0.0, 1.0))
    s.car_cache[a, j] = s.car_cache[a, j] + vel_dir * base + up * bump_up(towards)
    s.car_i[a, i, I_BUMP_OTHER] = j
    s.car_f[a, i, F_BUMP_COOLDOWN] = BUMP_COOLDOWN_TIME


@wp.func
def car_car_contact(s: SimState, a: int, i: int, j: int):
    """Cars i and j: their hitboxes' contact points (Bullet's box-box detector), RocketSim's bump and
    demolition rules run at each point in turn (its contact callback), then Bullet's impulses between the
    two (rocketrl.sim.warp.car_car_box)."""
    if s.car_i[a, i, I_DEMOED] != 0 or s.car_i[a, j, I_DEMOED] != 0:
        return
    qi = s.car_rot[a, i]
    qj = s.car_rot[a, j]
    pi = s.car_pos[a, i]
    pj = s.car_pos[a, j]
    if wp.length(pj + wp.quat_rotate(qj, HITBOX_OFFSET) - pi - wp.quat_rotate(qi, HITBOX_OFFSET)) > PAIR_REACH:
        return
    contacts = pair_contacts(pi, qi, pj, qj, HITBOX_OFFSET, HITBOX_HALF)
    if contacts.count == 0:
        return
    for k in range(contacts.count):
        on_j = contacts.on_second[k]
        bump(s, a, i, j, on_j + contacts.normal * contacts.depth[k])
        bump(s, a, j, i, on_j)
    st = PairState()
    st.vel_i = s.car_vel[a, i]
    st.ang_i = s.car_ang[a, i]
    st.pos_i = pi
    st.rot_i = qi
    st.vel_j = s.car_vel[a, j]
    st.ang_j = s.car_ang[a, j]
    st.pos_j = pj
    st.rot_j = qj
    st = solve_pair(st, contacts)
    s.car_vel[a, i] = st.vel_i
    s.car_ang[a, i] = st.ang_i
    s.car_pos[a, i] = st.pos_i
    s.car_rot[a, i] = st.rot_i
    s.car_vel[a, j] = st.vel_j
    s.car_ang[a, j] = st.ang_j
    s.car_pos[a, j] = st.pos_j
    s.car_rot[a, j] = st.rot_j
