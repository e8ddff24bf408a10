"""Bullet's box-box detector as the warp engine replays it (rocketrl.sim.warp.box_box), on hand-computed
cases: a face of one box against a face of the other, the same with the other box's face as the reference,
two edges crossing, boxes apart."""

from __future__ import annotations

import math

import numpy as np
import pytest

wp = pytest.importorskip("warp")

from rocketrl.sim.warp.box_box import BT_UNIT, box_box  # noqa: E402


@wp.kernel
def _detect(
    p1: wp.array(dtype=wp.vec3),
    r1: wp.array(dtype=wp.mat33),
    a: wp.array(dtype=wp.vec3),
    p2: wp.array(dtype=wp.vec3),
    r2: wp.array(dtype=wp.mat33),
    b: wp.array(dtype=wp.vec3),
    count: wp.array(dtype=wp.int32),
    normal: wp.array(dtype=wp.vec3),
    points: wp.array2d(dtype=wp.vec3),
    depths: wp.array2d(dtype=wp.float32),
):
    i = wp.tid()
    c = box_box(p1[i], r1[i], a[i], p2[i], r2[i], b[i])
    count[i] = c.count
    normal[i] = c.normal
    for k in range(c.count):
        points[i, k] = c.on_second[k]
        depths[i, k] = c.depth[k]


def detect(p1, r1, a, p2, r2, b) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """One detection in Bullet units; points and depths come back in uu."""
    wp.init()
    device = "cpu"

    def vec(v):
        return wp.array([wp.vec3(*v)], dtype=wp.vec3, device=device)

    def mat(m):
        return wp.array([wp.mat33(*np.asarray(m, dtype=np.float32).ravel())], dtype=wp.mat33, device=device)

    count = wp.zeros(1, dtype=wp.int32, device=device)
    normal = wp.zeros(1, dtype=wp.vec3, device=device)
    points = wp.zeros((1, 4), dtype=wp.vec3, device=device)
    depths = wp.zeros((1, 4), dtype=wp.float32, device=device)
    wp.launch(
        _detect,
        dim=1,
        inputs=[vec(p1), mat(r1), vec(a), vec(p2), mat(r2), vec(b), count, normal, points, depths],
        device=device,
    )
    n = int(count.numpy()[0])
    return n, normal.numpy()[0], points.numpy()[0, :n], depths.numpy()[0, :n]


IDENTITY = np.eye(3)


def rot_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rot_y(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def sorted_rows(points: np.ndarray) -> np.ndarray:
    return points[np.lexsort(points.T[::-1])]


def test_boxes_apart_have_no_contact() -> None:
    n, *_ = detect((0, 0, 0), IDENTITY, (2, 1, 0.5), (4.1, 0, 0), IDENTITY, (2, 1, 0.4))
    assert n == 0


def test_a_face_of_box_two_against_a_face_of_box_one() -> None:
    # Box 2 (half 2, 1, 0.4) overlaps box 1's +x face (half 2, 1, 0.5) by 0.1: its -x face at x = 1.9,
    # spanning y in [-0.5, 1.5], clipped to box 1's face (|y| < 1): four corners, each 0.1 deep.
    n, normal, points, depths = detect((0, 0, 0), IDENTITY, (2, 1, 0.5), (3.9, 0.5, 0), IDENTITY, (2, 1, 0.4))
    assert n == 4
    np.testing.assert_allclose(normal, [1, 0, 0], atol=1e-6)
    expected = np.array([[1.9, y, z] for y in (-0.5, 1.0) for z in (-0.4, 0.4)]) * float(BT_UNIT)
    np.testing.assert_allclose(sorted_rows(points), sorted_rows(expected), atol=1e-3)
    np.testing.assert_allclose(depths, 0.1 * float(BT_UNIT), atol=1e-3)


def test_a_face_of_box_one_against_a_face_of_box_two() -> None:
    # Box 2 is the larger: its -x face (x = 1.9, |y| < 3, |z| < 2) is the reference, box 1's +x face
    # (x = 2, |y| < 1, |z| < 0.5) the incident one; its corners move onto box 2's face.
    n, normal, points, depths = detect((0, 0, 0), IDENTITY, (2, 1, 0.5), (4.9, 0, 0), IDENTITY, (3, 3, 2))
    assert n == 4
    np.testing.assert_allclose(normal, [1, 0, 0], atol=1e-6)
    expected = np.array([[1.9, y, z] for y in (-1.0, 1.0) for z in (-0.5, 0.5)]) * float(BT_UNIT)
    np.testing.assert_allclose(sorted_rows(points), sorted_rows(expected), atol=1e-3)
    np.testing.assert_allclose(depths, 0.1 * float(BT_UNIT), atol=1e-3)


def test_two_edges_crossing_give_one_point_on_the_second_box() -> None:
    # Unit-half cubes: box 1 turned 45 degrees about z (a vertical edge at x = sqrt 2), box 2 at x = 2.7
    # turned 45 degrees about y (an edge along y at x = 2.7 - sqrt 2). They cross at y = z = 0,
    # 2 sqrt 2 - 2.7 deep; Bullet reports the point on box 2's edge.
    root2 = math.sqrt(2.0)
    n, normal, points, depths = detect(
        (0, 0, 0), rot_z(math.pi / 4), (1, 1, 1), (2.7, 0, 0), rot_y(math.pi / 4), (1, 1, 1)
    )
    assert n == 1
    np.testing.assert_allclose(normal, [1, 0, 0], atol=1e-5)
    np.testing.assert_allclose(points[0], np.array([2.7 - root2, 0.0, 0.0]) * float(BT_UNIT), atol=1e-3)
    # Bullet's edge test adds 1e-5 to each of the four |R1' R2| terms of the projected radii: 4e-5 deeper.
    np.testing.assert_allclose(depths[0], (2 * root2 - 2.7 + 4e-5) * float(BT_UNIT), atol=2e-4)


def test_a_tilted_box_resting_across_a_face_keeps_at_most_four_points_the_deepest_first() -> None:
    # Box 2 turned 30 degrees about z, sunk 0.05 into box 1's top face: the clipped face has more than four
    # corners, so the detector keeps four, the deepest among them.
    n, normal, points, depths = detect(
        (0, 0, 0), IDENTITY, (2, 2, 0.5), (0.3, 0.2, 0.5 + 0.4 - 0.05), rot_z(math.pi / 6), (2.2, 1.0, 0.4)
    )
    assert n == 4
    np.testing.assert_allclose(normal, [0, 0, 1], atol=1e-6)
    np.testing.assert_allclose(depths, 0.05 * float(BT_UNIT), atol=1e-3)
    np.testing.assert_allclose(points[:, 2], (0.5 - 0.05) * float(BT_UNIT), atol=1e-3)
    assert np.all(np.abs(points[:, :2]) <= 2.0 * float(BT_UNIT) + 1e-3)
