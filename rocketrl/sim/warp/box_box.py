"""Bullet's box-box detector (btBoxBoxDetector, after ODE's dBoxBox), which RocketSim's Bullet runs between two
cars' hitboxes.

The 15 separating axes (the 3 face axes of each box, then the 9 edge pairs, whose axes are normalised and
chosen over a face only when 5% deeper) give the normal and depth; then either one point where two edges
meet, or the incident face of the other box clipped to the reference face's rectangle, keeping the
penetrating points, at most 4 (the deepest and those spread best around the polygon's centroid). Each point
is reported on the second box's surface, with its depth. The detector works in Bullet units (50 uu), where
its tolerances are set; its results are in uu.
"""

from __future__ import annotations

import warp as wp

BT_UNIT = wp.constant(50.0)
"""uu per Bullet unit."""
FLT_EPSILON = wp.constant(1.1920929e-07)
EDGE_FUDGE = wp.constant(1.05)
"""An edge-edge axis must be this much deeper than the best so far to be chosen."""
AXIS_FUDGE = wp.constant(1.0e-5)
"""Added to the |R1' R2| terms of the edge-axis tests (Bullet's fudge2)."""
PI_F = wp.constant(3.14159265)

Rows4 = wp.types.matrix(shape=(4, 3), dtype=wp.float32)
Values4 = wp.types.vector(length=4, dtype=wp.float32)
Poly = wp.types.vector(length=16, dtype=wp.float32)
"""Up to 8 points of a 2D polygon, x then y."""
Points8 = wp.types.matrix(shape=(8, 3), dtype=wp.float32)
Values8 = wp.types.vector(length=8, dtype=wp.float32)
Index8 = wp.types.vector(length=8, dtype=wp.int32)


@wp.struct
class PairContacts:
    """Contact points between two boxes (at most 4)."""

    count: int
    normal: wp.vec3
    """Unit normal from box 1 towards box 2."""
    on_second: Rows4
    """Point k on box 2's surface (uu, world); box 1's point is on_second + normal * depth."""
    depth: Values4
    """Penetration depth (uu) of point k, >= 0."""


@wp.func
def clip_rect_quad(h0: float, h1: float, quad: Poly):
    """The points where the rectangle |x| < h0, |y| < h1 and the quadrilateral `quad` (4 points) overlap:
    the quadrilateral clipped by the rectangle's four lines in turn, stopping at 8 points (Bullet's
    intersectRectQuad2). Returns the polygon and its point count (0 to 8)."""
    q = quad
    nq = int(4)  # noqa: UP018 (a variable for Warp)
    done = int(0)  # noqa: UP018 (a variable for Warp)
    for side in range(4):
        axis = side // 2
        sign = float(2 * (side % 2) - 1)
        h = h0
        if axis == 1:
            h = h1
        if done == 0:
            r = Poly()
            nr = int(0)  # noqa: UP018 (a variable for Warp)
            for idx in range(nq):
                if done == 0:
                    cur_a = q[2 * idx + axis]
                    cur_b = q[2 * idx + 1 - axis]
                    nxt = idx + 1
                    if nxt == nq:
                        nxt = 0
                    inside = sign * cur_a < h
                    if inside:
                        r[2 * nr] = q[2 * idx]
                        r[2 * nr + 1] = q[2 * idx + 1]
                        nr += 1
                        if nr == 8:
                            done = 1
                    if done == 0:
                        nxt_a = q[2 * nxt + axis]
                        nxt_b = q[2 * nxt + 1 - axis]
                        if inside != (sign * nxt_a < h):
                            r[2 * nr + 1 - axis] = cur_b + (nxt_b - cur_b) / (nxt_a - cur_a) * (sign * h - cur_a)
                            r[2 * nr + axis] = sign * h
                            nr += 1
                            if nr == 8:
                                done = 1
            q = r
            nq = nr
    return q, nq


@wp.func
def cull_points(n: int, p: Poly, first: int) -> wp.vec4i:
    """Four of the n (5 to 8) points p that best span the polygon: `first`, then those whose angle about
    the centroid is closest to first's plus k quarter turns (Bullet's cullPoints2 with m = 4)."""
    a = float(0.0)  # noqa: UP018 (a variable for Warp)
    cx = float(0.0)  # noqa: UP018 (a variable for Warp)
    cy = float(0.0)  # noqa: UP018 (a variable for Warp)
    for i in range(n - 1):
        w = p[i * 2] * p[i * 2 + 3] - p[i * 2 + 2] * p[i * 2 + 1]
        a += w
        cx += w * (p[i * 2] + p[i * 2 + 2])
        cy += w * (p[i * 2 + 1] + p[i * 2 + 3])
    w = p[n * 2 - 2] * p[1] - p[0] * p[n * 2 - 1]
    if wp.abs(a + w) > FLT_EPSILON:
        a = 1.0 / (3.0 * (a + w))
    else:
        a = 1.0e30
    cx = a * (cx + w * (p[n * 2 - 2] + p[0]))
    cy = a * (cy + w * (p[n * 2 - 1] + p[1]))
    angle = Values8()
    avail = Index8()
    for i in range(n):
        angle[i] = wp.atan2(p[i * 2 + 1] - cy, p[i * 2] - cx)
        avail[i] = 1
    avail[first] = 0
    out = wp.vec4i(first, first, first, first)
    for j in range(1, 4):
        target = float(j) * (2.0 * PI_F / 4.0) + angle[first]
        if target > PI_F:
            target -= 2.0 * PI_F
        best = float(1.0e9)  # noqa: UP018 (a variable for Warp)
        pick = first
        for i in range(n):
            if avail[i] != 0:
                diff = wp.abs(angle[i] - target)
                if diff > PI_F:
                    diff = 2.0 * PI_F - diff
                if diff < best:
                    best = diff
                    pick = i
        avail[pick] = 0
        out[j] = pick
    return out


@wp.func
def edge_axis(i: int, j: int, r: wp.mat33) -> wp.vec3:
    """Box 1's axis i crossed with box 2's axis j, in box 1's frame (r = R1' R2)."""
    if i == 0:
        return wp.vec3(0.0, -r[2, j], r[1, j])
    if i == 1:
        return wp.vec3(r[2, j], 0.0, -r[0, j])
    return wp.vec3(-r[1, j], r[0, j], 0.0)


@wp.func
def box_box(p1: wp.vec3, r1: wp.mat33, a: wp.vec3, p2: wp.vec3, r2: wp.mat33, b: wp.vec3) -> PairContacts:
    """Contacts of box 1 (centre p1, axes as the columns of r1, half extents a) and box 2 (p2, r2, b), all in
    Bullet units; points and depths of the result in uu (module docstring)."""
    out = PairContacts()
    out.count = 0
    p = p2 - p1
    pp = wp.transpose(r1) @ p
    r = wp.transpose(r1) @ r2
    q = wp.mat33(
        wp.abs(r[0, 0]), wp.abs(r[0, 1]), wp.abs(r[0, 2]),
        wp.abs(r[1, 0]), wp.abs(r[1, 1]), wp.abs(r[1, 2]),
        wp.abs(r[2, 0]), wp.abs(r[2, 1]), wp.abs(r[2, 2]),
    )  # fmt: skip
    s = float(-3.4028235e38)  # noqa: UP018 (a variable for Warp)
    invert = int(0)  # noqa: UP018 (a variable for Warp)
    code = int(0)  # noqa: UP018 (a variable for Warp)
    normal_c = wp.vec3(0.0)
    # Face axes of box 1, then of box 2.
    for k in range(3):
        expr = pp[k]
        s2 = wp.abs(expr) - (a[k] + b[0] * q[k, 0] + b[1] * q[k, 1] + b[2] * q[k, 2])
        if s2 > 0.0:
            return out
        if s2 > s:
            s = s2
            invert = int(expr < 0.0)
            code = k + 1
    for k in range(3):
        expr = wp.dot(wp.vec3(r2[0, k], r2[1, k], r2[2, k]), p)
        s2 = wp.abs(expr) - (a[0] * q[0, k] + a[1] * q[1, k] + a[2] * q[2, k] + b[k])
        if s2 > 0.0:
            return out
        if s2 > s:
            s = s2
            invert = int(expr < 0.0)
            code = k + 4
    # Edge pairs: box 1's axis i x box 2's axis j.
    qf = q + wp.mat33(
        AXIS_FUDGE, AXIS_FUDGE, AXIS_FUDGE, AXIS_FUDGE, AXIS_FUDGE, AXIS_FUDGE, AXIS_FUDGE, AXIS_FUDGE, AXIS_FUDGE
    )
    for i in range(3):
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        if i == 1:
            i1 = 0
            i2 = 2
        for j in range(3):
            j1 = (j + 1) % 3
            j2 = (j + 2) % 3
            if j == 1:
                j1 = 0
                j2 = 2
            n = edge_axis(i, j, r)
            expr = wp.dot(pp, n)
            s2 = wp.abs(expr) - (a[i1] * qf[i2, j] + a[i2] * qf[i1, j] + b[j1] * qf[i, j2] + b[j2] * qf[i, j1])
            if s2 > FLT_EPSILON:
                return out
            length = wp.length(n)
            if length > FLT_EPSILON:
                s2 = s2 / length
                if s2 * EDGE_FUDGE > s:
                    s = s2
                    normal_c = n / length
                    invert = int(expr < 0.0)
                    code = 7 + 3 * i + j
    if code == 0:
        return out
    normal = wp.vec3(0.0)
    if code <= 3:
        normal = wp.vec3(r1[0, code - 1], r1[1, code - 1], r1[2, code - 1])
    elif code <= 6:
        normal = wp.vec3(r2[0, code - 4], r2[1, code - 4], r2[2, code - 4])
    else:
        normal = r1 @ normal_c
    if invert != 0:
        normal = -normal
    out.normal = normal
    if code > 6:
        return edge_contact(out, p1, r1, a, p2, r2, b, normal, -s, code)
    return face_contacts(out, p1, r1, a, p2, r2, b, normal, code)


@wp.func
def edge_contact(
    out: PairContacts,
    p1: wp.vec3,
    r1: wp.mat33,
    a: wp.vec3,
    p2: wp.vec3,
    r2: wp.mat33,
    b: wp.vec3,
    normal: wp.vec3,
    depth: float,
    code: int,
) -> PairContacts:
    """One point where an edge of box 1 meets an edge of box 2 (box_box's codes 7 to 15)."""
    pa = p1
    pb = p2
    for k in range(3):
        axis1 = wp.vec3(r1[0, k], r1[1, k], r1[2, k])
        sign = float(-1.0)  # noqa: UP018 (a variable for Warp)
        if wp.dot(normal, axis1) > 0.0:
            sign = 1.0
        pa = pa + axis1 * (sign * a[k])
        axis2 = wp.vec3(r2[0, k], r2[1, k], r2[2, k])
        sign = 1.0
        if wp.dot(normal, axis2) > 0.0:
            sign = -1.0
        pb = pb + axis2 * (sign * b[k])
    ia = (code - 7) // 3
    ib = (code - 7) % 3
    ua = wp.vec3(r1[0, ia], r1[1, ia], r1[2, ia])
    ub = wp.vec3(r2[0, ib], r2[1, ib], r2[2, ib])
    d = pb - pa
    uaub = wp.dot(ua, ub)
    q1 = wp.dot(ua, d)
    q2 = -wp.dot(ub, d)
    den = 1.0 - uaub * uaub
    beta = float(0.0)  # noqa: UP018 (a variable for Warp)
    if den > 0.0001:
        beta = (uaub * q1 + q2) / den
    out.count = 1
    out.on_second[0] = (pb + ub * beta) * BT_UNIT
    out.depth[0] = depth * BT_UNIT
    return out


@wp.func(inline=True)
def incident_face(rb: wp.mat33, pa: wp.vec3, pb: wp.vec3, sb: wp.vec3, normal2: wp.vec3):
    """The face of box B (rotation rb, centre pb, half extents sb) most against normal2: its centre relative to
    pa and the indices a1, a2 of B's axes that span it."""
    nr = wp.transpose(rb) @ normal2
    anr = wp.vec3(wp.abs(nr[0]), wp.abs(nr[1]), wp.abs(nr[2]))
    lanr = int(2)  # noqa: UP018 (a variable for Warp)
    a1 = int(0)  # noqa: UP018 (a variable for Warp)
    a2 = int(1)  # noqa: UP018 (a variable for Warp)
    if anr[1] > anr[0]:
        if anr[1] > anr[2]:
            lanr = 1
            a1 = 0
            a2 = 2
    elif anr[0] > anr[2]:
        lanr = 0
        a1 = 1
        a2 = 2
    incident = wp.vec3(rb[0, lanr], rb[1, lanr], rb[2, lanr])
    center = pb - pa - incident * sb[lanr]
    if nr[lanr] < 0.0:
        center = pb - pa + incident * sb[lanr]
    return center, a1, a2


@wp.func(inline=True)
def deepest_four(
    out: PairContacts, points: Points8, deps: Values8, kept: Poly, cnum: int, pa: wp.vec3, normal: wp.vec3,
    code: int,
) -> PairContacts:  # fmt: skip
    """`out` with the clipped points (relative to pa) and their depths, the deepest and three spread out around
    it when more than four (cull_points); a point of B's face moves onto A's when B is the reference (code > 3).
    Bullet units in, world uu out."""
    pick = wp.vec4i(0, 1, 2, 3)
    count = cnum
    if cnum > 4:
        deepest = int(0)  # noqa: UP018 (a variable for Warp)
        for k in range(1, cnum):
            if deps[k] > deps[deepest]:
                deepest = k
        pick = cull_points(cnum, kept, deepest)
        count = 4
    for k in range(count):
        m = pick[k]
        world = points[m] + pa
        if code > 3:
            world = world - normal * deps[m]
        out.on_second[k] = world * BT_UNIT
        out.depth[k] = deps[m] * BT_UNIT
    out.count = count
    return out


@wp.func
def face_contacts(
    out: PairContacts,
    p1: wp.vec3,
    r1: wp.mat33,
    a: wp.vec3,
    p2: wp.vec3,
    r2: wp.mat33,
    b: wp.vec3,
    normal: wp.vec3,
    code: int,
) -> PairContacts:
    """The incident face of one box clipped to the reference face of the other (box_box's codes 1 to 6)."""
    ra = r1
    rb = r2
    pa = p1
    pb = p2
    sa = a
    sb = b
    normal2 = normal
    code_n = code - 1
    if code > 3:
        ra = r2
        rb = r1
        pa = p2
        pb = p1
        sa = b
        sb = a
        normal2 = -normal
        code_n = code - 4
    center, a1, a2 = incident_face(rb, pa, pb, sb, normal2)
    code1 = int(0)  # noqa: UP018 (a variable for Warp)
    code2 = int(1)  # noqa: UP018 (a variable for Warp)
    if code_n == 0:
        code1 = 1
        code2 = 2
    elif code_n == 1:
        code2 = 2
    ref1 = wp.vec3(ra[0, code1], ra[1, code1], ra[2, code1])
    ref2 = wp.vec3(ra[0, code2], ra[1, code2], ra[2, code2])
    inc1 = wp.vec3(rb[0, a1], rb[1, a1], rb[2, a1])
    inc2 = wp.vec3(rb[0, a2], rb[1, a2], rb[2, a2])
    c1 = wp.dot(center, ref1)
    c2 = wp.dot(center, ref2)
    m11 = wp.dot(ref1, inc1)
    m12 = wp.dot(ref1, inc2)
    m21 = wp.dot(ref2, inc1)
    m22 = wp.dot(ref2, inc2)
    k1 = m11 * sb[a1]
    k2 = m21 * sb[a1]
    k3 = m12 * sb[a2]
    k4 = m22 * sb[a2]
    quad = Poly()
    quad[0] = c1 - k1 - k3
    quad[1] = c2 - k2 - k4
    quad[2] = c1 - k1 + k3
    quad[3] = c2 - k2 + k4
    quad[4] = c1 + k1 + k3
    quad[5] = c2 + k2 + k4
    quad[6] = c1 + k1 - k3
    quad[7] = c2 + k2 - k4
    ret, n = clip_rect_quad(sa[code1], sa[code2], quad)
    if n < 1:
        return out
    det = 1.0 / (m11 * m22 - m12 * m21)
    m11 *= det
    m12 *= det
    m21 *= det
    m22 *= det
    points = Points8()
    deps = Values8()
    kept = Poly()
    cnum = int(0)  # noqa: UP018 (a variable for Warp)
    for j in range(n):
        u = m22 * (ret[j * 2] - c1) - m12 * (ret[j * 2 + 1] - c2)
        v = -m21 * (ret[j * 2] - c1) + m11 * (ret[j * 2 + 1] - c2)
        point = center + inc1 * u + inc2 * v
        dep = sa[code_n] - wp.dot(normal2, point)
        if dep >= 0.0:
            points[cnum] = point
            deps[cnum] = dep
            kept[cnum * 2] = ret[j * 2]
            kept[cnum * 2 + 1] = ret[j * 2 + 1]
            cnum += 1
    if cnum < 1:
        return out
    return deepest_four(out, points, deps, kept, cnum, pa, normal, code)
