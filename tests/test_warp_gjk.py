"""Bullet's GJK between the car's hitbox and a mesh triangle (rocketrl.sim.warp.gjk): the points Bullet picks where
a box face lies parallel to the triangle, and the distance and overlap against brute force."""

from __future__ import annotations

import numpy as np
import pytest

wp = pytest.importorskip("warp")

from rocketrl.diagnostics.gjk_parity import launch_cases, random_bases, yaw  # noqa: E402
from rocketrl.sim.warp.car_mesh_manifold import core_apart, core_overlap  # noqa: E402
from rocketrl.sim.warp.constants import HITBOX_CORE, HITBOX_MARGIN  # noqa: E402
from rocketrl.sim.warp.gjk import gjk_box_triangle  # noqa: E402

BT = 50.0
"""uu per Bullet unit."""
REACH = 2.0312278 / BT
"""The car's contact breaking threshold (Bullet units)."""
FLOOR = [[-10.0, -10.0, 0.6], [10.0, -10.0, 0.6], [0.0, 10.0, 0.6]]
"""A large triangle facing up at height 0.6, under a box centred at height 1 (core gap 0.0534, rounded gap 0.0147)."""


@wp.kernel
def gjk_kernel(
    centre: wp.array(dtype=wp.vec3),
    basis: wp.array(dtype=wp.mat33),
    tris: wp.array(dtype=wp.vec3),
    out: wp.array2d(dtype=float),
):
    i = wp.tid()
    r = gjk_box_triangle(
        centre[i], basis[i], HITBOX_CORE / 50.0, HITBOX_MARGIN / 50.0,
        tris[3 * i], tris[3 * i + 1], tris[3 * i + 2], HITBOX_MARGIN / 50.0 + 2.0312278 / 50.0,
    )  # fmt: skip
    out[i, 0] = float(r.valid)
    for k in range(3):
        out[i, 1 + k] = r.normal[k]
        out[i, 4 + k] = r.on_triangle[k]
    out[i, 7] = r.distance
    # Brute force in the box's frame (uu): the least overlap of the cores, and their closest features.
    axes = wp.transpose(basis[i])
    c = centre[i] * 50.0
    t0 = axes * (tris[3 * i] * 50.0 - c)
    t1 = axes * (tris[3 * i + 1] * 50.0 - c)
    t2 = axes * (tris[3 * i + 2] * 50.0 - c)
    sep, n, x, y = core_overlap(t0, t1, t2, 1.0e9)
    on_box, on_tri = core_apart(t0, t1, t2)
    out[i, 8] = sep
    out[i, 9] = wp.length(on_box - on_tri)


def run(centres: np.ndarray, bases: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Per case (Bullet units; bases' columns the box axes): valid, normal (3), point on the triangle (3),
    distance, then the brute-force core separation and closest-feature gap (uu)."""
    return launch_cases(gjk_kernel, 10, centres, bases, triangles)


def test_a_box_flat_over_a_triangle_gets_the_point_bullet_picks():
    """Faces parallel: every point of a patch is as close as any other, and GJK's path decides. The points
    are Bullet's (btGjkPairDetector, RocketSim's build) for the same boxes; a corner, or the patch's centre,
    would be 0.5-1.4 units away."""
    centres = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.3, -0.2, 1.0]])
    bases = np.stack([np.eye(3), yaw(np.pi / 6), np.eye(3)])
    r = run(centres, bases, np.array([FLOOR] * 3))
    bullet_points = [[0.521747828, 0.0, 0.6], [-0.456265926, -0.24046278, 0.6], [-0.243414462, -0.184723943, 0.6]]
    for row, expected in zip(r, bullet_points, strict=True):
        assert row[0] == 1.0
        assert row[1:4] == pytest.approx([0.0, 0.0, 1.0], abs=1e-4)
        assert row[4:7] == pytest.approx(expected, abs=2e-5)
        assert row[7] == pytest.approx(0.0147498846, abs=2e-6)  # 1 - 0.6 - core half height - margin


def test_distances_match_brute_force_and_overlap_is_left_to_the_caller():
    """Random boxes and triangles near each other: where the cores are apart GJK's distance is the closest
    features' gap less the margin (1e-3 uu); where they overlap, or nearly touch, it gives no answer (Bullet
    asks EPA there)."""
    rng = np.random.default_rng(7)
    n = 1000
    centres = rng.uniform(-2.0, 2.0, (n, 3))
    bases = random_bases(rng, n)
    normals = rng.normal(size=(n, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    half = np.array([float(v) for v in HITBOX_CORE]) / BT
    reach = np.abs(np.einsum("nij,ni->nj", bases, normals)) @ half  # the core's extent along the normal
    plane = centres + normals * (reach + rng.uniform(-0.1, 0.06, n))[:, None]
    u = np.cross(normals, [0.3, 0.5, 0.8])
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v = np.cross(normals, u)
    angles = rng.uniform(0.0, 2.0 * np.pi, (n, 3))
    size = rng.uniform(0.3, 5.0, (n, 1, 1))
    around = np.cos(angles)[..., None] * u[:, None] + np.sin(angles)[..., None] * v[:, None]
    triangles = plane[:, None] + size * around
    r = run(centres, bases, triangles)
    apart = r[:, 8] > 1e-3
    overlap = r[:, 8] < -1e-3
    assert apart.sum() > 100 and overlap.sum() > 50
    within = apart & (r[:, 9] > 0.51) & (r[:, 9] - float(HITBOX_MARGIN) < REACH * BT - 1e-3)
    assert within.sum() > 100 and (r[within, 0] == 1.0).all()
    assert r[within, 7] * BT == pytest.approx(r[within, 9] - float(HITBOX_MARGIN), abs=1e-3)
    assert (r[overlap, 0] == 0.0).all()
    touching = apart & (r[:, 9] < 0.49)  # cores within 0.01 units: Bullet asks EPA too and keeps the deeper
    assert (r[touching, 0] == 0.0).all()
    far = apart & (r[:, 9] - float(HITBOX_MARGIN) > REACH * BT + 2.0 * float(HITBOX_MARGIN) + 1e-3)
    assert (r[far, 0] == 0.0).all()  # beyond the margins and the threshold: no point
