"""Contacts of one tick: the ball against the arena's planes and meshes (car against ball and car against
car: rocketrl.sim.warp.car_contacts; a car's body against the arena: rocketrl.sim.warp.car_arena_box).

Contacts are resolved with single velocity impulses (restitution and Coulomb friction, like one
iteration of Bullet's solver) plus a position push-out (Bullet's split impulse), before positions
are integrated.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp import arena_mesh
from rocketrl.sim.warp.constants import (
    BALL_ARENA_RADIUS,
    BALL_FRICTION,
    BALL_MASS,
    BALL_RADIUS,
    BALL_RESTITUTION,
    CEILING_PLANE_Z,
    EXTENT_X,
    GRAVITY_Z,
    RESTITUTION_MIN_SPEED,
    TICK_TIME,
)
from rocketrl.sim.warp.layout import (
    BALL_MANIFOLDS,
    C_DISTANCE,
    C_NORMAL,
    C_OFFSET,
    MANIFOLD_POINTS,
    SimStateRef,
)
from rocketrl.sim.warp.mesh_edges import closest_on_triangle, edge_adjusted_normal

BALL_INV_INERTIA = wp.constant(1.0 / (0.4 * 30.0 * 91.25 * 91.25))
PLANE_OBJECT = wp.constant(1000)
"""Arena object number of plane 0 in the ball's manifolds (mesh files are numbered from 0)."""
PUSH_OUT_FRACTION = wp.constant(0.8)
"""Share of a contact's penetration recovered per tick (RocketSim's split-impulse erp2)."""
ContactImpulses = wp.types.vector(length=BALL_MANIFOLDS * MANIFOLD_POINTS, dtype=float)
"""Push impulse of each ball contact point (BALL_MANIFOLDS * MANIFOLD_POINTS rows)."""
SOLVER_ITERATIONS = wp.constant(10)
"""Sequential-impulse iterations of the ball's arena contact (Bullet's default m_numIterations)."""
REACH_GRID_CELL = wp.constant(arena_mesh.REACH_GRID_CELL)
"""Cell edge (uu) of SimState.arena_reach_grid."""
MAX_BALL_FACES = wp.constant(48)
"""Mesh triangles near the ball examined per tick at most (the size of BallFaces)."""
BallFaces = wp.types.vector(length=MAX_BALL_FACES, dtype=int)


@wp.func
def mesh_contact(s: SimStateRef, p: wp.vec3, face: int):
    """Distance (uu) from p to mesh triangle `face`, the contact normal (unit, towards p) and the direction
    from the triangle's closest point to p (unit).

    The normal is Bullet's btAdjustInternalEdgeContacts applied to that direction, with the edge angles and
    flags of arena_mesh.internal_edge_info: a contact within EDGE_REACH of the nearest edge shared with
    another triangle takes the triangle's normal when the edge is flat or the direction faces away from
    both triangles (unless that normal faces away from p), and at a convex edge a direction past the
    neighbour's normal is turned back onto it."""
    mesh = s.arena_mesh
    v0 = wp.mesh_get_point(mesh, face * 3)
    v1 = wp.mesh_get_point(mesh, face * 3 + 1)
    v2 = wp.mesh_get_point(mesh, face * 3 + 2)
    q, region = closest_on_triangle(p, v0, v1, v2)
    nt = wp.normalize(wp.cross(v1 - v0, v2 - v0))
    diff = p - q
    d = wp.length(diff)
    if d < 1.0e-4:
        toward = nt
        if wp.dot(p - v0, nt) < 0.0:
            toward = -nt
        return d, toward, toward
    raw = diff / d
    return d, edge_adjusted_normal(s, face, v0, v1, v2, q, raw, nt), raw


@wp.func
def face_in_reach(s: SimStateRef, p: wp.vec3, face: int) -> bool:
    """Whether mesh triangle `face` lies within the ball's contact threshold of centre p."""
    mesh = s.arena_mesh
    q, region = closest_on_triangle(
        p,
        wp.mesh_get_point(mesh, face * 3),
        wp.mesh_get_point(mesh, face * 3 + 1),
        wp.mesh_get_point(mesh, face * 3 + 2),
    )
    return wp.length_sq(p - q) < BALL_ARENA_RADIUS * BALL_ARENA_RADIUS


@wp.func
def plane_gap(p: wp.vec3, k: int) -> float:
    """Distance (uu) from p to RocketSim's arena plane k: 0 floor, 1 ceiling, 2 and 3 the side walls."""
    if k == 0:
        return p[2]
    if k == 1:
        return CEILING_PLANE_Z - p[2]
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
def contact_vec(s: SimStateRef, a: int, row: int, col: int) -> wp.vec3:
    return wp.vec3(s.ball_contacts[a, row, col], s.ball_contacts[a, row, col + 1], s.ball_contacts[a, row, col + 2])


@wp.func
def set_contact_vec(s: SimStateRef, a: int, row: int, col: int, v: wp.vec3):
    s.ball_contacts[a, row, col] = v[0]
    s.ball_contacts[a, row, col + 1] = v[1]
    s.ball_contacts[a, row, col + 2] = v[2]


@wp.func
def manifold_slot(s: SimStateRef, a: int, obj: int) -> int:
    """The ball's manifold slot for arena object `obj`, taking a free one if it has none (-1 if all are used)."""
    found = int(-1)  # noqa: UP018 (a variable for Warp, not a constant)
    free = int(-1)  # noqa: UP018 (a variable for Warp, not a constant)
    for m in range(BALL_MANIFOLDS):
        held = s.ball_manifold_object[a, m]
        if held == obj and found < 0:
            found = m
        if held < 0 and free < 0:
            free = m
    if found < 0 and free >= 0:
        found = free
        s.ball_manifold_object[a, free] = obj
        s.ball_manifold_count[a, free] = 0
    return found


@wp.func
def replaced_point(s: SimStateRef, a: int, m: int, offset: wp.vec3, distance: float) -> int:
    """Which of a full manifold's four points a new one replaces, as Bullet's sortCachedPoints: never the
    deepest, else the one whose replacement leaves the widest spread of points on the ball."""
    base = m * MANIFOLD_POINTS
    deepest = int(-1)  # noqa: UP018 (a variable for Warp, not a constant)
    depth = distance
    for i in range(MANIFOLD_POINTS):
        if s.ball_contacts[a, base + i, C_DISTANCE] < depth:
            deepest = i
            depth = s.ball_contacts[a, base + i, C_DISTANCE]
    p0 = contact_vec(s, a, base, C_OFFSET)
    p1 = contact_vec(s, a, base + 1, C_OFFSET)
    p2 = contact_vec(s, a, base + 2, C_OFFSET)
    p3 = contact_vec(s, a, base + 3, C_OFFSET)
    return widest_spread_slot(offset, p0, p1, p2, p3, deepest)


@wp.func
def widest_spread_slot(new: wp.vec3, p0: wp.vec3, p1: wp.vec3, p2: wp.vec3, p3: wp.vec3, deepest: int) -> int:
    """The area test of Bullet's sortCachedPoints for a full manifold of points p0..p3 and a new point: the
    slot whose point, replaced by the new one, leaves the widest spread (never `deepest`, -1 for none)."""
    res = wp.vec4(0.0)
    if deepest != 0:
        res[0] = wp.length_sq(wp.cross(new - p1, p3 - p2))
    if deepest != 1:
        res[1] = wp.length_sq(wp.cross(new - p0, p3 - p2))
    if deepest != 2:
        res[2] = wp.length_sq(wp.cross(new - p0, p3 - p1))
    if deepest != 3:
        res[3] = wp.length_sq(wp.cross(new - p0, p2 - p1))
    best = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
    for i in range(1, 4):
        if res[i] > res[best]:
            best = i
    return best


@wp.func
def add_ball_contact(s: SimStateRef, a: int, obj: int, offset: wp.vec3, normal: wp.vec3, gap: float):
    """Add a contact point to this tick's manifold of the ball with arena object `obj` (Bullet's
    addManifoldPoint; a full manifold replaces one of its points, see replaced_point). offset: the point on
    the ball relative to its centre (uu); normal: unit, from the arena; gap: signed distance (uu)."""
    m = manifold_slot(s, a, obj)
    if m < 0:
        return
    count = s.ball_manifold_count[a, m]
    i = count
    if count >= MANIFOLD_POINTS:
        i = replaced_point(s, a, m, offset, gap)
    else:
        s.ball_manifold_count[a, m] = count + 1
    row = m * MANIFOLD_POINTS + i
    set_contact_vec(s, a, row, C_OFFSET, offset)
    set_contact_vec(s, a, row, C_NORMAL, normal)
    s.ball_contacts[a, row, C_DISTANCE] = gap


@wp.func(inline=True)  # small, called once per tick: no call for a ball far from the arena
def ball_arena_contact(s: SimStateRef, a: int):
    """Bounce the ball off the arena as RocketSim does, step for step.

    Contacts: each arena object (the floor, ceiling and side-wall planes, and each collision-mesh file) has
    a manifold of up to four points with the ball, rebuilt every tick (RocketSim keeps none from the tick
    before). Every plane and mesh triangle within Bullet's contact threshold of the ball (BALL_ARENA_RADIUS
    of its centre) adds a point, the triangles of a file in the order Bullet's BVH visits them; a full
    manifold keeps the deepest point and the widest spread (sortCachedPoints). A mesh point's normal is
    Bullet's internal-edge adjustment of the direction from the triangle (mesh_contact).

    Response: one contact along the mean of all the points' normals (RocketSim's averaged "special"
    contact, not re-normalised) with restitution 0.6 of the approach speed before this tick's gravity and
    friction 0.35 in one direction, solved by SOLVER_ITERATIONS sequential-impulse sweeps; then each
    penetrating point pushes the ball out (push_ball_out)."""
    p = s.ball_pos[a]
    for m in range(BALL_MANIFOLDS):
        s.ball_manifold_object[a, m] = -1
    # No plane or triangle in reach (the tests below): no point, and resolve_ball_contacts would do nothing. A
    # gap equal to the threshold is a contact, as Bullet's `depth > threshold` rejection keeps it: a ball set at
    # rest (BALL_ARENA_RADIUS up) touches the floor from its first tick.
    near = mesh_in_reach(s, p)
    for plane in range(4):
        if plane_gap(p, plane) - BALL_RADIUS <= BALL_ARENA_RADIUS - BALL_RADIUS:
            near = True
    if near:
        ball_arena_contact_near(s, a, p)


@wp.func(inline=False)  # large: kept out of the step kernel, which calls it only for a ball near the arena
def ball_arena_contact_near(s: SimStateRef, a: int, p: wp.vec3):
    """ball_arena_contact's contact points and response for a ball at p (uu) near a plane or the meshes."""
    for plane in range(4):
        gap = plane_gap(p, plane) - BALL_RADIUS
        if gap <= BALL_ARENA_RADIUS - BALL_RADIUS:
            n = plane_normal(plane)
            offset = -n * BALL_RADIUS
            add_ball_contact(s, a, PLANE_OBJECT + plane, offset, n, gap)
    if mesh_in_reach(s, p):
        add_mesh_contacts(s, a, p)
    resolve_ball_contacts(s, a)


@wp.func
def mesh_in_reach(s: SimStateRef, p: wp.vec3) -> bool:
    """False when no mesh triangle can lie within the ball's contact reach of centre p (arena_reach_grid)."""
    cell = (p - s.arena_grid_origin) / REACH_GRID_CELL
    i = int(wp.floor(cell[0]))
    j = int(wp.floor(cell[1]))
    k = int(wp.floor(cell[2]))
    grid = s.arena_reach_grid
    if i < 0 or j < 0 or k < 0 or i >= grid.shape[0] or j >= grid.shape[1] or k >= grid.shape[2]:
        return True
    return grid[i, j, k] != 0


@wp.func
def add_mesh_contacts(s: SimStateRef, a: int, p: wp.vec3):
    """Add the ball's contact points with the collision meshes (centre p) to this tick's manifolds."""
    mesh = s.arena_mesh
    # The triangles in reach, in the order Bullet visits them (by file, then BVH rank): a full manifold
    # keeps points by that order.
    faces = BallFaces()
    keys = BallFaces()
    found = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
    query = wp.mesh_query_sphere(mesh, p, BALL_ARENA_RADIUS)
    face = int(0)  # noqa: UP018 (mesh_query_next writes the face index into it)
    while wp.mesh_query_next(query, face):
        if found < MAX_BALL_FACES and face_in_reach(s, p, face):
            key = s.arena_face_part[face] * 65536 + s.arena_face_order[face]
            i = found
            while i > 0 and keys[i - 1] > key:
                keys[i] = keys[i - 1]
                faces[i] = faces[i - 1]
                i = i - 1
            keys[i] = key
            faces[i] = face
            found = found + 1
    for k in range(found):
        face = faces[k]
        d, nc, raw = mesh_contact(s, p, face)
        if d < BALL_ARENA_RADIUS and d > 1.0e-4:
            gap = d - BALL_RADIUS
            offset = -raw * BALL_RADIUS
            add_ball_contact(s, a, s.arena_face_part[face], offset, nc, gap)


@wp.func
def plane_space(n: wp.vec3) -> wp.vec3:
    """A unit vector perpendicular to n (Bullet's btPlaneSpace1, first axis)."""
    if wp.abs(n[2]) > 0.7071067811865476:
        a = n[1] * n[1] + n[2] * n[2]
        k = 1.0 / wp.sqrt(a)
        return wp.vec3(0.0, -n[2] * k, n[1] * k)
    a = n[0] * n[0] + n[1] * n[1]
    k = 1.0 / wp.sqrt(a)
    return wp.vec3(-n[1] * k, n[0] * k, 0.0)


@wp.func
def resolve_ball_contacts(s: SimStateRef, a: int):
    """Apply this tick's ball-arena manifolds to the ball: the averaged contact, then the push-out."""
    n_sum = wp.vec3(0.0)
    count = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
    for m in range(BALL_MANIFOLDS):
        if s.ball_manifold_object[a, m] >= 0:
            for i in range(s.ball_manifold_count[a, m]):
                n_sum = n_sum + contact_vec(s, a, m * MANIFOLD_POINTS + i, C_NORMAL)
                count = count + 1
    if count == 0 or wp.length(n_sum) < 1.0e-6:
        return
    # RocketSim's averaged contact: the mean of the normals (not re-normalised), at the mean lever arm (every
    # point lies on the ball, BALL_RADIUS from its centre), solved by Bullet's sequential impulses.
    n = n_sum / float(count)
    r = -n * BALL_RADIUS
    v = s.ball_vel[a]
    w = s.ball_ang[a]
    # Restitution from the velocity before this tick's gravity (Bullet applies it as an external impulse).
    approach = wp.dot(n, v - wp.vec3(0.0, 0.0, GRAVITY_Z * TICK_TIME) + wp.cross(w, r))
    target = float(0.0)  # noqa: UP018 (a variable for Warp, not a constant)
    if wp.abs(approach) >= RESTITUTION_MIN_SPEED:
        target = wp.max(-BALL_RESTITUTION * approach, 0.0)
    normal_rhs = (target - wp.dot(n, v)) * BALL_MASS  # r is parallel to n: no angular part
    # One friction direction, from the slip velocity at setup (Bullet's velocity-dependent direction).
    slip = v + wp.cross(w, r)
    lateral = slip - n * wp.dot(n, slip)
    slide_dir = wp.vec3(0.0)
    if wp.length_sq(lateral) > 1.0e-12:
        slide_dir = wp.normalize(lateral)
    else:
        slide_dir = plane_space(n)
    r_cross_d = wp.cross(r, slide_dir)
    friction_inv = 1.0 / (1.0 / BALL_MASS + BALL_INV_INERTIA * wp.length_sq(r_cross_d))
    friction_rhs = -(wp.dot(slide_dir, v) + wp.dot(r_cross_d, w)) * friction_inv
    dv = wp.vec3(0.0)
    dw = wp.vec3(0.0)
    normal_impulse = float(0.0)  # noqa: UP018 (a variable for Warp, not a constant)
    friction_impulse = float(0.0)  # noqa: UP018 (a variable for Warp, not a constant)
    settled = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
    for _it in range(SOLVER_ITERATIONS):
        if settled == 0:  # a sweep that changed nothing would change nothing again
            total = wp.max(normal_impulse + normal_rhs - wp.dot(n, dv) * BALL_MASS, 0.0)
            normal_step = total - normal_impulse
            dv = dv + n * (normal_step / BALL_MASS)
            normal_impulse = total
            friction_step = float(0.0)  # noqa: UP018 (a variable for Warp, not a constant)
            if normal_impulse > 0.0:
                limit_f = BALL_FRICTION * normal_impulse
                total = friction_impulse + friction_rhs - (wp.dot(slide_dir, dv) + wp.dot(r_cross_d, dw)) * friction_inv
                total = wp.clamp(total, -limit_f, limit_f)
                friction_step = total - friction_impulse
                dv = dv + slide_dir * (friction_step / BALL_MASS)
                dw = dw + r_cross_d * (friction_step * BALL_INV_INERTIA)
                friction_impulse = total
            if normal_step == 0.0 and friction_step == 0.0:
                settled = 1
    s.ball_vel[a] = v + dv
    s.ball_ang[a] = w + dw
    push_ball_out(s, a)


@wp.func(inline=True)  # one call site: inlined, no second call for a ball at the arena
def push_ball_out(s: SimStateRef, a: int):
    """Bullet's split-impulse position correction for the ball's penetrating contact points: sequential
    push impulses (SOLVER_ITERATIONS sweeps, each point pushing out, never pulling in) until every point
    has recovered PUSH_OUT_FRACTION of its penetration along its normal; the ball's centre moves by the
    resulting push velocity over one tick (its turn is not simulated)."""
    penetrating = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
    for m in range(BALL_MANIFOLDS):
        if s.ball_manifold_object[a, m] >= 0:
            for i in range(s.ball_manifold_count[a, m]):
                if s.ball_contacts[a, m * MANIFOLD_POINTS + i, C_DISTANCE] < 0.0:
                    penetrating = penetrating + 1
    if penetrating == 0:
        return
    push = wp.vec3(0.0)
    turn = wp.vec3(0.0)
    applied = ContactImpulses()
    settled = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
    for _it in range(SOLVER_ITERATIONS):
        if settled == 0:
            changed = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
            for m in range(BALL_MANIFOLDS):
                if s.ball_manifold_object[a, m] >= 0:
                    for i in range(s.ball_manifold_count[a, m]):
                        row = m * MANIFOLD_POINTS + i
                        gap = s.ball_contacts[a, row, C_DISTANCE]
                        if gap < 0.0:
                            n = contact_vec(s, a, row, C_NORMAL)
                            r_cross_n = wp.cross(contact_vec(s, a, row, C_OFFSET), n)
                            inv = 1.0 / (1.0 / BALL_MASS + BALL_INV_INERTIA * wp.length_sq(r_cross_n))
                            rhs = -gap * PUSH_OUT_FRACTION / TICK_TIME * inv
                            delta = rhs - (wp.dot(n, push) + wp.dot(r_cross_n, turn)) * inv
                            total = wp.max(applied[row] + delta, 0.0)
                            delta = total - applied[row]
                            applied[row] = total
                            if delta != 0.0:
                                changed = 1
                            push = push + n * (delta / BALL_MASS)
                            turn = turn + r_cross_n * (delta * BALL_INV_INERTIA)
            if changed == 0:
                settled = 1
    s.ball_pos[a] = s.ball_pos[a] + push * TICK_TIME
