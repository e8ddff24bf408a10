"""A car's contact points with the four arena planes, made anew each tick as RocketSim's Bullet makes them.

Bullet answers a box against a static plane with one point a tick (btConvexPlaneCollisionAlgorithm, no
perturbation in the default configuration): the box's vertex deepest along the plane's normal, reported on
the plane, when it lies within the contact breaking threshold (CONTACT_REACH). RocketSim's broadphase
removes every pair and adds it again at each step, so the car-plane manifold starts empty every tick and
holds only that point: none is kept from the tick before, refreshed or warm-started.

Storage: car_plane_count (A, C, 4) 1 where the car touches that plane this tick, else 0; car_plane_points
(A, C, 4, PLANE_POINT_FLOATS), row = plane: P_LOCAL the point on the car in body axes relative to the car
origin (uu), P_ON_PLANE the point on the plane (world uu), P_IMPULSE the normal impulse the solver gave it
(kept for diagnostics), P_DISTANCE its signed distance (uu).
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.constants import HITBOX_COLLIDED
from rocketrl.sim.warp.layout import P_DISTANCE, P_IMPULSE, P_LOCAL, P_ON_PLANE, SimStateRef
from rocketrl.sim.warp.wheel_rays import plane_normal, plane_point


@wp.func
def point_vec(s: SimStateRef, a: int, c: int, row: int, col: int) -> wp.vec3:
    return wp.vec3(
        s.car_plane_points[a, c, row, col],
        s.car_plane_points[a, c, row, col + 1],
        s.car_plane_points[a, c, row, col + 2],
    )


@wp.func
def set_point_vec(s: SimStateRef, a: int, c: int, row: int, col: int, v: wp.vec3):
    s.car_plane_points[a, c, row, col] = v[0]
    s.car_plane_points[a, c, row, col + 1] = v[1]
    s.car_plane_points[a, c, row, col + 2] = v[2]


@wp.func
def add_plane_point(
    s: SimStateRef, a: int, c: int, plane: int, pos: wp.vec3, q: wp.quat, centre: wp.vec3, reach: float
) -> int:
    """This tick's point of the car's hitbox (centred at `centre`) on `plane`: its vertex deepest along the
    plane's normal, kept when within `reach`. Returns its row (the plane), -1 for none."""
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
    s.car_plane_count[a, c, plane] = 1
    set_point_vec(s, a, c, plane, P_LOCAL, wp.quat_rotate_inv(q, world - pos))
    set_point_vec(s, a, c, plane, P_ON_PLANE, world - n * distance)
    s.car_plane_points[a, c, plane, P_IMPULSE] = 0.0
    s.car_plane_points[a, c, plane, P_DISTANCE] = distance
    return plane


@wp.func
def clear_planes(s: SimStateRef, a: int, c: int):
    """Forget the car's plane contacts (before this tick's, or when it is far from every plane)."""
    for plane in range(4):
        s.car_plane_count[a, c, plane] = 0
