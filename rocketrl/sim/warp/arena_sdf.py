"""Analytic distance to the soccar arena's surfaces: floor, walls, ceiling, their curved transitions,
the 45 degree corner cuts and the two goals.

The field is the intersection of half-spaces (side walls |x| <= 4096, back walls |y| <= 5120, corner
cuts |x| + |y| <= 8064, floor z >= 0, ceiling z <= 2044); each wall meets the floor and the ceiling
through a quarter-cylinder of its own radius (measured on the public collision meshes: 256/512 for the
side walls and corners, 160/512 for the back walls, the back walls' floor radius easing to 96 beside
the goals). Each goal, as in the meshes, is 1792 wide and 640
high at the mouth; seen from the side its floor rises 16 uu towards the back, its roof slopes down from
|y| 5344 and the back of the net is a half-cylinder of radius 240 reaching |y| 6000; the edges where
its side walls meet floor, roof and back are rounded with radius 96. The vertical edges where walls
meet corner cuts, the goal posts and the crossbar are sharp. Distances are in uu, positive in free
space; inside the field, the value is exact.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.constants import (
    BACK_CEIL_RADIUS,
    BACK_FLOOR_BLEND_WIDTH,
    BACK_FLOOR_BLEND_X,
    BACK_FLOOR_RADIUS,
    BACK_FLOOR_RADIUS_GOAL,
    CORNER_CEIL_RADIUS,
    CORNER_FLOOR_RADIUS,
    CORNER_SUM,
    EXTENT_X,
    EXTENT_Y,
    GOAL_BACK_CENTRE_Y,
    GOAL_BACK_CENTRE_Z,
    GOAL_BACK_RADIUS,
    GOAL_EDGE_RADIUS,
    GOAL_HALF_WIDTH,
    GOAL_HEIGHT,
    GOAL_MOUTH_Y,
    GOAL_RAMP_NORMAL,
    GOAL_RAMP_START_Y,
    GOAL_ROOF_END_Y,
    GOAL_ROOF_NORMAL,
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
def goal_section_distance(y: float, z: float) -> float:
    """Distance (uu) from (|y|, z) to the boundary of the goal's side section, positive inside.

    The section is convex: floor z >= 0, the rising floor, the roof (flat, then sloping) and the back
    arc; each term is the distance to one of those, the arc's only in the sector where it bounds."""
    roof = wp.min(
        GOAL_HEIGHT - z, -((y - GOAL_ROOF_END_Y) * GOAL_ROOF_NORMAL[0] + (z - GOAL_HEIGHT) * GOAL_ROOF_NORMAL[1])
    )
    dy = y - GOAL_BACK_CENTRE_Y
    dz = z - GOAL_BACK_CENTRE_Z
    if dy <= 0.0:
        ramp = (y - GOAL_RAMP_START_Y) * GOAL_RAMP_NORMAL[0] + z * GOAL_RAMP_NORMAL[1]
        return wp.min(roof, wp.min(z, ramp))
    if dz * GOAL_ROOF_NORMAL[0] < dy * GOAL_ROOF_NORMAL[1]:
        return wp.min(roof, GOAL_BACK_RADIUS - wp.length(wp.vec2(dy, dz)))
    return roof


@wp.func
def goal_distance(ax: float, ay: float, z: float) -> float:
    """Distance (uu) to the inside surface of the goal at |x| = ax, |y| = ay, positive inside.

    The goal is the set of points within GOAL_EDGE_RADIUS of a core (|x| <= half width - radius, section
    shrunk by the radius), which rounds every edge of its side walls; open at the mouth."""
    ex = ax - (GOAL_HALF_WIDTH - GOAL_EDGE_RADIUS)
    es = GOAL_EDGE_RADIUS - goal_section_distance(ay, z)
    inside = wp.min(-ex, -es)
    if inside >= 0.0:
        d = GOAL_EDGE_RADIUS + inside
    else:
        d = GOAL_EDGE_RADIUS - wp.length(wp.vec2(wp.max(ex, 0.0), wp.max(es, 0.0)))
    return wp.min(d, ay - GOAL_MOUTH_Y)


@wp.func
def arena_distance(p: wp.vec3) -> float:
    """Distance (uu) from p to the nearest arena surface; positive inside the arena and goals."""
    ax = wp.abs(p[0])
    ay = wp.abs(p[1])
    z = p[2]
    d = wp.min(z, HEIGHT - z)
    d = wp.min(d, wall_distance(EXTENT_X - ax, z, SIDE_FLOOR_RADIUS, SIDE_CEIL_RADIUS))
    t = wp.clamp((ax - BACK_FLOOR_BLEND_X) / BACK_FLOOR_BLEND_WIDTH, 0.0, 1.0)
    back_radius = BACK_FLOOR_RADIUS_GOAL + (BACK_FLOOR_RADIUS - BACK_FLOOR_RADIUS_GOAL) * t * t * (3.0 - 2.0 * t)
    d = wp.min(d, wall_distance(EXTENT_Y - ay, z, back_radius, BACK_CEIL_RADIUS))
    d = wp.min(d, wall_distance((CORNER_SUM - ax - ay) * SQRT_HALF, z, CORNER_FLOOR_RADIUS, CORNER_CEIL_RADIUS))
    return wp.max(d, goal_distance(ax, ay, z))


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
