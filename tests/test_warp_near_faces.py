"""A car's near-face list (rocketrl.sim.warp.near_faces) answers its wheel rays and its hitbox exactly as the BVH
queries it replaces: the same hits, distances, normals and contact points, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

wp = pytest.importorskip("warp")

from warp_ray_helpers import launch_rays  # noqa: E402

from rocketrl.sim.warp.arena_mesh import soccar_triangles  # noqa: E402
from rocketrl.sim.warp.car_arena_box import CONTACT_REACH  # noqa: E402
from rocketrl.sim.warp.car_mesh_manifold import update_mesh_manifolds  # noqa: E402
from rocketrl.sim.warp.engine import WarpEngine  # noqa: E402
from rocketrl.sim.warp.layout import SimState  # noqa: E402
from rocketrl.sim.warp.near_faces import (  # noqa: E402
    MAX_MEETING_FACES,
    MeetingFaces,
    box_axes,
    hitbox_centre,
    hitbox_extent,
    list_near_faces,
    listed_faces_meeting,
)
from rocketrl.sim.warp.wheel_rays import cast_wheel_ray  # noqa: E402

COUNT = 2000


@wp.kernel(enable_backward=False)  # calls engine functions, which take the SimState by reference
def rays_kernel(
    s: SimState,
    starts: wp.array(dtype=wp.vec3),
    ends: wp.array(dtype=wp.vec3),
    out: wp.array3d(dtype=float),
):
    """out[i, 0]: ray i by a BVH box query; out[i, 1]: by arena i's near-face list, listed around the ray and
    narrowed to the triangles meeting the ray's box as cast_wheels narrows it for a tick's rays (hit, fraction,
    normal x, y, z, listed)."""
    i = wp.tid()
    s.car_near_count[i, 0] = -1
    lo = wp.min(starts[i], ends[i])
    hi = wp.max(starts[i], ends[i])
    for way in range(2):
        listed = False
        faces = MeetingFaces()
        count = int(0)  # noqa: UP018 (a variable for Warp)
        if way == 1:
            listed = list_near_faces(s, i, 0, lo, hi)
            if listed:
                faces, count = listed_faces_meeting(s, i, 0, lo, hi)
                listed = count <= MAX_MEETING_FACES
        hit, fraction, normal = cast_wheel_ray(s, starts[i], ends[i], True, listed, faces, count)
        out[i, way, 0] = float(hit)
        out[i, way, 1] = fraction
        out[i, way, 2] = normal[0]
        out[i, way, 3] = normal[1]
        out[i, way, 4] = normal[2]
        out[i, way, 5] = float(listed)


@wp.kernel(enable_backward=False)
def box_kernel(s: SimState, out: wp.array3d(dtype=float)):
    """out[i, 0]: car 0 of arena i's mesh manifolds found by a BVH box query; out[i, 1]: by its near-face list
    (points flattened, then the per-manifold counts and the listed flag)."""
    i = wp.tid()
    pos = s.car_pos[i, 0]
    q = s.car_rot[i, 0]
    axes = box_axes(q)
    centre = hitbox_centre(pos, q)
    extent = hitbox_extent(axes)
    for way in range(2):
        s.car_near_count[i, 0] = -1
        listed = False
        if way == 1:
            listed = list_near_faces(s, i, 0, centre - extent, centre + extent)
        update_mesh_manifolds(s, i, 0, pos, q, centre, axes, CONTACT_REACH)
        k = int(0)  # noqa: UP018 (a variable for Warp)
        for m in range(s.car_mesh_points.shape[2]):
            for f in range(s.car_mesh_points.shape[3]):
                out[i, way, k] = s.car_mesh_points[i, 0, m, f]
                k = k + 1
        for m in range(s.car_mesh_count.shape[2]):
            out[i, way, k] = float(s.car_mesh_count[i, 0, m])
            k = k + 1
        out[i, way, k] = float(listed)


def _near_mesh_points(count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random points of random mesh triangles and those triangles' unit normals."""
    points, tris, *_ = soccar_triangles()
    faces = rng.integers(0, len(tris), count)
    corners = points[tris[faces]].astype(np.float64)
    on = np.einsum("ij,ijk->ik", rng.dirichlet(np.ones(3), count), corners)
    n = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    return on, n / np.linalg.norm(n, axis=1, keepdims=True)


def _assert_list_and_bvh_agree(starts: np.ndarray, ends: np.ndarray, min_listed: float = 0.95) -> np.ndarray:
    got = launch_rays(rays_kernel, starts, ends, (len(starts), 2, 6), arenas=len(starts))
    listed = got[:, 1, 5] == 1.0
    assert listed.mean() > min_listed, listed.mean()
    np.testing.assert_array_equal(got[listed, 1, :5], got[listed, 0, :5])
    return got


def test_wheel_rays_by_the_list_match_the_bvh_query_bit_for_bit():
    rng = np.random.default_rng(7)
    on, normal = _near_mesh_points(COUNT, rng)
    direction = -normal + rng.normal(0, 0.6, (COUNT, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    starts = on - direction * rng.uniform(0, 60, (COUNT, 1))  # some stop short
    got = _assert_list_and_bvh_agree(starts, starts + direction * 49.5)
    assert 0.3 * COUNT < got[:, 0, 0].sum() < COUNT  # most rays hit something, not all


def test_rays_through_shared_edges_and_corners_meet_the_same_triangle_both_ways():
    """A ray through an edge or corner meets two or more triangles at one distance: the first of them in the
    BVH's box-query order wins by the list and by the BVH alike. (A BVH ray query, which visits the tree in the
    ray's own order, chose another triangle than the list for 44 of these 1,969 listed rays, 17 of them with
    normals over 0.001 apart, up to 45 degrees.)"""
    rng = np.random.default_rng(9)
    points, tris, *_ = soccar_triangles()
    faces = rng.integers(0, len(tris), COUNT)
    edge = rng.integers(0, 3, COUNT)
    a = points[tris[faces, edge]].astype(np.float64)
    b = points[tris[faces, (edge + 1) % 3]].astype(np.float64)
    along = rng.uniform(0, 1, (COUNT, 1))
    along[: COUNT // 3] = 0.0  # corners
    on = a + (b - a) * along
    corners = points[tris[faces]].astype(np.float64)
    normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    direction = -normal / np.linalg.norm(normal, axis=1, keepdims=True)
    direction[COUNT // 2 :] = (0.0, 0.0, -1.0)  # straight down, as a level car's wheels cast
    starts = on - direction * rng.uniform(5, 45, (COUNT, 1))
    got = _assert_list_and_bvh_agree(starts, starts + direction * 49.5, min_listed=0.9)
    assert got[:, 0, 0].mean() > 0.5  # most reach their edge


def test_a_hitbox_by_the_list_finds_the_bvh_querys_mesh_contacts_bit_for_bit():
    rng = np.random.default_rng(8)
    on, normal = _near_mesh_points(COUNT, rng)
    engine = WarpEngine(COUNT, 1, 0, tick_skip=1)
    try:
        # Hitbox centres 0 to 60 uu off random mesh points, any orientation: from well clear to deep inside.
        centre = on + normal * rng.uniform(0, 60, (COUNT, 1))
        quat = rng.normal(size=(COUNT, 4))
        quat /= np.linalg.norm(quat, axis=1, keepdims=True)
        engine.t["car_rot"][:, 0] = torch.tensor(quat, dtype=torch.float32)
        engine.t["car_pos"][:, 0] = torch.tensor(centre, dtype=torch.float32)  # the offset moves it by 25 uu
        points = engine.t["car_mesh_points"].shape[2] * engine.t["car_mesh_points"].shape[3]
        counts = engine.t["car_mesh_count"].shape[2]
        out = wp.zeros((COUNT, 2, points + counts + 1), dtype=float, device="cpu")
        wp.launch(box_kernel, dim=COUNT, inputs=[engine._sim, out], device="cpu")
        got = out.numpy()
    finally:
        engine.close()
    listed = got[:, 1, points + counts] == 1.0
    touching = got[:, 0, points : points + counts].sum(1) > 0
    # Boxes of any orientation span more than a car on its wheels does; most are still listed.
    assert listed.mean() > 0.8 and 0.2 < touching.mean() < 0.95, (listed.mean(), touching.mean())
    np.testing.assert_array_equal(got[listed, 1, : points + counts], got[listed, 0, : points + counts])


def test_forgetting_every_near_face_list_each_step_changes_nothing():
    """A car's near-face list is a cache: relisting every step, around wherever the car is then, leaves the game
    the same bit for bit. Cars start anywhere on the floor at speed and drive at random, into walls, ramps and
    goals."""
    from rocketrl.env.setters import RandomStateSetter

    arenas = 96
    start = RandomStateSetter(1, 1)(arenas, torch.Generator().manual_seed(3))
    engines = [WarpEngine(arenas, 1, 1, tick_skip=8) for _ in range(2)]
    try:
        for engine in engines:
            engine.reset(torch.ones(arenas, dtype=torch.bool), start)
        draw = torch.Generator().manual_seed(4)
        listed = 0
        for _ in range(120):
            controls = torch.rand(arenas, 2, 8, generator=draw) * 2.0 - 1.0
            controls[..., 0] = controls[..., 0].abs()  # mostly forward
            controls[..., 5:] = (controls[..., 5:] > 0.6).float()  # jump, boost, handbrake now and then
            engines[1].t["car_near_count"].fill_(-1)
            for engine in engines:
                engine.step(controls)
            listed += int((engines[1].t["car_near_count"] >= 0).sum())
        assert listed > 2_000  # cars came near the meshes (about 9,000 of 23,040 car-steps listed)
        for name, value in engines[0].t.items():
            if not name.startswith("car_near_"):
                assert torch.equal(value, engines[1].t[name]), name
    finally:
        for engine in engines:
            engine.close()
