"""Analytic distance to the soccar arena's surfaces: floor, walls, ceiling, their curved transitions,
the 45 degree corner cuts and the two goals.

The field is the intersection of half-spaces (side walls |x| <= 4096, back walls |y| <= 5120, corner
cuts |x| + |y| <= 8064, floor z >= 0, ceiling z <= 2044); each wall meets the floor and the ceiling
through a quarter-cylinder of its own radius (measured on the public collision meshes: 256/512 for the
side walls and corners, 160/512 for the back walls). Each goal is a box 1785.51 wide, 642.775 high
reaching 880 behind the goal line. The vertical edges where walls meet corner cuts, the goal posts
and the crossbar are sharp. Distances are in uu, positive in free space; inside, the value is exact.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.constants import (
    BACK_CEIL_RADIUS,
    BACK_FLOOR_RADIUS,
    CORNER_CEIL_RADIUS,
    CORNER_FLOOR_RADIUS,
    CORNER_SUM,
    EXTENT_X,
    EXTENT_Y,
    GOAL_BACK_Y,
    GOAL_HALF_WIDTH,
    GOAL_HEIGHT,
    GOAL_MOUTH_Y,
    HEIGHT,
    SIDE_CEIL_RADIUS,
    SIDE_FLOOR_RADIUS,
)

SQRT_HALF = wp.constant(0.70710678)


@wp.func
def wall_distance(w: float, z: float, floor_radius: float, ceil_radius: float) -> float:
    """Distance to a wall at in-plane distance w (>0 inside) with rounded floor and ceiling joins."""
    if w < floor_radius and z < floor_radius:
        return floor_radius - wp.length(wp.vec2(floor_radius - w, floor_radius - z))
    top = HEIGHT - ceil_radius
    if w < ceil_radius and z > top:
        return ceil_radius - wp.length(wp.vec2(ceil_radius - w, z - top))
    return w


@wp.func
def arena_distance(p: wp.vec3) -> float:
    """Distance (uu) from p to the nearest arena surface; positive inside the arena and goals."""
    ax = wp.abs(p[0])
    ay = wp.abs(p[1])
    z = p[2]
    d = wp.min(z, HEIGHT - z)
    d = wp.min(d, wall_distance(EXTENT_X - ax, z, SIDE_FLOOR_RADIUS, SIDE_CEIL_RADIUS))
    d = wp.min(d, wall_distance(EXTENT_Y - ay, z, BACK_FLOOR_RADIUS, BACK_CEIL_RADIUS))
    d = wp.min(d, wall_distance((CORNER_SUM - ax - ay) * SQRT_HALF, z, CORNER_FLOOR_RADIUS, CORNER_CEIL_RADIUS))
    goal = wp.min(wp.min(GOAL_HALF_WIDTH - ax, GOAL_BACK_Y - ay), wp.min(z, GOAL_HEIGHT - z))
    goal = wp.min(goal, ay - GOAL_MOUTH_Y)
    return wp.max(d, goal)


@wp.func
def arena_normal(p: wp.vec3) -> wp.vec3:
    """Unit gradient of arena_distance at p: the surface normal pointing into free space."""
    h = 0.5
    gx = arena_distance(p + wp.vec3(h, 0.0, 0.0)) - arena_distance(p - wp.vec3(h, 0.0, 0.0))
    gy = arena_distance(p + wp.vec3(0.0, h, 0.0)) - arena_distance(p - wp.vec3(0.0, h, 0.0))
    gz = arena_distance(p + wp.vec3(0.0, 0.0, h)) - arena_distance(p - wp.vec3(0.0, 0.0, h))
    g = wp.vec3(gx, gy, gz)
    n = wp.length(g)
    if n < 1.0e-6:
        return wp.vec3(0.0, 0.0, 1.0)
    return g / n


@wp.func
def surface_normal(p: wp.vec3, d: float) -> wp.vec3:
    """arena_normal(p) given d = arena_distance(p), without the finite differences when the nearest
    surface is the flat floor or ceiling (the common case)."""
    if d == p[2]:
        return wp.vec3(0.0, 0.0, 1.0)
    if d == HEIGHT - p[2]:
        return wp.vec3(0.0, 0.0, -1.0)
    return arena_normal(p)
