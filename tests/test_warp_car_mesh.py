"""The car-mesh contact's closest points and least overlap (rocketrl.sim.warp.car_mesh_manifold) on hand-computed
box-triangle cases, in the box's frame: the box core is HITBOX_CORE (half extents) about the origin."""

from __future__ import annotations

import math

import numpy as np
import pytest

wp = pytest.importorskip("warp")

from rocketrl.sim.warp.car_mesh_manifold import core_apart, core_overlap  # noqa: E402
from rocketrl.sim.warp.constants import HITBOX_CORE  # noqa: E402

H = np.array([float(HITBOX_CORE[0]), float(HITBOX_CORE[1]), float(HITBOX_CORE[2])])


@wp.kernel
def contact_kernel(tris: wp.array(dtype=wp.vec3), out: wp.array2d(dtype=float)):
    i = wp.tid()
    t0 = tris[3 * i]
    t1 = tris[3 * i + 1]
    t2 = tris[3 * i + 2]
    sep, n, overlap_box, overlap_tri = core_overlap(t0, t1, t2, 1.0e30)
    apart_box, apart_tri = core_apart(t0, t1, t2)
    row = wp.vector(sep, n[0], n[1], n[2], length=4)
    for k in range(4):
        out[i, k] = row[k]
    for k in range(3):
        out[i, 4 + k] = overlap_box[k]
        out[i, 7 + k] = overlap_tri[k]
        out[i, 10 + k] = apart_box[k]
        out[i, 13 + k] = apart_tri[k]


def run(triangles: list[list[list[float]]]) -> np.ndarray:
    """Per triangle: separation, axis (3), overlap witnesses on the box and triangle, apart witnesses (3 each)."""
    wp.init()
    flat = np.array(triangles, dtype=np.float32).reshape(-1, 3)
    tris = wp.array(flat, dtype=wp.vec3, device="cpu")
    out = wp.zeros((len(triangles), 16), dtype=float, device="cpu")
    wp.launch(contact_kernel, dim=len(triangles), inputs=[tris, out], device="cpu")
    return out.numpy()


def floor_triangle(z: float) -> list[list[float]]:
    """A large triangle in the plane at height z, facing up (counter-clockwise seen from above)."""
    return [[-1000.0, -1000.0, z], [1000.0, -1000.0, z], [0.0, 1000.0, z]]


def test_box_above_a_triangle_is_apart_by_the_gap_and_reports_a_bottom_vertex():
    r = run([floor_triangle(-H[2] - 5.0)])[0]
    assert r[0] == pytest.approx(5.0, abs=1e-3)  # separated along the triangle's normal by 5 uu
    assert r[1:4] == pytest.approx([0.0, 0.0, 1.0], abs=1e-6)  # from the triangle towards the box
    on_box, on_tri = r[10:13], r[13:16]
    assert np.linalg.norm(on_box - on_tri) == pytest.approx(5.0, abs=1e-3)
    assert on_box[2] == pytest.approx(-H[2], abs=1e-4)
    # faces parallel: the first of equal pairs is kept, the box's vertex 0 (-x, -y, -z) over the triangle
    assert on_box == pytest.approx(-H, abs=1e-4)
    assert on_tri == pytest.approx([-H[0], -H[1], -H[2] - 5.0], abs=1e-3)


def test_a_triangle_into_the_bottom_face_overlaps_by_its_depth():
    r = run([floor_triangle(-H[2] + 3.0)])[0]
    assert r[0] == pytest.approx(-3.0, abs=1e-3)  # the least overlap: 3 uu along the triangle's normal
    assert r[1:4] == pytest.approx([0.0, 0.0, 1.0], abs=1e-6)
    on_box, on_tri = r[4:7], r[7:10]
    assert on_box[2] == pytest.approx(-H[2], abs=1e-4)  # the box's deepest vertex ...
    assert on_tri[2] == pytest.approx(-H[2] + 3.0, abs=1e-4)  # ... and its foot on the triangle's plane
    assert on_box[:2] == pytest.approx(on_tri[:2], abs=1e-4)


def test_a_plane_facing_a_corner_meets_that_corner():
    """A triangle in the plane with normal (1, 1, 1)/sqrt 3 through the point 4 uu beyond the box's corner
    (-x, -y, -z): the corner is the closest point of the box, its foot on the plane the triangle's."""
    n = np.ones(3) / math.sqrt(3.0)
    corner = -H
    centre = corner - 4.0 * n
    u = np.array([1.0, -1.0, 0.0]) / math.sqrt(2.0)
    v = np.cross(n, u)
    tri = [
        list(centre + 300.0 * u),
        list(centre + 300.0 * (-0.5 * u + 0.866 * v)),
        list(centre + 300.0 * (-0.5 * u - 0.866 * v)),
    ]
    if np.dot(np.cross(np.array(tri[1]) - tri[0], np.array(tri[2]) - tri[0]), n) < 0:
        tri = [tri[0], tri[2], tri[1]]
    r = run([tri])[0]
    on_box, on_tri = r[10:13], r[13:16]
    assert on_box == pytest.approx(corner, abs=1e-3)
    assert on_tri == pytest.approx(centre, abs=1e-2)
    assert np.linalg.norm(on_box - on_tri) == pytest.approx(4.0, abs=1e-3)
    assert r[0] > 0.0  # the cores are apart: some separating axis has a positive gap


def test_an_edge_across_a_bottom_edge_meets_it_edge_to_edge():
    """A triangle hanging below the box, its top edge crossing under the box's bottom edge along y at x = +hx
    and sloping down under the box: the closest points are the two edges' closest points (skew lines)."""
    z = -H[2] - 2.0
    a = np.array([H[0] + 50.0, -50.0, z + 5.0])
    b = np.array([H[0] - 50.0, 50.0, z - 5.0])
    tip = np.array([H[0] + 200.0, 200.0, z - 300.0])
    r = run([[list(a), list(b), list(tip)]])[0]
    on_box, on_tri = r[10:13], r[13:16]
    # The two edges' closest points by brute force on fine samples.
    s_box = np.linspace(-H[1], H[1], 2001)
    edge = np.stack([np.full_like(s_box, H[0]), s_box, np.full_like(s_box, -H[2])], axis=1)
    s_tri = np.linspace(0.0, 1.0, 2001)[:, None]
    tri_edge = a + (b - a) * s_tri
    gaps = np.linalg.norm(edge[:, None, :] - tri_edge[None, :, :], axis=-1)
    expected = gaps.min()
    assert expected < 2.0  # closer than where the edges cross over each other (2 uu)
    assert np.linalg.norm(on_box - on_tri) == pytest.approx(expected, abs=2e-2)
    assert on_box[0] == pytest.approx(H[0], abs=1e-3) and on_box[2] == pytest.approx(-H[2], abs=1e-3)
    assert np.linalg.norm(np.cross(b - a, on_tri - a)) / np.linalg.norm(b - a) < 1e-2  # on the triangle's edge
