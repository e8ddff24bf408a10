"""Triangles of the arena's collision meshes: the closest point of a triangle, and Bullet's correction of a contact
normal at an edge shared with another triangle (btAdjustInternalEdgeContacts), used by the ball's and the cars'
mesh contacts (rocketrl.sim.warp.collisions, rocketrl.sim.warp.car_mesh_manifold). Lengths in uu.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp import arena_mesh
from rocketrl.sim.warp.layout import SimStateRef

EDGE_NO_NEIGHBOUR = wp.constant(arena_mesh.EDGE_NO_NEIGHBOUR)
"""Edge angle of an edge with no neighbouring triangle."""
EDGE_CONVEX = wp.constant(arena_mesh.EDGE_CONVEX)
EDGE_SWAP_NORMAL_B = wp.constant(arena_mesh.EDGE_SWAP_NORMAL_B)
EDGE_REACH = wp.constant(5.0)
"""Distance (uu) from a shared edge within which a mesh contact's normal is adjusted (Bullet's 0.1 units)."""


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
def nearest_on_segment(p: wp.vec3, a: wp.vec3, b: wp.vec3) -> wp.vec3:
    """Closest point to p of the segment ab."""
    ab = b - a
    len_sq = wp.dot(ab, ab)
    if len_sq < 1.0e-12:
        return a
    t = wp.clamp(wp.dot(p - a, ab) / len_sq, 0.0, 1.0)
    return a + ab * t


@wp.func
def edge_adjusted_normal(
    s: SimStateRef, face: int, v0: wp.vec3, v1: wp.vec3, v2: wp.vec3, q: wp.vec3, raw: wp.vec3, nt: wp.vec3
) -> wp.vec3:
    """Bullet's btAdjustInternalEdgeContacts for a contact on mesh triangle `face` (vertices v0 v1 v2, unit
    normal nt) at the point q on the triangle with normal `raw` (unit, towards the other body): the normal as
    corrected at the nearest edge shared with another triangle (see mesh_contact), or raw."""
    best = int(-1)  # noqa: UP018 (a variable for Warp, not a constant)
    best_dist = float(1.0e30)  # noqa: UP018 (a variable for Warp, not a constant)
    for k in range(3):
        if wp.abs(s.arena_edge_angle[face * 3 + k]) < EDGE_NO_NEIGHBOUR:
            a, b = triangle_edge(v0, v1, v2, k)
            dist = wp.length(q - nearest_on_segment(q, a, b))
            if dist < best_dist:
                best = k
                best_dist = dist
    if best < 0 or best_dist >= EDGE_REACH:
        return raw
    angle = s.arena_edge_angle[face * 3 + best]
    flags = s.arena_edge_flags[face * 3 + best]
    concave = angle == 0.0
    n = raw
    if not concave:
        a, b = triangle_edge(v0, v1, v2, best)
        edge = wp.normalize(a - b)
        swap = -1.0
        if (flags & EDGE_CONVEX) != 0:
            swap = 1.0
        n_a = nt * swap
        n_b = wp.quat_rotate(wp.quat_from_axis_angle(edge, angle), nt)
        if (flags & EDGE_SWAP_NORMAL_B) != 0:
            n_b = -n_b
        n_b = n_b * swap
        if wp.dot(raw, n_a) < 0.0 and wp.dot(raw, n_b) < 0.0:
            concave = True
        else:
            edge_cross = wp.normalize(wp.cross(edge, n_a))
            current = wp.atan2(wp.dot(raw, edge_cross), wp.dot(raw, n_a))
            turn = float(0.0)  # noqa: UP018 (a variable for Warp, not a constant)
            if angle < 0.0 and current < angle:
                turn = angle - current
            if angle >= 0.0 and current > angle:
                turn = angle - current
            if turn != 0.0:
                clamped = wp.quat_rotate(wp.quat_from_axis_angle(edge, turn), raw)
                if wp.dot(clamped, nt) > 0.0:
                    n = clamped
    if concave and wp.dot(nt, raw) >= 0.0:
        n = nt
    return n


@wp.func
def triangle_edge(v0: wp.vec3, v1: wp.vec3, v2: wp.vec3, k: int):
    """Ends of edge k of a triangle (Bullet's order: 0 from v0 to v1, 1 from v1 to v2, 2 from v2 to v0)."""
    if k == 0:
        return v0, v1
    if k == 1:
        return v1, v2
    return v2, v0
