"""A car's contact manifolds with the four arena planes, kept from tick to tick as RocketSim's Bullet keeps them.

Bullet answers a box against a static plane with one point a tick (btConvexPlaneCollisionAlgorithm, no
perturbation in the default configuration): the box's vertex deepest along the plane's normal, reported on
the plane, when it lies within the contact breaking threshold (CONTACT_REACH). The point goes into the
car-plane manifold (btPersistentManifold, at most MANIFOLD_POINTS), where RocketSim never merges it with an
old one (its getCacheEntry always answers "none"): a full manifold gives up the point whose loss leaves
the largest area, never the deepest (sortCachedPoints). At the start of every tick each kept point is
refreshed from the car's pose: its distance along the normal is measured again and it is dropped once
that exceeds the threshold or once the car has slid more than the threshold along the plane since the
point was made (refreshContactPoints). The solver warm-starts each kept point with 0.85 of the normal
impulse it ended with (rocketrl.sim.warp.car_arena_box).

Storage: car_plane_count (A, C, 4) points per plane; car_plane_points (A, C, 4 * MANIFOLD_POINTS,
PLANE_POINT_FLOATS), row plane * MANIFOLD_POINTS + k: P_LOCAL the point on the car in body axes relative to
the car origin (uu), P_ON_PLANE the point on the plane (world uu), P_IMPULSE the normal impulse it ended
the last tick with, P_DISTANCE its signed distance at the latest refresh (uu).
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.collisions import widest_spread_slot
from rocketrl.sim.warp.constants import HITBOX_COLLIDED
from rocketrl.sim.warp.layout import (
    MANIFOLD_POINTS,
    P_DISTANCE,
    P_IMPULSE,
    P_LOCAL,
    P_ON_PLANE,
    PLANE_POINT_FLOATS,
    SimState,
)
from rocketrl.sim.warp.wheel_rays import plane_normal, plane_point


@wp.func
def point_vec(s: SimState, a: int, c: int, row: int, col: int) -> wp.vec3:
    return wp.vec3(
        s.car_plane_points[a, c, row, col],
        s.car_plane_points[a, c, row, col + 1],
        s.car_plane_points[a, c, row, col + 2],
    )


@wp.func
def set_point_vec(s: SimState, a: int, c: int, row: int, col: int, v: wp.vec3):
    s.car_plane_points[a, c, row, col] = v[0]
    s.car_plane_points[a, c, row, col + 1] = v[1]
    s.car_plane_points[a, c, row, col + 2] = v[2]


@wp.func
def copy_point(s: SimState, a: int, c: int, src: int, dst: int):
    for f in range(PLANE_POINT_FLOATS):
        s.car_plane_points[a, c, dst, f] = s.car_plane_points[a, c, src, f]


@wp.func
def refresh_plane(s: SimState, a: int, c: int, plane: int, pos: wp.vec3, q: wp.quat, reach: float) -> int:
    """Refresh the car's manifold with `plane` at the car's pose (pos, q) and return its point count: each
    point's distance is measured again; a point farther than `reach` along the normal, or slid more than
    `reach` along the plane, is dropped (the last point takes its row)."""
    count = s.car_plane_count[a, c, plane]
    n = plane_normal(plane)
    base = plane * MANIFOLD_POINTS
    for back in range(count):
        k = count - 1 - back
        row = base + k
        on_car = pos + wp.quat_rotate(q, point_vec(s, a, c, row, P_LOCAL))
        on_plane = point_vec(s, a, c, row, P_ON_PLANE)
        distance = wp.dot(on_car - on_plane, n)
        s.car_plane_points[a, c, row, P_DISTANCE] = distance
        drift = on_plane - (on_car - n * distance)
        keep = distance <= reach and wp.dot(drift, drift) <= reach * reach
        if not keep:
            last = base + s.car_plane_count[a, c, plane] - 1
            if row != last:
                copy_point(s, a, c, last, row)
            s.car_plane_points[a, c, last, P_IMPULSE] = 0.0
            s.car_plane_count[a, c, plane] = s.car_plane_count[a, c, plane] - 1
    return s.car_plane_count[a, c, plane]


@wp.func
def area_slot(s: SimState, a: int, c: int, base: int, local: wp.vec3, distance: float) -> int:
    """Bullet's sortCachedPoints for a full manifold (rows base .. base + 3): the point to give up for a new
    one at `local` (body axes) and `distance`, so that the rest span the largest area; never the deepest."""
    deepest = int(-1)  # noqa: UP018 (a variable for Warp)
    depth = distance
    for k in range(4):
        d = s.car_plane_points[a, c, base + k, P_DISTANCE]
        if d < depth:
            deepest = k
            depth = d
    p0 = point_vec(s, a, c, base, P_LOCAL)
    p1 = point_vec(s, a, c, base + 1, P_LOCAL)
    p2 = point_vec(s, a, c, base + 2, P_LOCAL)
    p3 = point_vec(s, a, c, base + 3, P_LOCAL)
    return widest_spread_slot(local, p0, p1, p2, p3, deepest)


@wp.func
def add_plane_point(
    s: SimState, a: int, c: int, plane: int, pos: wp.vec3, q: wp.quat, centre: wp.vec3, reach: float
) -> int:
    """This tick's point of the car's hitbox (centred at `centre`) on `plane`: its vertex deepest along the
    plane's normal, added to the manifold when within `reach`. Returns the row it took, -1 for none."""
    n = plane_normal(plane)
    inward = wp.quat_rotate_inv(q, -n)
    vertex = wp.vec3(HITBOX_COLLIDED[0], HITBOX_COLLIDED[1], HITBOX_COLLIDED[2])
    if inward[0] < 0.0:
        vertex[0] = -HITBOX_COLLIDED[0]
    if inward[1] < 0.0:
        vertex[1] = -HITBOX_COLLIDED[1]
    if inward[2] < 0.0:
        vertex[2] = -HITBOX_COLLIDED[2]
    world = centre + wp.quat_rotate(q, vertex)
    distance = wp.dot(world - plane_point(plane), n)
    if distance > reach:  # Bullet rejects depth > threshold only
        return -1
    local = wp.quat_rotate_inv(q, world - pos)
    base = plane * MANIFOLD_POINTS
    count = s.car_plane_count[a, c, plane]
    slot = count
    if count == MANIFOLD_POINTS:
        slot = area_slot(s, a, c, base, local, distance)
    else:
        s.car_plane_count[a, c, plane] = count + 1
    row = base + slot
    set_point_vec(s, a, c, row, P_LOCAL, local)
    set_point_vec(s, a, c, row, P_ON_PLANE, world - n * distance)
    s.car_plane_points[a, c, row, P_IMPULSE] = 0.0
    s.car_plane_points[a, c, row, P_DISTANCE] = distance
    return row


@wp.func
def clear_planes(s: SimState, a: int, c: int):
    """Forget the car's plane contacts (it left every plane's reach, or was put somewhere new)."""
    for plane in range(4):
        s.car_plane_count[a, c, plane] = 0
