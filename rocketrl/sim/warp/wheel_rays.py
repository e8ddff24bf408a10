"""RocketSim's wheel rays against the arena: the four wheels' suspension rays cast once per tick against
the floor, ceiling and side-wall planes and the soccar collision meshes.

RocketSim casts each ray with Bullet's btDefaultVehicleRaycaster (a closest-hit world ray test, the car
itself ignored) from the wheel's suspension connection point along the car's -up for rest length + travel
+ radius - SUSPENSION_SUBTRACTION. A triangle hit reports the triangle's unit normal turned towards the
ray's start (btTriangleRaycastCallback without kF_KeepUnflippedNormal); the contact point is the start
moved by the hit fraction of the ray. The arena planes are RocketSim's: z = 0 (up), z = CEILING_PLANE_Z
(down), x = -EXTENT_X (+x) and x = +EXTENT_X (-x). Rays do not hit the ball or other cars here (Bullet's
would, a case this model leaves out).

Lengths in uu; wheel k: 0 front right, 1 front left, 2 back right, 3 back left.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.collisions import mesh_in_reach, plane_normal
from rocketrl.sim.warp.constants import (
    BACK_SUSPENSION_REST,
    BACK_WHEEL_OFFSET,
    BACK_WHEEL_RADIUS,
    CEILING_PLANE_Z,
    EXTENT_X,
    FRONT_SUSPENSION_REST,
    FRONT_WHEEL_OFFSET,
    FRONT_WHEEL_RADIUS,
    MAX_SUSPENSION_TRAVEL,
    SUSPENSION_SUBTRACTION,
)
from rocketrl.sim.warp.layout import SimStateRef
from rocketrl.sim.warp.near_faces import (
    MAX_MEETING_FACES,
    MeetingFaces,
    box_axes,
    face_meets,
    hitbox_centre,
    hitbox_extent,
    list_near_faces,
    listed_faces_meeting,
)

WheelRows = wp.types.matrix(shape=(4, 3), dtype=wp.float32)
"""One 3-vector per wheel (row k: wheel k)."""


@wp.struct
class WheelHits:
    """The four wheel rays of one tick, cast from the car's pose at the tick's start."""

    hit: wp.vec4
    """1 where wheel k's ray reaches the arena, else 0."""
    contact: WheelRows
    """Contact point (uu; the ray's end without a hit)."""
    normal: WheelRows
    """Unit surface normal at the contact, towards the ray's start (the car's up without a hit)."""
    trace: wp.vec4
    """Length (uu) along the car's up from the connection point to the contact (0 without a hit)."""
    hard_point: WheelRows
    """Suspension connection point (uu)."""


@wp.func
def wheel_offset(k: int) -> wp.vec3:
    """Suspension connection point (body axes, uu) of wheel k."""
    o = FRONT_WHEEL_OFFSET
    if k >= 2:
        o = BACK_WHEEL_OFFSET
    if k % 2 == 1:
        o = wp.vec3(o[0], -o[1], o[2])
    return o


@wp.func
def wheel_radius(k: int) -> float:
    if k < 2:
        return FRONT_WHEEL_RADIUS
    return BACK_WHEEL_RADIUS


@wp.func
def suspension_rest(k: int) -> float:
    if k < 2:
        return FRONT_SUSPENSION_REST
    return BACK_SUSPENSION_REST


@wp.func
def ray_length(k: int) -> float:
    """Length (uu) of wheel k's ray: rest length + travel + radius - SUSPENSION_SUBTRACTION."""
    return suspension_rest(k) + MAX_SUSPENSION_TRAVEL + wheel_radius(k) - SUSPENSION_SUBTRACTION


@wp.func
def plane_point(k: int) -> wp.vec3:
    """A point of arena plane k: 0 floor, 1 ceiling, 2 the x = -EXTENT_X wall, 3 the x = +EXTENT_X wall."""
    if k == 0:
        return wp.vec3(0.0)
    if k == 1:
        return wp.vec3(0.0, 0.0, CEILING_PLANE_Z)
    if k == 2:
        return wp.vec3(-EXTENT_X, 0.0, 0.0)
    return wp.vec3(EXTENT_X, 0.0, 0.0)


@wp.func_native(
    """float t, u, v, sign;
wp::vec3 n;
if (wp::intersect_ray_tri_woop(start, dir, a, b, c, t, u, v, sign, &n))
    return t;
return -1.0f;"""
)
def ray_triangle_t(start: wp.vec3, dir: wp.vec3, a: wp.vec3, b: wp.vec3, c: wp.vec3) -> float:
    """The distance along unit `dir` from `start` at which the ray meets triangle (a, b, c), -1 if it misses
    (Warp's watertight ray-triangle test, the one wp.mesh_query_ray runs on each triangle)."""
    ...


@wp.func
def plane_hit(start: wp.vec3, end: wp.vec3):
    """Closest arena-plane hit of the segment start -> end: (hit 0/1, fraction in [0, 1], unit normal towards
    start)."""
    best = float(1.0)  # noqa: UP018 (a variable for Warp, not a constant)
    normal = wp.vec3(0.0, 0.0, 1.0)
    hit = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
    for k in range(4):
        n = plane_normal(k)
        o = plane_point(k)
        dist_a = wp.dot(n, start - o)
        dist_b = wp.dot(n, end - o)
        if dist_a * dist_b < 0.0:
            fraction = dist_a / (dist_a - dist_b)
            if fraction < best:
                best = fraction
                hit = 1
                normal = n
                if dist_a <= 0.0:
                    normal = -n
    return hit, best, normal


@wp.func
def mesh_hit_normal(s: SimStateRef, face: int, start: wp.vec3) -> wp.vec3:
    """Unit normal of mesh triangle `face`, turned towards `start` (btTriangleRaycastCallback)."""
    mesh = s.arena_mesh
    v0 = wp.mesh_get_point(mesh, face * 3)
    v1 = wp.mesh_get_point(mesh, face * 3 + 1)
    v2 = wp.mesh_get_point(mesh, face * 3 + 2)
    n = wp.normalize(wp.cross(v1 - v0, v2 - v0))
    if wp.dot(n, start - v0) <= 0.0:
        n = -n
    return n


@wp.func
def nearer_face(
    s: SimStateRef, f: int, start: wp.vec3, direction: wp.vec3, lo: wp.vec3, hi: wp.vec3, found_t: float, found: int
):
    """(distance, face) of the nearer of the hit so far (found_t uu along unit `direction`, face `found`) and
    mesh triangle f, whose bounds must meet the segment's box lo..hi; the hit so far stays on a tie."""
    if face_meets(s, f, lo, hi):
        mesh = s.arena_mesh
        t = ray_triangle_t(
            start,
            direction,
            wp.mesh_get_point(mesh, f * 3),
            wp.mesh_get_point(mesh, f * 3 + 1),
            wp.mesh_get_point(mesh, f * 3 + 2),
        )
        if t < found_t and t >= 0.0:
            return t, f
    return found_t, found


@wp.func
def cast_wheel_ray(
    s: SimStateRef, start: wp.vec3, end: wp.vec3, in_reach: bool, listed: bool, faces: MeetingFaces, num_faces: int
):
    """Closest arena hit of the segment start -> end: (hit 0/1, fraction of the segment in [0, 1], unit
    normal towards start). The planes are tested first and a later surface must be strictly closer, as in
    Bullet's closest-hit callback. The meshes are tested only `in_reach`, on the triangles whose bounds meet the
    segment's: when `listed`, those among the first num_faces of `faces` (which hold them all, in the order of
    the car's near-face list, rocketrl.sim.warp.near_faces), else those a BVH box query over the segment finds.
    Both orders are the BVH's own (a box query visits the tree in one fixed order), and the nearest triangle
    the ray meets at a distance >= 0 wins, the first of equals: a ray through an edge shared by two triangles
    gets the same one either way."""
    hit, best, normal = plane_hit(start, end)
    if in_reach:
        delta = end - start
        length = wp.length(delta)
        direction = delta / length
        lo = wp.min(start, end)
        hi = wp.max(start, end)
        found_t = length * best
        found_face = int(-1)  # noqa: UP018 (a variable for Warp, not a constant)
        if listed:
            for i in range(num_faces):
                found_t, found_face = nearer_face(s, faces[i], start, direction, lo, hi, found_t, found_face)
        else:
            query = wp.mesh_query_aabb(s.arena_mesh, lo, hi)
            f = int(0)  # noqa: UP018 (mesh_query_aabb_next writes the face index into it)
            while wp.mesh_query_aabb_next(query, f):
                found_t, found_face = nearer_face(s, f, start, direction, lo, hi, found_t, found_face)
        if found_face >= 0:
            fraction = found_t / length
            if fraction < best:
                best = fraction
                hit = 1
                normal = mesh_hit_normal(s, found_face, start)
    return hit, best, normal


@wp.func
def cast_ray(s: SimStateRef, start: wp.vec3, end: wp.vec3):
    """cast_wheel_ray of one segment on its own: the meshes tested by a BVH box query where start lies in the
    mesh's reach grid."""
    in_reach = s.plane_only_cars == 0 and mesh_in_reach(s, start)
    return cast_wheel_ray(s, start, end, in_reach, False, MeetingFaces(), 0)


@wp.func(inline=True)  # one call site; inlined: no call (nor SimState copy, on Warp without wp.ref)
def cast_wheels(s: SimStateRef, a: int, c: int, pos: wp.vec3, q: wp.quat, up: wp.vec3) -> WheelHits:
    """The four wheel rays of car c with origin pos (uu), orientation q and up axis up.

    A ray is tested against the meshes only where it starts in the mesh's reach grid. Those rays, and the
    hitbox where its centre is in that grid, share one near-face list (rocketrl.sim.warp.near_faces)."""
    out = WheelHits()
    reach = wp.vec4(0.0)
    rays_lo = wp.vec3(1.0e30)
    rays_hi = wp.vec3(-1.0e30)
    any_reach = False
    for k in range(4):
        hard_point = pos + wp.quat_rotate(q, wheel_offset(k))
        out.hard_point[k] = hard_point
        # The ball's reach grid holds every triangle within 93.15 + 1 uu of a cell; a wheel ray (under 50 uu)
        # starting in an empty cell cannot reach a triangle, so the mesh is not tested there.
        if s.plane_only_cars == 0 and mesh_in_reach(s, hard_point):
            reach[k] = 1.0
            target = hard_point - up * ray_length(k)
            rays_lo = wp.min(rays_lo, wp.min(hard_point, target))
            rays_hi = wp.max(rays_hi, wp.max(hard_point, target))
            any_reach = True
    lo = rays_lo
    hi = rays_hi
    centre = hitbox_centre(pos, q)
    if s.plane_only_cars == 0 and mesh_in_reach(s, centre):
        extent = hitbox_extent(box_axes(q))
        lo = wp.min(lo, centre - extent)
        hi = wp.max(hi, centre + extent)
        any_reach = True
    listed = False
    if any_reach:
        listed = list_near_faces(s, a, c, lo, hi)
    # The listed triangles whose bounds meet the rays' common box, in the list's order: every triangle a ray's
    # own box meets is among them, so each ray tests these instead of the whole list.
    faces = MeetingFaces()
    num_faces = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
    if listed and rays_lo[0] <= rays_hi[0]:  # some ray is in reach
        faces, num_faces = listed_faces_meeting(s, a, c, rays_lo, rays_hi)
        if num_faces > MAX_MEETING_FACES:
            listed = False  # too many to hold: the rays query the BVH
    for k in range(4):
        hard_point = out.hard_point[k]
        target = hard_point - up * ray_length(k)
        hit, fraction, n = cast_wheel_ray(s, hard_point, target, reach[k] != 0.0, listed, faces, num_faces)
        contact = target
        trace = float(0.0)  # noqa: UP018 (a variable for Warp, not a constant)
        if hit != 0:
            contact = hard_point * (1.0 - fraction) + target * fraction
            trace = wp.dot(hard_point - contact, up)
        else:
            n = up
        out.hit[k] = float(hit)
        out.contact[k] = contact
        out.normal[k] = n
        out.trace[k] = trace
    return out


@wp.func
def wheels_touching(h: WheelHits) -> int:
    """Number of wheels whose ray reaches the arena."""
    return int(h.hit[0] + h.hit[1] + h.hit[2] + h.hit[3])


@wp.func
def ground_up(h: WheelHits, up: wp.vec3) -> wp.vec3:
    """The touching wheels' mean contact normal, normalised (btVehicleRL::getUpwardsDirFromWheelContacts);
    the car's up without a touching wheel."""
    total = wp.vec3(0.0)
    for k in range(4):
        if h.hit[k] != 0.0:
            total = total + h.normal[k]
    if total[0] == 0.0 and total[1] == 0.0 and total[2] == 0.0:
        return up
    return wp.normalize(total)
