"""Contacts of one tick: ball and cars against the arena, car against ball, car against car.

Contacts are resolved with single velocity impulses (restitution and Coulomb friction, like one
iteration of Bullet's solver) plus a position push-out (Bullet's split impulse), before positions
are integrated.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.arena_sdf import arena_distance, surface_normal
from rocketrl.sim.warp.constants import (
    BALL_ARENA_RADIUS,
    BALL_CAR_EXTRA_FORWARD_SCALE,
    BALL_CAR_EXTRA_MAX_DELTA,
    BALL_CAR_EXTRA_Z_SCALE,
    BALL_FRICTION,
    BALL_MASS,
    BALL_RADIUS,
    BALL_RESTITUTION,
    BUMP_COOLDOWN_TIME,
    BUMP_MIN_FORWARD_DIST,
    CAR_INV_INERTIA,
    CAR_MASS,
    CAR_REST_HEIGHT,
    CARBALL_FRICTION,
    CARCAR_RESTITUTION,
    CARWORLD_RESTITUTION,
    CEILING_Z,
    DEMO_RESPAWN_TIME,
    EXTENT_X,
    GRAVITY_Z,
    HITBOX_HALF,
    HITBOX_OFFSET,
    RESTITUTION_MIN_SPEED,
    TICK_TIME,
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
    F_CONTACT_NX,
    F_CONTACT_NY,
    F_CONTACT_NZ,
    F_DEMO_TIMER,
    I_BUMP_OTHER,
    I_DEMOED,
    I_GROUND,
    I_IS_JUMPING,
    I_LAST_HIT_TICK,
    I_SUPERSONIC,
    I_WORLD_CONTACT,
    SimState,
)

BALL_INV_INERTIA = wp.constant(1.0 / (0.4 * 30.0 * 91.25 * 91.25))
MANIFOLD_POINTS = wp.constant(4)
"""Contacts kept per mesh file (Bullet's manifold size)."""
MAX_MESH_CONTACTS = wp.constant(12)
"""Mesh contacts of the ball per tick at most (the sizes of ContactNormals and ContactParts)."""
ContactNormals = wp.types.vector(length=36, dtype=float)
ContactParts = wp.types.vector(length=12, dtype=int)
FLAT_EDGE_COS = wp.constant(0.9999)
"""Cosine above which two mesh triangles count as coplanar across their edge."""
CAR_CONTACT_RANGE = wp.constant(100.0)
"""Arena distance (uu) below which a car origin's surface contacts are examined (the hitbox reaches < 98)."""


@wp.func
def closest_on_triangle(p: wp.vec3, a: wp.vec3, b: wp.vec3, c: wp.vec3):
    """Closest point to p of the triangle abc, and its region: 0 the face, 1 + k edge k (k = 0 ab,
    1 bc, 2 ca), 4 + i vertex i (a, b, c)."""
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = wp.dot(ab, ap)
    d2 = wp.dot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return a, 4
    bp = p - b
    d3 = wp.dot(ab, bp)
    d4 = wp.dot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return b, 5
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        return a + ab * (d1 / (d1 - d3)), 1
    cp = p - c
    d5 = wp.dot(ab, cp)
    d6 = wp.dot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return c, 6
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        return a + ac * (d2 / (d2 - d6)), 3
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6))), 2
    denom = 1.0 / (va + vb + vc)
    return a + ab * (vb * denom) + ac * (vc * denom), 0


@wp.func
def mesh_contact(s: SimState, p: wp.vec3, face: int):
    """Distance (uu) from p to mesh triangle `face` and the contact normal (unit, towards p).

    After Bullet's internal-edge adjustment: a contact on a convex edge keeps the direction from the
    edge while that lies between the two triangles' normals; any other contact (face, vertex, edge to a
    coplanar or concave neighbour, or past the neighbour's normal) takes the triangle's normal."""
    mesh = s.arena_mesh
    a = wp.mesh_get_point(mesh, face * 3)
    b = wp.mesh_get_point(mesh, face * 3 + 1)
    c = wp.mesh_get_point(mesh, face * 3 + 2)
    q, region = closest_on_triangle(p, a, b, c)
    diff = p - q
    d = wp.length(diff)
    if d < 1.0e-4:
        return d, wp.vec3(0.0, 0.0, 1.0)
    dir = diff / d
    nt = wp.normalize(wp.cross(b - a, c - a))
    if wp.dot(p - a, nt) < 0.0:
        nt = -nt
    if region >= 1 and region <= 3:
        nb = s.arena_edge_normals[face * 3 + region - 1]
        if wp.dot(nb, dir) < 0.0:
            nb = -nb
        cos_edge = wp.dot(nt, nb)
        if cos_edge > FLAT_EDGE_COS:
            return d, nt
        if wp.dot(dir, nt) >= cos_edge - 1.0e-4 and wp.dot(dir, nb) >= cos_edge - 1.0e-4:
            return d, dir
    return d, nt


@wp.func
def plane_gap(p: wp.vec3, k: int) -> float:
    """Distance (uu) from p to RocketSim's arena plane k: 0 floor, 1 ceiling, 2 and 3 the side walls."""
    if k == 0:
        return p[2]
    if k == 1:
        return CEILING_Z - p[2]
    if k == 2:
        return p[0] + EXTENT_X
    return EXTENT_X - p[0]


@wp.func
def plane_normal(k: int) -> wp.vec3:
    """Unit normal (into the field) of arena plane k (see plane_gap)."""
    if k == 0:
        return wp.vec3(0.0, 0.0, 1.0)
    if k == 1:
        return wp.vec3(0.0, 0.0, -1.0)
    if k == 2:
        return wp.vec3(1.0, 0.0, 0.0)
    return wp.vec3(-1.0, 0.0, 0.0)


@wp.func
def ball_arena_contact(s: SimState, a: int):
    """Bounce the ball off the arena as RocketSim does: every plane (floor, ceiling, side walls) and
    collision-mesh triangle within BALL_ARENA_RADIUS of its centre is a contact (Bullet's contact
    threshold), and one impulse (restitution 0.6 of the normal speed before this tick's gravity,
    friction 0.35, rolling contact) is applied along the mean of their normals; then each contact
    pushes the ball out to BALL_RADIUS (penetration only, so a ball at rest floats in the threshold)."""
    p = s.ball_pos[a]
    mesh = s.arena_mesh
    n_sum = wp.vec3(0.0)
    count = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
    for plane in range(4):
        if plane_gap(p, plane) < BALL_ARENA_RADIUS:
            n_sum = n_sum + plane_normal(plane)
            count = count + 1
    # As in Bullet's contact manifolds (one per mesh file): a file contributes the first
    # MANIFOLD_POINTS of its triangles in reach.
    normals = ContactNormals()
    parts = ContactParts()
    kept = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
    query = wp.mesh_query_sphere(mesh, p, BALL_ARENA_RADIUS)
    face = int(0)  # noqa: UP018 (mesh_query_next writes the face index into it)
    while wp.mesh_query_next(query, face):
        d, nc = mesh_contact(s, p, face)
        if d < BALL_ARENA_RADIUS and d > 1.0e-4 and kept < MAX_MESH_CONTACTS:
            part = s.arena_face_part[face]
            same_part = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
            for i in range(kept):
                if parts[i] == part:
                    same_part = same_part + 1
            if same_part < MANIFOLD_POINTS:
                parts[kept] = part
                normals[3 * kept] = nc[0]
                normals[3 * kept + 1] = nc[1]
                normals[3 * kept + 2] = nc[2]
                kept = kept + 1
    for i in range(kept):
        n_sum = n_sum + wp.vec3(normals[3 * i], normals[3 * i + 1], normals[3 * i + 2])
        count = count + 1
    if count == 0 or wp.length(n_sum) < 1.0e-6:
        return
    n = wp.normalize(n_sum)
    v = s.ball_vel[a]
    w = s.ball_ang[a]
    vn = wp.dot(v, n)
    # Bullet bounces the velocity from before this tick's gravity (applied as an external impulse).
    vn_before = vn - GRAVITY_Z * TICK_TIME * n[2]
    if vn < 0.0:
        jn = -vn * BALL_MASS
        if vn_before < -RESTITUTION_MIN_SPEED:
            jn = wp.max(jn - BALL_RESTITUTION * vn_before * BALL_MASS, 0.0)
        r = -n * BALL_RADIUS
        vc = v + wp.cross(w, r)
        vt = vc - n * wp.dot(vc, n)
        speed_t = wp.length(vt)
        jt = wp.vec3(0.0)
        if speed_t > 1.0e-4:
            inv_k = 1.0 / BALL_MASS + BALL_RADIUS * BALL_RADIUS * BALL_INV_INERTIA
            mag = wp.min(speed_t / inv_k, BALL_FRICTION * jn)
            jt = -vt * (mag / speed_t)
        s.ball_vel[a] = v + (n * jn + jt) / BALL_MASS
        s.ball_ang[a] = w + wp.cross(r, jt) * BALL_INV_INERTIA
    # Push-out, one contact after the other from the moved position.
    for plane in range(4):
        gap = plane_gap(p, plane)
        if gap < BALL_RADIUS:
            p = p + plane_normal(plane) * (BALL_RADIUS - gap)
    query = wp.mesh_query_sphere(mesh, p, BALL_RADIUS)
    while wp.mesh_query_next(query, face):
        d, nc = mesh_contact(s, p, face)
        if d < BALL_RADIUS and d > 1.0e-4:
            p = p + nc * (BALL_RADIUS - d)
    s.ball_pos[a] = p


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
    """Car i hitting car j (RocketSim's _BtCallback_OnCarCarCollision, one direction)."""
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
    """Cars i and j: an approximate box-box test (each hitbox against the other's centre, padded by
    its half height), a push apart with restitution 0.1, then bumps and demolitions both ways."""
    if s.car_i[a, i, I_DEMOED] != 0 or s.car_i[a, j, I_DEMOED] != 0:
        return
    qi = s.car_rot[a, i]
    qj = s.car_rot[a, j]
    ci = s.car_pos[a, i] + wp.quat_rotate(qi, HITBOX_OFFSET)
    cj = s.car_pos[a, j] + wp.quat_rotate(qj, HITBOX_OFFSET)
    if wp.length(cj - ci) > 200.0:
        return
    pad = HITBOX_HALF[1]
    on_i = box_closest(qi, ci, cj)
    on_j = box_closest(qj, cj, ci)
    dij = wp.length(cj - on_i)
    dji = wp.length(ci - on_j)
    if dij >= pad and dji >= pad:
        return
    n = wp.vec3(0.0, 0.0, 1.0)
    depth = 0.0
    if dij <= dji:
        n = wp.normalize(cj - on_i + wp.vec3(1.0e-4, 0.0, 0.0))
        depth = pad - dij
    else:
        n = wp.normalize(on_j - ci + wp.vec3(1.0e-4, 0.0, 0.0))
        depth = pad - dji
    contact_i = on_i
    contact_j = on_j
    bump(s, a, i, j, contact_i)
    bump(s, a, j, i, contact_j)
    vi = s.car_vel[a, i]
    vj = s.car_vel[a, j]
    vn = wp.dot(vj - vi, n)
    if vn < 0.0:
        jn = -(1.0 + CARCAR_RESTITUTION) * vn * 0.5
        s.car_vel[a, i] = vi - n * jn
        s.car_vel[a, j] = vj + n * jn
    s.car_pos[a, i] = s.car_pos[a, i] - n * (0.5 * depth)
    s.car_pos[a, j] = s.car_pos[a, j] + n * (0.5 * depth)


@wp.func
def align_up(q: wp.quat, n: wp.vec3) -> wp.quat:
    """Rotate orientation q by the smallest rotation that takes its up axis onto n."""
    up = wp.quat_rotate(q, wp.vec3(0.0, 0.0, 1.0))
    axis = wp.cross(up, n)
    s = wp.length(axis)
    cosine = wp.clamp(wp.dot(up, n), -1.0, 1.0)
    if s < 1.0e-6:
        return q
    return wp.normalize(wp.quat_from_axis_angle(axis / s, wp.atan2(s, cosine)) * q)


@wp.func
def hitbox_support(q: wp.quat, n: wp.vec3) -> float:
    """Height (uu) of the car origin above a plane of normal n that its hitbox rests on: how far the
    hitbox reaches from the origin along -n."""
    local = wp.quat_rotate_inv(q, -n)
    h = HITBOX_HALF
    reach = wp.abs(local[0]) * h[0] + wp.abs(local[1]) * h[1] + wp.abs(local[2]) * h[2]
    return wp.dot(local, HITBOX_OFFSET) + reach


@wp.func
def car_arena_contact(s: SimState, a: int, c: int):
    """Car c against the arena, as a point kept from every surface at its wheels' height or its
    hitbox's reach.

    Wheels down on a surface that is not a ceiling (up . n > 0.5, n.z > -0.5) and not moving away
    from it: the car stands on it CAR_REST_HEIGHT above (its up axis follows the surface normal, normal
    velocity removed). Otherwise the hitbox is kept off the surface, a contact bounces the car with
    restitution 0.3 and is recorded (I_WORLD_CONTACT and the normal) for auto-flip and auto-roll.
    """
    p = s.car_pos[a, c]
    d = arena_distance(p)
    grounded = 0
    touching = 0
    if d < CAR_CONTACT_RANGE:
        n = surface_normal(p, d)
        q = s.car_rot[a, c]
        v = s.car_vel[a, c]
        vn = wp.dot(v, n)
        up = wp.quat_rotate(q, wp.vec3(0.0, 0.0, 1.0))
        wheels = wp.dot(up, n) > 0.5 and n[2] > -0.5
        if wheels and d < CAR_REST_HEIGHT + 2.0 and vn <= 1.0 and s.car_i[a, c, I_IS_JUMPING] == 0:
            grounded = 1
            s.car_pos[a, c] = p + n * (CAR_REST_HEIGHT - d)
            s.car_vel[a, c] = v - n * vn
            s.car_rot[a, c] = align_up(q, n)
            w = s.car_ang[a, c]
            s.car_ang[a, c] = n * wp.dot(w, n)
        else:
            rest = wp.max(hitbox_support(q, n), CAR_REST_HEIGHT)
            if d < rest + 2.0:
                touching = 1
                s.car_f[a, c, F_CONTACT_NX] = n[0]
                s.car_f[a, c, F_CONTACT_NY] = n[1]
                s.car_f[a, c, F_CONTACT_NZ] = n[2]
            if d < rest:
                s.car_pos[a, c] = p + n * (rest - d)
                if vn < 0.0:
                    s.car_vel[a, c] = v - n * ((1.0 + CARWORLD_RESTITUTION) * vn)
    s.car_i[a, c, I_GROUND] = grounded
    s.car_i[a, c, I_WORLD_CONTACT] = touching
