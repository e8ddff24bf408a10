"""Bullet's GJK closest points between a box and a triangle (btGjkPairDetector with btVoronoiSimplexSolver), as
RocketSim's Bullet runs them between a car's hitbox and each arena mesh triangle it is near.

Where the box's core and the triangle are apart, the closest points are not unique whenever a box face or edge
lies parallel to the triangle (a car lying on a ramp), and which one Bullet reports decides where the contact
point sits and so how the car tumbles. GJK's answer follows from its start (the separating axis (0, 1, 0)),
the support points it meets (a box's core vertex chosen by the signs of the direction, zero counting as
positive; the triangle's first vertex of largest projection), Ericson's closest-point tests on the simplex and
its exits. This replays them step by step: the same start, supports, simplex reductions and exits, in Bullet
units and about the midpoint of the two shapes' origins as Bullet computes.

Not replayed: Bullet's EPA. Where GJK finds the cores overlapping (or within 0.01 Bullet units and degenerate,
where Bullet also asks EPA and keeps the deeper answer) the caller uses its own least-overlap axis.
"""

from __future__ import annotations

import warp as wp

REL_ERROR2 = wp.constant(1.0e-6)
"""Bullet's relative error for GJK's progress tests (single precision)."""
SIMD_EPSILON = wp.constant(1.1920929e-07)
EQUAL_VERTEX_THRESHOLD = wp.constant(1.0e-4)
"""A support point this close (squared, Bullet units) to one in the simplex is already in it."""
LARGE = wp.constant(1.0e18)
MAX_ITERATIONS = wp.constant(64)
"""GJK steps at most (Bullet allows 1000 to catch bad input; a box and a triangle need fewer than 20)."""

Rows4 = wp.types.matrix(shape=(4, 3), dtype=wp.float32)


@wp.func
def row(m: Rows4, i: int) -> wp.vec3:
    return wp.vec3(m[i, 0], m[i, 1], m[i, 2])


@wp.func
def with_row(m: Rows4, i: int, v: wp.vec3) -> Rows4:
    out = m
    out[i, 0] = v[0]
    out[i, 1] = v[1]
    out[i, 2] = v[2]
    return out


@wp.func
def weighted(m: Rows4, b: wp.vec4) -> wp.vec3:
    """The rows of m weighted by the barycentric coordinates b (a zero weight adds exactly nothing)."""
    return row(m, 0) * b[0] + row(m, 1) * b[1] + row(m, 2) * b[2] + row(m, 3) * b[3]


@wp.func
def triangle_to_origin(a: wp.vec3, b: wp.vec3, c: wp.vec3):
    """Ericson's closest point of triangle abc to the origin as Bullet's closestPtPointTriangle runs it:
    the barycentric coordinates (vec4, last 0) and the used vertices (bits 0, 1, 2)."""
    ab = b - a
    ac = c - a
    ap = -a
    d1 = wp.dot(ab, ap)
    d2 = wp.dot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return wp.vec4(1.0, 0.0, 0.0, 0.0), 1
    bp = -b
    d3 = wp.dot(ab, bp)
    d4 = wp.dot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return wp.vec4(0.0, 1.0, 0.0, 0.0), 2
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return wp.vec4(1.0 - v, v, 0.0, 0.0), 3
    cp = -c
    d5 = wp.dot(ab, cp)
    d6 = wp.dot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return wp.vec4(0.0, 0.0, 1.0, 0.0), 4
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return wp.vec4(1.0 - w, 0.0, w, 0.0), 5
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return wp.vec4(0.0, 1.0 - w, w, 0.0), 6
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    return wp.vec4(1.0 - v - w, v, w, 0.0), 7


@wp.func
def origin_outside_plane(a: wp.vec3, b: wp.vec3, c: wp.vec3, d: wp.vec3) -> int:
    """1 when the origin and d lie on opposite sides of plane abc, 0 when on the same side, -1 when d is
    (nearly) on the plane: Bullet's pointOutsideOfPlane with its degenerate-tetrahedron catch."""
    normal = wp.cross(b - a, c - a)
    sign_p = wp.dot(-a, normal)
    sign_d = wp.dot(d - a, normal)
    if sign_d * sign_d < 1.0e-4 * 1.0e-4:
        return -1
    if sign_p * sign_d < 0.0:
        return 1
    return 0


@wp.func
def tetrahedron_to_origin(a: wp.vec3, b: wp.vec3, c: wp.vec3, d: wp.vec3):
    """Bullet's closestPtPointTetrahedron for the origin: (has separation 1/0, degenerate 1/0, barycentric
    coordinates, used vertices as bits 0..3)."""
    out_abc = origin_outside_plane(a, b, c, d)
    out_acd = origin_outside_plane(a, c, d, b)
    out_adb = origin_outside_plane(a, d, b, c)
    out_bdc = origin_outside_plane(b, d, c, a)
    if out_abc < 0 or out_acd < 0 or out_adb < 0 or out_bdc < 0:
        return 0, 1, wp.vec4(0.0), 15
    if out_abc == 0 and out_acd == 0 and out_adb == 0 and out_bdc == 0:
        return 0, 0, wp.vec4(0.0), 15
    best = float(3.4028235e38)  # noqa: UP018 (a variable for Warp)
    bary = wp.vec4(0.0)
    used = int(15)  # noqa: UP018 (a variable for Warp)
    if out_abc != 0:
        t, u = triangle_to_origin(a, b, c)
        q = a * t[0] + b * t[1] + c * t[2]
        if wp.dot(q, q) < best:
            best = wp.dot(q, q)
            bary = wp.vec4(t[0], t[1], t[2], 0.0)
            used = u
    if out_acd != 0:
        t, u = triangle_to_origin(a, c, d)
        q = a * t[0] + c * t[1] + d * t[2]
        if wp.dot(q, q) < best:
            best = wp.dot(q, q)
            bary = wp.vec4(t[0], 0.0, t[1], t[2])
            used = (u & 1) | ((u & 2) << 1) | ((u & 4) << 1)
    if out_adb != 0:
        t, u = triangle_to_origin(a, d, b)
        q = a * t[0] + d * t[1] + b * t[2]
        if wp.dot(q, q) < best:
            best = wp.dot(q, q)
            bary = wp.vec4(t[0], t[2], 0.0, t[1])
            used = (u & 1) | ((u & 4) >> 1) | ((u & 2) << 2)
    if out_bdc != 0:
        t, u = triangle_to_origin(b, d, c)
        q = b * t[0] + d * t[1] + c * t[2]
        if wp.dot(q, q) < best:
            best = wp.dot(q, q)
            bary = wp.vec4(0.0, t[0], t[2], t[1])
            used = ((u & 1) << 1) | (u & 4) | ((u & 2) << 2)
    return 1, 0, bary, used


@wp.func
def reduce_simplex(n: int, used: int, w: Rows4, p: Rows4, q: Rows4):
    """Drop the unused vertices (D, C, B, then A), each replaced by the last as Bullet's removeVertex does."""
    count = n
    ww = w
    pp = p
    qq = q
    for back in range(4):
        k = 3 - back
        if count >= k + 1 and ((used >> k) & 1) == 0:
            count = count - 1
            ww = with_row(ww, k, row(ww, count))
            pp = with_row(pp, k, row(pp, count))
            qq = with_row(qq, k, row(qq, count))
    return count, ww, pp, qq


@wp.func
def bary_valid(b: wp.vec4) -> int:
    if b[0] >= 0.0 and b[1] >= 0.0 and b[2] >= 0.0 and b[3] >= 0.0:
        return 1
    return 0


@wp.func
def box_support(core: wp.vec3, d: wp.vec3) -> wp.vec3:
    """The box core's vertex furthest along d (box frame); a zero component picks the positive side."""
    return wp.vec3(
        wp.where(d[0] >= 0.0, core[0], -core[0]),
        wp.where(d[1] >= 0.0, core[1], -core[1]),
        wp.where(d[2] >= 0.0, core[2], -core[2]),
    )


@wp.func
def triangle_support(t0: wp.vec3, t1: wp.vec3, t2: wp.vec3, d: wp.vec3) -> wp.vec3:
    """The triangle's vertex furthest along d, ties resolved as btVector3::maxAxis does."""
    x = wp.dot(d, t0)
    y = wp.dot(d, t1)
    z = wp.dot(d, t2)
    if x < y:
        if y < z:
            return t2
        return t1
    if x < z:
        return t2
    return t0


@wp.struct
class GjkResult:
    """GJK's answer for a box (A) and a triangle (B), in Bullet units."""

    valid: int
    """1: the cores are apart and the points below hold; 0: overlapping or degenerate (Bullet asks EPA)."""
    normal: wp.vec3
    """Unit normal from the triangle towards the box."""
    on_triangle: wp.vec3
    """The closest point on the triangle (world, Bullet units)."""
    distance: float
    """The gap between the triangle and the box's rounded surface (core gap less the box margin)."""
    exit: int
    """Why GJK stopped, Bullet's m_degenerateSimplex codes (1 support already in the simplex, 2 and 11 no
    progress of the bound, 3 invalid simplex, 6 origin reached, 10 farther than max_distance, 12 no progress,
    13 full simplex; 0: out of steps)."""


@wp.func(inline=True)
def closest_of_simplex(n: int, w: Rows4, p: Rows4, q: Rows4, cached_p: wp.vec3, cached_q: wp.vec3, cached_v: wp.vec3):
    """The simplex's closest point to the origin (btVoronoiSimplexSolver::updateClosestVectorAndPoints) after
    its n-th vertex came in: ok (0: an invalid simplex), the reduced simplex (n, w, p, q) and the closest points
    cached_p on the box, cached_q on the triangle and cached_v = cached_p - cached_q (Bullet units; a simplex
    holding the origin leaves cached_p and cached_q and zeroes cached_v)."""
    ok = int(1)  # noqa: UP018 (a variable for Warp)
    if n == 1:
        cached_p = row(p, 0)
        cached_q = row(q, 0)
        cached_v = cached_p - cached_q
    elif n == 2:
        start = row(w, 0)
        along = row(w, 1) - start
        t = wp.dot(along, -start)
        used = int(0)  # noqa: UP018 (a variable for Warp)
        if t > 0.0:
            vv = wp.dot(along, along)
            if t < vv:
                t = t / vv
                used = 3
            else:
                t = 1.0
                used = 2
        else:
            t = 0.0
            used = 1
        cached_p = row(p, 0) + t * (row(p, 1) - row(p, 0))
        cached_q = row(q, 0) + t * (row(q, 1) - row(q, 0))
        cached_v = cached_p - cached_q
        n, w, p, q = reduce_simplex(n, used, w, p, q)
    else:
        separated = int(1)  # noqa: UP018 (a variable for Warp)
        degenerate_tetra = int(0)  # noqa: UP018 (a variable for Warp)
        bary = wp.vec4(0.0)
        used = int(0)  # noqa: UP018 (a variable for Warp)
        if n == 3:
            bary, used = triangle_to_origin(row(w, 0), row(w, 1), row(w, 2))
        else:
            separated, degenerate_tetra, bary, used = tetrahedron_to_origin(row(w, 0), row(w, 1), row(w, 2), row(w, 3))
        if separated != 0:
            cached_p = weighted(p, bary)
            cached_q = weighted(q, bary)
            cached_v = cached_p - cached_q
            n, w, p, q = reduce_simplex(n, used, w, p, q)
            ok = bary_valid(bary)
        elif degenerate_tetra != 0:
            ok = 0
        else:
            cached_v = wp.vec3(0.0)
    return ok, n, w, p, q, cached_p, cached_q, cached_v


@wp.func(inline=True)
def gjk_answer(
    check: int, degenerate: int, axis: wp.vec3, margin: float, max_sq: float, t0: wp.vec3, t1: wp.vec3,
    t2: wp.vec3, origin_a: wp.vec3, offset: wp.vec3, cached_q: wp.vec3,
) -> GjkResult:  # fmt: skip
    """GJK's result once its loop stopped (`degenerate` the exit code; `check` 1 when the stop asks for the
    separating axis): the normal, closest point and distance when `axis` separates the shapes within
    sqrt(max_sq), else not valid. Points about the midpoint `offset` (Bullet units)."""
    result = GjkResult()
    result.valid = 0
    result.exit = degenerate
    if check == 0:
        return result
    length_sq = wp.length_sq(axis)
    if length_sq <= SIMD_EPSILON * SIMD_EPSILON:
        return result
    inv_length = 1.0 / wp.sqrt(length_sq)
    distance = 1.0 / inv_length - margin
    if degenerate != 0 and distance + margin < 0.01:
        return result  # Bullet asks EPA here too and keeps the deeper of the two answers
    normal = axis * inv_length
    if not (distance < 0.0 or distance * distance < max_sq):
        return result
    # Bullet's fix for sticky contacts: the normal points from the triangle's box centre to the box's.
    tri_centre = (wp.min(t0, wp.min(t1, t2)) + wp.max(t0, wp.max(t1, t2))) * 0.5
    if wp.dot(origin_a - tri_centre, normal) < 0.0:
        normal = -normal
    result.valid = 1
    result.normal = normal
    result.on_triangle = cached_q + offset
    result.distance = distance
    return result


@wp.func
def gjk_box_triangle(
    centre: wp.vec3, basis: wp.mat33, core: wp.vec3, margin: float,
    v0: wp.vec3, v1: wp.vec3, v2: wp.vec3, max_distance: float,
) -> GjkResult:  # fmt: skip
    """Closest points of a box (centre, basis columns its axes, core half extents, margin) and the triangle
    v0 v1 v2, all world Bullet units, as btGjkPairDetector finds them (module docstring); `max_distance` is
    Bullet's margins plus the contact breaking threshold."""
    offset = centre * 0.5  # Bullet works about the midpoint of the origins (the mesh's is 0)
    origin_a = centre - offset
    t0 = v0 - offset
    t1 = v1 - offset
    t2 = v2 - offset
    max_sq = max_distance * max_distance
    axis = wp.vec3(0.0, 1.0, 0.0)
    squared = float(LARGE)
    w = Rows4()
    p = Rows4()
    q = Rows4()
    n = int(0)  # noqa: UP018 (a variable for Warp)
    last_w = wp.vec3(LARGE, LARGE, LARGE)
    cached_v = wp.vec3(0.0)
    cached_p = wp.vec3(0.0)
    cached_q = wp.vec3(0.0)
    check = int(0)  # noqa: UP018 (a variable for Warp)
    degenerate = int(0)  # noqa: UP018 (a variable for Warp)
    basis_t = wp.transpose(basis)
    for _step in range(MAX_ITERATIONS):
        p_world = basis * box_support(core, basis_t * (-axis)) + origin_a
        q_world = triangle_support(t0, t1, t2, axis)
        sup = p_world - q_world
        delta = wp.dot(axis, sup)
        if delta > 0.0 and delta * delta > squared * max_sq:
            check = 1
            degenerate = 10
            break
        seen = int(0)  # noqa: UP018 (a variable for Warp)
        for k in range(n):
            if wp.length_sq(row(w, k) - sup) <= EQUAL_VERTEX_THRESHOLD:
                seen = 1
        if sup[0] == last_w[0] and sup[1] == last_w[1] and sup[2] == last_w[2]:
            seen = 1
        if seen != 0:
            check = 1
            degenerate = 1
            break
        f0 = squared - delta
        if f0 <= squared * REL_ERROR2:
            check = 1
            degenerate = 2
            break
        last_w = sup
        w = with_row(w, n, sup)
        p = with_row(p, n, p_world)
        q = with_row(q, n, q_world)
        n = n + 1
        ok, n, w, p, q, cached_p, cached_q, cached_v = closest_of_simplex(n, w, p, q, cached_p, cached_q, cached_v)
        if ok == 0:
            check = 1
            degenerate = 3
            break
        if wp.length_sq(cached_v) < REL_ERROR2:
            axis = cached_v
            check = 1
            degenerate = 6
            break
        previous = squared
        squared = wp.length_sq(cached_v)
        if previous - squared <= SIMD_EPSILON * previous:
            check = 1
            degenerate = 12
            break
        axis = cached_v
        if n == 4:
            degenerate = 13
            break
    return gjk_answer(check, degenerate, axis, margin, max_sq, t0, t1, t2, origin_a, offset, cached_q)
