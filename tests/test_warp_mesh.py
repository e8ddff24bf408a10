"""The warp engine's precomputed arena data: Bullet's BVH visiting order and internal-edge angles of the
collision meshes, the coarse grid that skips the ball's mesh query, and the boost-pad lookup grid."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("warp")

from rocketrl.sim.arena import BOOST_PADS  # noqa: E402
from rocketrl.sim.warp.arena_mesh import (  # noqa: E402
    EDGE_CONVEX,
    EDGE_NO_NEIGHBOUR,
    bullet_bvh_order,
    internal_edge_info,
    mesh_reach_grid,
    soccar_triangles,
)
from rocketrl.sim.warp.constants import BALL_ARENA_RADIUS, PAD_RADIUS_BIG, PAD_RADIUS_SMALL  # noqa: E402
from rocketrl.sim.warp.layout import PAD_GRID_CELL, pad_grid  # noqa: E402


@pytest.fixture(scope="module")
def soccar():
    return soccar_triangles()


def test_bvh_order_ranks_every_triangle_of_a_file_once(soccar):
    points, indices, parts, orders, *_ = soccar
    for part in np.unique(parts):
        ranks = orders[parts == part]
        assert sorted(ranks.tolist()) == list(range(len(ranks)))


def test_bvh_order_of_a_row_of_triangles_follows_bullets_mean_split():
    """Eight thin triangles along x: Bullet splits at the mean centre, larger centres first, so the BVH visits
    the row from +x down to -x (ranks 7, 6, ..., 0 for triangles listed from -x to +x)."""
    verts, tris = [], []
    for i in range(8):
        x = float(i)
        verts += [(x, 0.0, 0.0), (x + 0.5, 0.0, 0.0), (x, 0.5, 0.0)]
        tris.append((3 * i, 3 * i + 1, 3 * i + 2))
    ranks = bullet_bvh_order(np.array(verts, dtype=np.float32), np.array(tris, dtype=np.int32))
    assert ranks.tolist() == [7, 6, 5, 4, 3, 2, 1, 0]


def test_internal_edge_angles_flat_convex_and_open_edges():
    """Two triangles of a flat square share an edge at angle 0; a tent (two faces whose normals are 60 degrees
    apart, meeting at a raised crease) has a convex edge of 60 degrees; every other edge has no neighbour."""
    square = np.array([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)], dtype=np.float32)
    tris = np.array([(0, 1, 2), (0, 2, 3)], dtype=np.int32)
    angles, flags = internal_edge_info(square, tris, np.array([0, 1]))
    shared = np.abs(angles) < EDGE_NO_NEIGHBOUR
    assert shared.sum() == 2 and np.all(angles[shared] == 0.0)
    ridge = np.array([(0, 0, 0), (1, 0, 0), (0.5, 0.5, 0.5), (0, 1, 0)], dtype=np.float32)
    tris = np.array([(0, 1, 2), (0, 2, 3)], dtype=np.int32)
    angles, flags = internal_edge_info(ridge, tris, np.array([0, 1]))
    shared = np.abs(angles) < EDGE_NO_NEIGHBOUR
    assert shared.sum() == 2
    assert np.all(np.abs(np.abs(angles[shared]) - np.pi / 3) < 1e-4)
    assert np.all((flags[shared] & EDGE_CONVEX) != 0)


def test_reach_grid_never_skips_a_triangle_in_reach(soccar):
    """Where the grid says no triangle is in reach, brute force agrees (sampled ball centres)."""
    points, indices, *_ = soccar
    reach = float(BALL_ARENA_RADIUS) + 1.0
    grid, origin = mesh_reach_grid(points, indices, reach)
    rng = np.random.default_rng(0)
    centres = rng.uniform([-4200, -6100, 0], [4200, 6100, 2100], size=(3000, 3)).astype(np.float32)
    cells = np.floor((centres - origin) / 128.0).astype(int)
    skipped = centres[grid[cells[:, 0], cells[:, 1], cells[:, 2]] == 0]
    assert len(skipped) > 1000, "most of the field is far from the meshes"
    tri = points[indices].astype(np.float64)
    lo, hi = tri.min(axis=1), tri.max(axis=1)
    for c in skipped[:400]:
        gap = np.linalg.norm(np.maximum(np.maximum(lo - c, c - hi), 0.0), axis=1)
        assert gap.min() > float(BALL_ARENA_RADIUS), f"a triangle lies within reach of {c}"


def test_pad_grid_names_the_pad_under_every_point():
    grid, origin = pad_grid(BOOST_PADS, float(PAD_RADIUS_BIG), float(PAD_RADIUS_SMALL))
    pads = np.array([(x, y) for x, y, _, _ in BOOST_PADS])
    radii = np.array([float(PAD_RADIUS_BIG) if big else float(PAD_RADIUS_SMALL) for *_, big in BOOST_PADS])
    rng = np.random.default_rng(1)
    near = pads[rng.integers(0, len(pads), 4000)] + rng.uniform(-260, 260, size=(4000, 2))
    points = np.concatenate([near, rng.uniform([-4100, -5200], [4100, 5200], size=(4000, 2))])
    for x, y in points:
        inside = np.flatnonzero(np.hypot(pads[:, 0] - x, pads[:, 1] - y) < radii)
        i, j = int((x - origin[0]) // PAD_GRID_CELL), int((y - origin[1]) // PAD_GRID_CELL)
        named = grid[i, j] if 0 <= i < grid.shape[0] and 0 <= j < grid.shape[1] else -1
        assert len(inside) <= 1
        if len(inside):
            assert named == inside[0], f"({x:.0f}, {y:.0f}) lies on pad {inside[0]}, the grid names {named}"


def test_the_step_kernel_is_built_with_the_engines_own_cpu_flags() -> None:
    """The step module carries CPU_COMPILER_FLAGS (heavy inlining: LLVM's defaults step at under half the rate),
    whatever the global wp.config says; Warp resolves a module's own flags before the global ones."""
    import warp as wp

    from rocketrl.sim.warp import kernels

    if not hasattr(wp.config, "cpu_compiler_flags"):
        pytest.skip("this Warp version takes no CPU compiler flags")
    options = wp.get_module_options(kernels)
    assert options["cpu_compiler_flags"] == kernels.CPU_COMPILER_FLAGS
    assert "-inline-threshold=9000" in kernels.CPU_COMPILER_FLAGS and "-march=native" in kernels.CPU_COMPILER_FLAGS
    assert options["enable_backward"] is False
