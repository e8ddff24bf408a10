"""A car's contact manifolds with the arena's collision meshes, made anew each tick as RocketSim's Bullet makes
them.

RocketSim adds each soccar .cmf file as its own static body, so a car holds one manifold per mesh file it is
near (at most CAR_MESH_MANIFOLDS here). Its broadphase removes every pair and adds it again at each step, so
each manifold starts empty every tick: no point is kept from the tick before, refreshed or warm-started.
Each tick Bullet visits, in its BVH's order, every triangle of the file whose box overlaps the bounding box
of the car's collided hitbox, and answers the hitbox against the triangle with one point
(btConvexConvexAlgorithm: no polyhedral features and no perturbation in RocketSim's configuration). A point
within the contact breaking threshold joins the manifold (RocketSim never merges it with another; a full
manifold gives up the point whose loss leaves the largest area, never the deepest), its normal corrected at
an edge shared with a neighbour as btAdjustInternalEdgeContacts does (the point on the mesh moved to keep
the gap).

The point. Where the box's core (HITBOX_CORE) and the triangle are apart, Bullet's GJK gives the closest
points (rocketrl.sim.warp.gjk replays it step by step, so where a box face lies parallel to the triangle the
same point of the patch is picked), moved out by the box's rounded margin (HITBOX_MARGIN). Where the cores
overlap Bullet asks EPA on the rounded box; this takes the least overlap over the 13 separating axes of a
box and a triangle with the feature points of that axis as witnesses. Against Bullet's EPA on 2,093 random
overlapping cases (`python -m rocketrl.diagnostics.rocketsim_probe --gjk 4000 --gjk-depth 0.3`): the same depth
within 0.0035 uu, the same normal within 1e-4 in 2,080, and the same point (a median 0.004 uu off) unless a box
face lies parallel to the triangle (there EPA picks a point inside the patch, this a corner, a median 61 uu
apart). Where GJK leaves the answer to EPA with the cores apart (within 0.01 Bullet units, or out of steps),
this takes the closest features of the cores (core_apart).

Storage: car_mesh_part (A, C, CAR_MESH_MANIFOLDS) the mesh file of each manifold (-1 free); car_mesh_count
(A, C, CAR_MESH_MANIFOLDS); car_mesh_points (A, C, CAR_MESH_MANIFOLDS * MANIFOLD_POINTS, MESH_POINT_FLOATS),
columns M_*: the point on the car (body axes, relative to the car origin, uu), the point on the mesh (world
uu), the normal (unit, from the mesh towards the car), the normal impulse the solver gave it (diagnostics)
and its distance (uu).
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.box_box import BT_UNIT
from rocketrl.sim.warp.collisions import widest_spread_slot
from rocketrl.sim.warp.constants import HITBOX_CORE, HITBOX_MARGIN
from rocketrl.sim.warp.gjk import GjkResult, gjk_box_triangle
from rocketrl.sim.warp.layout import (
    CAR_MESH_MANIFOLDS,
    F_CONTACT_NX,
    F_CONTACT_NY,
    F_CONTACT_NZ,
    M_DISTANCE,
    M_IMPULSE,
    M_LOCAL,
    M_NORMAL,
    M_ON_MESH,
    MANIFOLD_POINTS,
    SimStateRef,
)
from rocketrl.sim.warp.mesh_edges import closest_on_triangle, edge_adjusted_normal, triangle_edge
from rocketrl.sim.warp.near_faces import (
    MAX_MEETING_FACES,
    MeetingFaces,
    hitbox_extent,
    listed_faces_meeting,
    listed_for,
)

MAX_CAR_FACES = MAX_MEETING_FACES
"""Mesh triangles examined per car and tick at most (the size of CarFaces), nearest to Bullet's order first."""
CarFaces = MeetingFaces


@wp.func
def mesh_vec(s: SimStateRef, a: int, c: int, row: int, col: int) -> wp.vec3:
    return wp.vec3(
        s.car_mesh_points[a, c, row, col], s.car_mesh_points[a, c, row, col + 1], s.car_mesh_points[a, c, row, col + 2]
    )


@wp.func
def set_mesh_vec(s: SimStateRef, a: int, c: int, row: int, col: int, v: wp.vec3):
    s.car_mesh_points[a, c, row, col] = v[0]
    s.car_mesh_points[a, c, row, col + 1] = v[1]
    s.car_mesh_points[a, c, row, col + 2] = v[2]


@wp.func
def segment_closest(p1: wp.vec3, q1: wp.vec3, p2: wp.vec3, q2: wp.vec3):
    """Closest points of segments p1q1 and p2q2 (Ericson's ClosestPtSegmentSegment)."""
    d1 = q1 - p1
    d2 = q2 - p2
    r = p1 - p2
    a = wp.dot(d1, d1)
    e = wp.dot(d2, d2)
    f = wp.dot(d2, r)
    s = float(0.0)  # noqa: UP018 (a variable for Warp)
    t = float(0.0)  # noqa: UP018 (a variable for Warp)
    if a <= 1.0e-9 and e <= 1.0e-9:
        return p1, p2
    if a <= 1.0e-9:
        t = wp.clamp(f / e, 0.0, 1.0)
    else:
        cc = wp.dot(d1, r)
        if e <= 1.0e-9:
            s = wp.clamp(-cc / a, 0.0, 1.0)
        else:
            b = wp.dot(d1, d2)
            denom = a * e - b * b
            if denom > 1.0e-9:
                s = wp.clamp((b * f - cc * e) / denom, 0.0, 1.0)
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = wp.clamp(-cc / a, 0.0, 1.0)
            elif t > 1.0:
                t = 1.0
                s = wp.clamp((b - cc) / a, 0.0, 1.0)
    return p1 + d1 * s, p2 + d2 * t


@wp.func
def box_vertex(h: wp.vec3, k: int) -> wp.vec3:
    """Vertex k (bit 0: +x, bit 1: +y, bit 2: +z) of the box of half extents h centred at the origin."""
    return wp.vec3(
        h[0] * float(2 * (k & 1) - 1), h[1] * float(2 * ((k >> 1) & 1) - 1), h[2] * float(2 * ((k >> 2) & 1) - 1)
    )


@wp.func
def box_edge_end(h: wp.vec3, e: int):
    """Ends of edge e (0..11: along axis e // 4, the other two signs from e % 4) of the box of half extents h."""
    axis = e // 4
    bits = e % 4
    u = float(2 * (bits & 1) - 1)
    v = float(2 * ((bits >> 1) & 1) - 1)
    lo = wp.vec3(0.0)
    if axis == 0:
        lo = wp.vec3(-h[0], u * h[1], v * h[2])
    elif axis == 1:
        lo = wp.vec3(u * h[0], -h[1], v * h[2])
    else:
        lo = wp.vec3(u * h[0], v * h[1], -h[2])
    hi = lo
    hi[axis] = h[axis]
    return lo, hi


@wp.func
def clamp_to_box(p: wp.vec3, h: wp.vec3) -> wp.vec3:
    return wp.vec3(wp.clamp(p[0], -h[0], h[0]), wp.clamp(p[1], -h[1], h[1]), wp.clamp(p[2], -h[2], h[2]))


@wp.func
def core_apart(t0: wp.vec3, t1: wp.vec3, t2: wp.vec3):
    """Closest points (on the box, on the triangle) of the box core (half extents HITBOX_CORE, box frame)
    and the triangle t0 t1 t2 (box frame), for cores apart (module docstring)."""
    h = HITBOX_CORE
    best = float(1.0e30)  # noqa: UP018 (a variable for Warp)
    on_box = wp.vec3(0.0)
    on_tri = wp.vec3(0.0)
    for k in range(8):
        b = box_vertex(h, k)
        q, region = closest_on_triangle(b, t0, t1, t2)
        d = wp.length_sq(b - q)
        if d < best:
            best = d
            on_box = b
            on_tri = q
    for i in range(3):
        t = t0
        if i == 1:
            t = t1
        elif i == 2:
            t = t2
        b = clamp_to_box(t, h)
        d = wp.length_sq(b - t)
        if d < best:
            best = d
            on_box = b
            on_tri = t
    for e in range(12):
        lo, hi = box_edge_end(h, e)
        for j in range(3):
            a, b = triangle_edge(t0, t1, t2, j)
            pb, pt = segment_closest(lo, hi, a, b)
            d = wp.length_sq(pb - pt)
            if d < best:
                best = d
                on_box = pb
                on_tri = pt
    return on_box, on_tri


@wp.func
def axis_overlap(t0: wp.vec3, t1: wp.vec3, t2: wp.vec3, axis: wp.vec3):
    """Separation of the box core and the triangle along unit `axis` (negative: overlap) and the axis turned to
    point from the triangle towards the box (box frame)."""
    h = HITBOX_CORE
    r = wp.abs(axis[0]) * h[0] + wp.abs(axis[1]) * h[1] + wp.abs(axis[2]) * h[2]
    p0 = wp.dot(t0, axis)
    p1 = wp.dot(t1, axis)
    p2 = wp.dot(t2, axis)
    lo = wp.min(p0, wp.min(p1, p2))
    hi = wp.max(p0, wp.max(p1, p2))
    above = -r - hi
    below = lo - r
    if above >= below:
        return above, axis
    return below, -axis


@wp.func
def core_overlap(t0: wp.vec3, t1: wp.vec3, t2: wp.vec3, stop: float):
    """For overlapping cores (box frame): the separation along the axis of least overlap (<= 0), that axis
    (from the triangle towards the box) and its witness points (on the box, on the triangle). Returns a
    positive separation when some axis separates the cores: at once, without witnesses, once one reaches
    `stop` (the separation along any axis is at most the cores' distance)."""
    h = HITBOX_CORE
    tri_n = wp.normalize(wp.cross(t1 - t0, t2 - t0))
    best, n = axis_overlap(t0, t1, t2, tri_n)
    if best >= stop:
        return best, n, wp.vec3(0.0), wp.vec3(0.0)
    kind = int(0)  # noqa: UP018 (0 the triangle's normal, 1 a box face, 2 an edge pair)
    face = int(0)  # noqa: UP018 (a variable for Warp)
    tri_edge = int(0)  # noqa: UP018 (a variable for Warp)
    for i in range(3):
        axis = wp.vec3(0.0)
        axis[i] = 1.0
        gap, m = axis_overlap(t0, t1, t2, axis)
        if gap > best:
            best = gap
            n = m
            kind = 1
            face = i
    if best >= stop:
        return best, n, wp.vec3(0.0), wp.vec3(0.0)
    for i in range(3):
        for j in range(3):
            a, b = triangle_edge(t0, t1, t2, j)
            axis = wp.vec3(0.0)
            axis[i] = 1.0
            axis = wp.cross(axis, b - a)
            length = wp.length(axis)
            if length > 1.0e-3 * wp.length(b - a):
                gap, m = axis_overlap(t0, t1, t2, axis / length)
                if gap > best:
                    best = gap
                    n = m
                    kind = 2
                    face = i
                    tri_edge = j
    on_box = wp.vec3(0.0)
    on_tri = wp.vec3(0.0)
    if kind == 0:
        # The box's vertex deepest towards the triangle, and its foot on the triangle's plane.
        on_box = wp.vec3(-wp.sign(n[0]) * h[0], -wp.sign(n[1]) * h[1], -wp.sign(n[2]) * h[2])
        on_tri = on_box - n * wp.dot(on_box - t0, n)
    elif kind == 1:
        # The triangle's vertex deepest into the box face, and its foot on the face.
        on_tri = t0
        if wp.dot(t1, n) > wp.dot(on_tri, n):
            on_tri = t1
        if wp.dot(t2, n) > wp.dot(on_tri, n):
            on_tri = t2
        on_box = on_tri + n * best
    else:
        # The box edge along `face` that supports -n against the triangle's edge.
        lo = wp.vec3(-wp.sign(n[0]) * h[0], -wp.sign(n[1]) * h[1], -wp.sign(n[2]) * h[2])
        hi = lo
        lo[face] = -h[face]
        hi[face] = h[face]
        a, b = triangle_edge(t0, t1, t2, tri_edge)
        on_box, on_tri = segment_closest(lo, hi, a, b)
    return best, n, on_box, on_tri


@wp.func
def set_contact_normal(s: SimStateRef, a: int, c: int, n: wp.vec3):
    """Record n as the car's latest arena contact normal (F_CONTACT_N*), as RocketSim's contact callback records
    each point's normal in turn; the last one made in a tick steers the next tick's auto-roll and auto-flip."""
    s.car_f[a, c, F_CONTACT_NX] = n[0]
    s.car_f[a, c, F_CONTACT_NY] = n[1]
    s.car_f[a, c, F_CONTACT_NZ] = n[2]


@wp.func
def manifold_of(s: SimStateRef, a: int, c: int, part: int) -> int:
    """The car's manifold slot for mesh file `part`, taking a free one if it has none (-1 if all are used)."""
    free = int(-1)  # noqa: UP018 (a variable for Warp)
    for m in range(CAR_MESH_MANIFOLDS):
        if s.car_mesh_part[a, c, m] == part:
            return m
        if free < 0 and s.car_mesh_part[a, c, m] < 0:
            free = m
    if free >= 0:
        s.car_mesh_part[a, c, free] = part
        s.car_mesh_count[a, c, free] = 0
    return free


@wp.func(inline=True)  # one call site, once per triangle in reach: inlined, no call per triangle
def add_mesh_point(
    s: SimStateRef, a: int, c: int, face: int, pos: wp.vec3, q: wp.quat, centre: wp.vec3, axes: wp.mat33, reach: float
):
    """The hitbox's one point against mesh triangle `face` this tick (module docstring), added to the car's
    manifold with the triangle's file when within `reach`."""
    mesh = s.arena_mesh
    v0 = wp.mesh_get_point(mesh, face * 3)
    v1 = wp.mesh_get_point(mesh, face * 3 + 1)
    v2 = wp.mesh_get_point(mesh, face * 3 + 2)
    t0 = axes * (v0 - centre)
    t1 = axes * (v1 - centre)
    t2 = axes * (v2 - centre)
    sep, n_box, on_box, on_tri = core_overlap(t0, t1, t2, reach + HITBOX_MARGIN)
    if sep > reach + HITBOX_MARGIN:
        return  # the cores are at least that far apart: no point
    distance = float(0.0)  # noqa: UP018 (a variable for Warp)
    to_world = wp.transpose(axes)
    normal = wp.vec3(0.0)
    on_mesh = wp.vec3(0.0)
    gjk = GjkResult()
    gjk.valid = 0
    if sep > 0.0:
        gjk = gjk_box_triangle(
            centre / BT_UNIT, to_world, HITBOX_CORE / BT_UNIT, HITBOX_MARGIN / BT_UNIT,
            v0 / BT_UNIT, v1 / BT_UNIT, v2 / BT_UNIT, (HITBOX_MARGIN + reach) / BT_UNIT,
        )  # fmt: skip
    if gjk.valid != 0:
        distance = gjk.distance * BT_UNIT
        normal = gjk.normal
        on_mesh = gjk.on_triangle * BT_UNIT
    else:
        if sep > 0.0:
            on_box, on_tri = core_apart(t0, t1, t2)
            gap = wp.length(on_box - on_tri)
            if gap - HITBOX_MARGIN > reach:
                return
            n_box = (on_box - on_tri) / gap
            distance = gap - HITBOX_MARGIN
        else:
            distance = sep - HITBOX_MARGIN
        normal = to_world * n_box
        on_mesh = centre + to_world * on_tri
    if distance > reach:
        return
    on_car = on_mesh + normal * distance
    tri_n = wp.normalize(wp.cross(v1 - v0, v2 - v0))
    adjusted = edge_adjusted_normal(s, face, v0, v1, v2, on_mesh, normal, tri_n)
    on_mesh = on_car - adjusted * distance
    m = manifold_of(s, a, c, s.arena_face_part[face])
    if m < 0:
        return
    set_contact_normal(s, a, c, normal)  # RocketSim's callback sees the normal before the edge correction
    local = wp.quat_rotate_inv(q, on_car - pos)
    base = m * MANIFOLD_POINTS
    count = s.car_mesh_count[a, c, m]
    slot = count
    if count == MANIFOLD_POINTS:
        deepest = int(-1)  # noqa: UP018 (a variable for Warp)
        depth = distance
        for k in range(MANIFOLD_POINTS):
            d = s.car_mesh_points[a, c, base + k, M_DISTANCE]
            if d < depth:
                deepest = k
                depth = d
        slot = widest_spread_slot(
            local,
            mesh_vec(s, a, c, base, M_LOCAL),
            mesh_vec(s, a, c, base + 1, M_LOCAL),
            mesh_vec(s, a, c, base + 2, M_LOCAL),
            mesh_vec(s, a, c, base + 3, M_LOCAL),
            deepest,
        )
        if slot < 0:
            return
    else:
        s.car_mesh_count[a, c, m] = count + 1
    row = base + slot
    set_mesh_vec(s, a, c, row, M_LOCAL, local)
    set_mesh_vec(s, a, c, row, M_ON_MESH, on_mesh)
    set_mesh_vec(s, a, c, row, M_NORMAL, adjusted)
    s.car_mesh_points[a, c, row, M_IMPULSE] = 0.0
    s.car_mesh_points[a, c, row, M_DISTANCE] = distance


@wp.func
def update_mesh_manifolds(
    s: SimStateRef, a: int, c: int, pos: wp.vec3, q: wp.quat, centre: wp.vec3, axes: wp.mat33, reach: float
):
    """This tick's mesh points of the car (hitbox centred at `centre`, rows of `axes` its axes), in fresh manifolds,
    added in Bullet's order (by mesh file, then the file's BVH order). Bullet refreshes each manifold after its
    file's triangles, which changes nothing for points made at the pose they are refreshed at."""
    extent = hitbox_extent(axes)
    lo = centre - extent
    hi = centre + extent
    found_faces = CarFaces()
    found = int(0)  # noqa: UP018 (a variable for Warp)
    listed = listed_for(s, a, c, lo, hi)
    if listed:
        # The car's near-face list holds every triangle the BVH query below would give: the same ones, in
        # the list's order; more than MAX_CAR_FACES, and the BVH query decides which it keeps.
        found_faces, found = listed_faces_meeting(s, a, c, lo, hi)
        listed = found <= MAX_CAR_FACES
    if not listed:
        found = int(0)  # noqa: UP018 (a variable for Warp)
        query = wp.mesh_query_aabb(s.arena_mesh, lo, hi)
        face = int(0)  # noqa: UP018 (mesh_query_aabb_next writes the face index into it)
        while wp.mesh_query_aabb_next(query, face):
            if found < MAX_CAR_FACES:
                found_faces[found] = face
                found = found + 1
    # Bullet's order: by mesh file, then the file's BVH order.
    faces = CarFaces()
    keys = CarFaces()
    for n in range(found):
        face = found_faces[n]
        key = s.arena_face_part[face] * 1000000 + s.arena_face_order[face]
        k = n
        for _back in range(n):
            if keys[k - 1] > key:
                keys[k] = keys[k - 1]
                faces[k] = faces[k - 1]
                k = k - 1
        keys[k] = key
        faces[k] = face
    clear_mesh_manifolds(s, a, c)  # every manifold starts empty (module docstring)
    for i in range(found):
        add_mesh_point(s, a, c, faces[i], pos, q, centre, axes, reach)


@wp.func
def clear_mesh_manifolds(s: SimStateRef, a: int, c: int):
    """Forget the car's mesh contacts (before this tick's, or when it is far from every mesh)."""
    for m in range(CAR_MESH_MANIFOLDS):
        s.car_mesh_part[a, c, m] = -1
        s.car_mesh_count[a, c, m] = 0
