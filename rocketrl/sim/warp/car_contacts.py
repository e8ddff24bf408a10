"""Contacts of one tick between two cars: bumps and demolitions by RocketSim's rules, the contact itself in
rocketrl.sim.warp.car_car_box. A car against the ball: rocketrl.sim.warp.car_ball. The ball against
the arena: rocketrl.sim.warp.collisions; a car's body against the arena: rocketrl.sim.warp.car_arena_box.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.car_car_box import PairState, pair_contacts, solve_pair
from rocketrl.sim.warp.constants import (
    BUMP_COOLDOWN_TIME,
    BUMP_MIN_FORWARD_DIST,
    DEMO_RESPAWN_TIME,
    HITBOX_COLLIDED,
    HITBOX_OFFSET,
    bump_air,
    bump_ground,
    bump_up,
)
from rocketrl.sim.warp.layout import (
    E_DEMOS,
    E_WAS_DEMOED,
    F_BUMP_COOLDOWN,
    F_DEMO_TIMER,
    F_FORCE_DV,
    I_BUMP_OTHER,
    I_DEMOED,
    I_GROUND,
    I_SUPERSONIC,
    SimStateRef,
)

PAIR_REACH = wp.constant(160.0)
"""Hitbox centres farther apart (uu) than this cannot touch: twice the box's half diagonal (153.4) and a
margin."""


@wp.func
def demolish(s: SimStateRef, a: int, victim: int, attacker: int):
    if s.car_i[a, victim, I_DEMOED] != 0:
        return
    s.car_i[a, victim, I_DEMOED] = 1
    s.car_f[a, victim, F_DEMO_TIMER] = DEMO_RESPAWN_TIME
    s.ev_car[a, victim, E_WAS_DEMOED] = 1
    s.ev_car[a, attacker, E_DEMOS] = s.ev_car[a, attacker, E_DEMOS] + 1


@wp.func
def force_dv(s: SimStateRef, a: int, c: int) -> wp.vec3:
    """The velocity car c's forces added this tick (car_pre_tick's F_FORCE_DV)."""
    return wp.vec3(s.car_f[a, c, F_FORCE_DV], s.car_f[a, c, F_FORCE_DV + 1], s.car_f[a, c, F_FORCE_DV + 2])


@wp.func
def bump(s: SimStateRef, a: int, i: int, j: int, contact: wp.vec3):
    """Car i hitting car j at `contact` (a point on car i, world uu): RocketSim's
    _BtCallback_OnCarCarCollision, one direction."""
    if s.car_i[a, i, I_DEMOED] != 0 or s.car_i[a, j, I_DEMOED] != 0:
        return
    if s.car_i[a, i, I_BUMP_OTHER] == j and s.car_f[a, i, F_BUMP_COOLDOWN] > 0.0:
        return
    pi = s.car_pos[a, i]
    pj = s.car_pos[a, j]
    # The velocities RocketSim's callback reads: the bodies' before this tick's forces (gravity, throttle,
    # boost, jump), which Bullet integrates in its solver after the callbacks.
    vi = s.car_vel[a, i] - force_dv(s, a, i)
    vj = s.car_vel[a, j] - force_dv(s, a, j)
    delta = pj - pi
    if wp.dot(vi, delta) <= 0.0 or wp.length(vi) < 1.0e-3:
        return
    vel_dir = wp.normalize(vi)
    towards = wp.dot(vi, wp.normalize(delta))
    if towards <= wp.dot(vj, vel_dir):
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
def car_car_contact(s: SimStateRef, a: int, i: int, j: int):
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
    contacts = pair_contacts(pi, qi, pj, qj, HITBOX_OFFSET, HITBOX_COLLIDED)
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
