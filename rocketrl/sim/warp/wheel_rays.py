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

from rocketrl.sim.warp.collisions import mesh_in_reach
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
from rocketrl.sim.warp.layout import SimState

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


@wp.func
def plane_normal(k: int) -> wp.vec3:
    """Unit normal (into the field) of arena plane k (see plane_point)."""
    if k == 0:
        return wp.vec3(0.0, 0.0, 1.0)
    if k == 1:
        return wp.vec3(0.0, 0.0, -1.0)
    if k == 2:
        return wp.vec3(1.0, 0.0, 0.0)
    return wp.vec3(-1.0, 0.0, 0.0)


@wp.func
def cast_ray(s: SimState, start: wp.vec3, end: wp.vec3):
    """Closest arena hit of the segment start -> end: (hit 0/1, fraction of the segment in [0, 1], unit
    normal towards start). The planes are tested first and a later surface must be strictly closer, as in
    Bullet's closest-hit callback."""
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
    # The ball's reach grid holds every triangle within 93.15 + 1 uu of a cell; a wheel ray (under 50 uu)
    # starting in an empty cell cannot reach a triangle, so the mesh query is skipped there.
    if s.plane_only_cars == 0 and mesh_in_reach(s, start):
        delta = end - start
        length = wp.length(delta)
        direction = delta / length
        query = wp.mesh_query_ray(s.arena_mesh, start, direction, length * best)
        if query.result:
            fraction = query.t / length
            if fraction < best:
                mesh = s.arena_mesh
                v0 = wp.mesh_get_point(mesh, query.face * 3)
                v1 = wp.mesh_get_point(mesh, query.face * 3 + 1)
                v2 = wp.mesh_get_point(mesh, query.face * 3 + 2)
                n = wp.normalize(wp.cross(v1 - v0, v2 - v0))
                best = fraction
                hit = 1
                normal = n
                if wp.dot(n, start - v0) <= 0.0:
                    normal = -n
    return hit, best, normal


@wp.func(inline=True)  # one call site; inlined, its caller's SimState is not copied again per call
def cast_wheels(s: SimState, pos: wp.vec3, q: wp.quat, up: wp.vec3) -> WheelHits:
    """The four wheel rays of a car with origin pos (uu), orientation q and up axis up."""
    out = WheelHits()
    for k in range(4):
        hard_point = pos + wp.quat_rotate(q, wheel_offset(k))
        target = hard_point - up * ray_length(k)
        hit, fraction, n = cast_ray(s, hard_point, target)
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
        out.hard_point[k] = hard_point
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
