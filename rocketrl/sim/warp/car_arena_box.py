"""A car's hitbox against the arena: the Octane box against RocketSim's four planes and the soccar collision
meshes, with Bullet's contact response.

Every contact is made anew each tick: RocketSim's broadphase (btRSBroadphase) removes every pair and adds it
again at each step, so Bullet's manifolds start empty, no point is kept from the tick before and none is
warm-started. Planes (rocketrl.sim.warp.car_plane_manifold): the box vertex deepest along each plane's
normal, within CONTACT_REACH (Bullet's contact breaking threshold for the car). Meshes: Bullet's one point
per triangle (GJK on the cores, the least overlap where they overlap), up to four per mesh file
(rocketrl.sim.warp.car_mesh_manifold).

Response, as Bullet's sequential impulse solver with RocketSim's settings and car-world material
(restitution 0.3, friction 0.3): per point a normal impulse aiming at restitution x the approach speed, taken
from the velocities before this tick's forces and torques (gravity, boost, jump, air control: Bullet
integrates those in its solver; none under RESTITUTION_MIN_SPEED), whatever the point's gap, as RocketSim's
Bullet sets up contacts; a penetration is recovered by moving the car (split impulse, 80% per tick, at any
depth: RocketSim sets the split threshold out of reach); one friction direction per point, along its
sliding velocity, within 0.3 x its normal impulse, never warm-started (RocketSim's Bullet); SOLVER_ITERATIONS
sweeps, normals then friction.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.car_mesh_manifold import (
    clear_mesh_manifolds,
    mesh_vec,
    set_contact_normal,
    update_mesh_manifolds,
)
from rocketrl.sim.warp.car_plane_manifold import add_plane_point, clear_planes, point_vec
from rocketrl.sim.warp.collisions import mesh_in_reach
from rocketrl.sim.warp.constants import (
    CAR_INV_INERTIA,
    CAR_MASS,
    CARWORLD_RESTITUTION,
    HITBOX_HALF,
    RESTITUTION_MIN_SPEED,
    TICK_TIME,
)
from rocketrl.sim.warp.layout import (
    CAR_MESH_MANIFOLDS,
    F_FORCE_DV,
    F_TORQUE_DW,
    I_WORLD_CONTACT,
    M_DISTANCE,
    M_IMPULSE,
    M_LOCAL,
    M_NORMAL,
    MANIFOLD_POINTS,
    P_DISTANCE,
    P_IMPULSE,
    P_LOCAL,
    SimStateRef,
)
from rocketrl.sim.warp.near_faces import box_axes, hitbox_centre
from rocketrl.sim.warp.wheel_rays import plane_normal, plane_point

MAX_BOX_POINTS = wp.constant(8)
MESH_ROWS = wp.constant(1000)
"""BoxContacts.row of a mesh manifold's point: MESH_ROWS + its row in car_mesh_points."""
BoxRows = wp.types.matrix(shape=(8, 3), dtype=wp.float32)
"""One 3-vector per contact point."""
BoxValues = wp.types.vector(length=8, dtype=wp.float32)
BoxRowsIndex = wp.types.vector(length=8, dtype=wp.int32)
CONTACT_REACH = wp.constant(2.0312278)
"""Gap (uu) within which a point is a contact: Bullet's contact breaking threshold for the car, 0.02 x its
compound shape's angular motion disc: the bounding-sphere radius of the box Bullet collides (1.53191, from
HITBOX_COLLIDED) plus the hitbox offset's length (0.49932), in 50 uu units. A car falling corner first onto
the floor meets it in RocketSim 1.89 uu up."""
CARWORLD_FRICTION = wp.constant(0.3)
SPLIT_ERP = wp.constant(0.8)
"""Share of a penetration recovered per tick by moving the car (RocketSim's m_erp2)."""
SOLVER_ITERATIONS = wp.constant(10)
SPLIT_TURN_ERP = wp.constant(0.1)
"""Share of the split impulse's turn a body takes (Bullet's m_splitImpulseTurnErp): a push-out moves the body
in full but turns it by a tenth of the turn the push solved for."""


@wp.struct
class BoxContacts:
    """Contact points of a car's hitbox with the arena this tick."""

    count: int
    offset: BoxRows
    """Point relative to the car origin (uu)."""
    normal: BoxRows
    """Unit normal from the arena towards the car."""
    gap: BoxValues
    """Signed distance (uu; negative: penetration)."""
    row: BoxRowsIndex
    """The point's row in the car's plane points (car_plane_manifold), or MESH_ROWS + its row in the car's
    mesh manifolds (car_mesh_manifold)."""


@wp.func
def add_point(box: BoxContacts, offset: wp.vec3, normal: wp.vec3, gap: float, row: int) -> BoxContacts:
    """box with the point added, or replacing its shallowest point if full and the new one is deeper."""
    out = box
    slot = out.count
    if out.count < MAX_BOX_POINTS:
        out.count = out.count + 1
    else:
        slot = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
        for i in range(MAX_BOX_POINTS):
            if out.gap[i] > out.gap[slot]:
                slot = i
        if gap >= out.gap[slot]:
            return out
    out.offset[slot] = offset
    out.normal[slot] = normal
    out.gap[slot] = gap
    out.row[slot] = row
    return out


@wp.func
def box_radius(axes: wp.mat33, n: wp.vec3) -> float:
    """Half the hitbox's extent along unit n."""
    return (
        wp.abs(wp.dot(axes[0], n)) * HITBOX_HALF[0]
        + wp.abs(wp.dot(axes[1], n)) * HITBOX_HALF[1]
        + wp.abs(wp.dot(axes[2], n)) * HITBOX_HALF[2]
    )


@wp.func
def box_may_touch(s: SimStateRef, centre: wp.vec3, axes: wp.mat33) -> bool:
    """False when find_box_contacts cannot find a point: every one of its own gates fails, the four plane
    tests (no plane within CONTACT_REACH of the hitbox) and the mesh's reach-grid test at the centre."""
    for plane in range(4):
        n = plane_normal(plane)
        if wp.dot(centre - plane_point(plane), n) - box_radius(axes, n) < CONTACT_REACH:
            return True
    return s.plane_only_cars == 0 and mesh_in_reach(s, centre)


@wp.func(inline=True)  # one call site; inlined: no call (nor SimState copy, on Warp without wp.ref)
def find_box_contacts(
    s: SimStateRef, a: int, c: int, pos: wp.vec3, q: wp.quat, centre: wp.vec3, axes: wp.mat33
) -> BoxContacts:
    """Car c's hitbox contact points this tick with the arena planes (one each at most) and the meshes, for the car
    at pos (uu), orientation q, hitbox centre `centre` and box_axes `axes`. The mesh points are made first, then
    the plane points, as RocketSim's broadphase pairs the car with the mesh files before the planes (added after
    them); each point made writes its normal (before the internal-edge correction) to the car's F_CONTACT_N*,
    as RocketSim's contact callback does, so the last one made stays for the next tick's auto-roll and
    auto-flip. They are solved planes first: Bullet sorts the manifolds by island with an unstable quicksort,
    which swaps a lone car's two (docs/results/engine-parity.md, contact order)."""
    box = BoxContacts()
    box.count = 0
    if s.plane_only_cars == 0 and mesh_in_reach(s, centre):
        update_mesh_manifolds(s, a, c, pos, q, centre, axes, CONTACT_REACH)
    else:
        clear_mesh_manifolds(s, a, c)
    clear_planes(s, a, c)  # every contact is made anew each tick (module docstring)
    for plane in range(4):
        row = add_plane_point(s, a, c, plane, pos, q, centre, CONTACT_REACH)
        if row >= 0:
            n = plane_normal(plane)
            set_contact_normal(s, a, c, n)
            offset = wp.quat_rotate(q, point_vec(s, a, c, row, P_LOCAL))
            box = add_point(box, offset, n, s.car_plane_points[a, c, row, P_DISTANCE], row)
    for m in range(CAR_MESH_MANIFOLDS):
        for k in range(s.car_mesh_count[a, c, m]):
            row = m * MANIFOLD_POINTS + k
            offset = wp.quat_rotate(q, mesh_vec(s, a, c, row, M_LOCAL))
            normal = mesh_vec(s, a, c, row, M_NORMAL)
            box = add_point(box, offset, normal, s.car_mesh_points[a, c, row, M_DISTANCE], MESH_ROWS + row)
    return box


@wp.func
def inv_inertia_world(q: wp.quat, x: wp.vec3) -> wp.vec3:
    """A car's inverse inertia (orientation q) applied to the world vector x (every car contact uses it)."""
    return wp.quat_rotate(q, wp.cw_mul(wp.quat_rotate_inv(q, x), CAR_INV_INERTIA))


@wp.func
def tangent_of(n: wp.vec3, slip: wp.vec3) -> wp.vec3:
    """Friction direction: the sliding velocity's part across n, or any unit vector across n."""
    lateral = slip - n * wp.dot(n, slip)
    if wp.length_sq(lateral) > 1.0e-6:
        return wp.normalize(lateral)
    if wp.abs(n[2]) > 0.7071067811865476:
        k = 1.0 / wp.sqrt(n[1] * n[1] + n[2] * n[2])
        return wp.vec3(0.0, -n[2] * k, n[1] * k)
    k = 1.0 / wp.sqrt(n[0] * n[0] + n[1] * n[1])
    return wp.vec3(-n[1] * k, n[0] * k, 0.0)


@wp.func(inline=True)  # small, called once per car and tick: no call for a car far from the arena
def car_arena_box_contact(s: SimStateRef, a: int, c: int):
    """Car c's hitbox against the arena for one tick: contacts, impulses and push-out (module docstring);
    records I_WORLD_CONTACT and the last point's normal for auto-flip and auto-roll (RocketSim's
    world contact)."""
    pos = s.car_pos[a, c]
    q = s.car_rot[a, c]
    axes = box_axes(q)
    centre = hitbox_centre(pos, q)
    if box_may_touch(s, centre, axes):
        resolve_box_contacts(s, a, c, pos, q, centre, axes)
    else:
        s.car_i[a, c, I_WORLD_CONTACT] = 0
        clear_planes(s, a, c)
        clear_mesh_manifolds(s, a, c)


@wp.func(inline=False)  # large: kept out of the step kernel, which calls it only for a car near the arena
def resolve_box_contacts(s: SimStateRef, a: int, c: int, pos: wp.vec3, q: wp.quat, centre: wp.vec3, axes: wp.mat33):
    """car_arena_box_contact's work for a car whose hitbox may touch the arena (box_may_touch)."""
    box = find_box_contacts(s, a, c, pos, q, centre, axes)
    s.car_i[a, c, I_WORLD_CONTACT] = int(box.count > 0)
    if box.count == 0:
        return
    v = s.car_vel[a, c]
    w = s.car_ang[a, c]
    # Restitution sees the velocities before this tick's forces and torques, which Bullet integrates in its
    # solver (RocketSim's Bullet: getVelocityInLocalPoint of the body before the solve).
    v_pre = v - wp.vec3(s.car_f[a, c, F_FORCE_DV], s.car_f[a, c, F_FORCE_DV + 1], s.car_f[a, c, F_FORCE_DV + 2])
    w_pre = w - wp.vec3(s.car_f[a, c, F_TORQUE_DW], s.car_f[a, c, F_TORQUE_DW + 1], s.car_f[a, c, F_TORQUE_DW + 2])
    rhs = BoxValues()
    push_rhs = BoxValues()
    inv_n = BoxValues()
    rhs_t = BoxValues()
    inv_t = BoxValues()
    tangent = BoxRows()
    for i in range(box.count):
        r = box.offset[i]
        n = box.normal[i]
        rn = wp.cross(r, n)
        inv_n[i] = 1.0 / (1.0 / CAR_MASS + wp.dot(rn, inv_inertia_world(q, rn)))
        approach = wp.dot(n, v_pre + wp.cross(w_pre, r))
        restitution = float(0.0)  # noqa: UP018 (a variable for Warp, not a constant)
        if wp.abs(approach) >= RESTITUTION_MIN_SPEED:
            restitution = wp.max(-CARWORLD_RESTITUTION * approach, 0.0)
        velocity_error = restitution - wp.dot(n, v + wp.cross(w, r))
        gap = box.gap[i]
        if gap < 0.0:
            push_rhs[i] = -gap * SPLIT_ERP / TICK_TIME * inv_n[i]
        rhs[i] = velocity_error * inv_n[i]
        t = tangent_of(n, v + wp.cross(w, r))
        tangent[i] = t
        rt = wp.cross(r, t)
        inv_t[i] = 1.0 / (1.0 / CAR_MASS + wp.dot(rt, inv_inertia_world(q, rt)))
        rhs_t[i] = -(wp.dot(t, v) + wp.dot(rt, w_pre)) * inv_t[i]  # Bullet: the angular part without the torque
    applied = BoxValues()
    applied_t = BoxValues()
    applied_push = BoxValues()
    dv = wp.vec3(0.0)
    dw = wp.vec3(0.0)
    pv = wp.vec3(0.0)
    pw = wp.vec3(0.0)
    for _it in range(SOLVER_ITERATIONS):
        for i in range(box.count):
            r = box.offset[i]
            n = box.normal[i]
            rn = wp.cross(r, n)
            total = wp.max(applied[i] + rhs[i] - (wp.dot(n, dv) + wp.dot(rn, dw)) * inv_n[i], 0.0)
            step = total - applied[i]
            applied[i] = total
            dv = dv + n * (step / CAR_MASS)
            dw = dw + inv_inertia_world(q, rn * step)
            if push_rhs[i] != 0.0:
                total = wp.max(applied_push[i] + push_rhs[i] - (wp.dot(n, pv) + wp.dot(rn, pw)) * inv_n[i], 0.0)
                step = total - applied_push[i]
                applied_push[i] = total
                pv = pv + n * (step / CAR_MASS)
                pw = pw + inv_inertia_world(q, rn * step)
        for i in range(box.count):
            if applied[i] > 0.0:
                r = box.offset[i]
                t = tangent[i]
                rt = wp.cross(r, t)
                limit = CARWORLD_FRICTION * applied[i]
                total = applied_t[i] + rhs_t[i] - (wp.dot(t, dv) + wp.dot(rt, dw)) * inv_t[i]
                total = wp.clamp(total, -limit, limit)
                step = total - applied_t[i]
                applied_t[i] = total
                dv = dv + t * (step / CAR_MASS)
                dw = dw + inv_inertia_world(q, rt * step)
    for i in range(box.count):
        if box.row[i] >= MESH_ROWS:
            s.car_mesh_points[a, c, box.row[i] - MESH_ROWS, M_IMPULSE] = applied[i]
        elif box.row[i] >= 0:
            s.car_plane_points[a, c, box.row[i], P_IMPULSE] = applied[i]
    s.car_vel[a, c] = v + dv
    s.car_ang[a, c] = w + dw
    if pv[0] != 0.0 or pv[1] != 0.0 or pv[2] != 0.0:
        s.car_pos[a, c] = pos + pv * TICK_TIME
        angle = wp.length(pw) * SPLIT_TURN_ERP * TICK_TIME
        if angle > 1.0e-9:
            s.car_rot[a, c] = wp.normalize(wp.quat_from_axis_angle(pw / wp.length(pw), angle) * q)
