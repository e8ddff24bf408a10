"""RocketSim's soccar collision meshes as one Warp triangle mesh, for the ball's arena contacts.

The `.cmf` files (rlgym-rocket-league's `collision_meshes/soccar`, found by rocketrl.sim.meshes) are
little-endian: int32 triangle count T, int32 vertex count V, T x 3 int32 vertex indices, V x 3
float32 vertices. The vertices are already placed in the arena (no mirroring or offsets), in Bullet
units of 50 uu; RocketSim adds every file as it is, plus the floor, ceiling and side-wall planes,
which the kernels handle analytically.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import NamedTuple

import numpy as np
import warp as wp

from rocketrl.sim.meshes import find_collision_meshes

CMF_UNITS_TO_UU = 50.0
"""uu per .cmf (Bullet) unit."""

_lock = threading.Lock()
_meshes: dict[tuple[str, float], SoccarMesh] = {}


def read_cmf(path: Path, units: str = "uu") -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V, 3) float32 in uu (units="bullet": as stored, 50 uu) and triangles (T, 3) int32 of one
    .cmf file."""
    if units not in ("uu", "bullet"):
        raise ValueError(f"units={units!r}: choose 'uu' or 'bullet'")
    data = Path(path).read_bytes()
    if len(data) < 8:
        raise ValueError(f"{path}: too short for a collision mesh file")
    num_tris, num_verts = (int(n) for n in np.frombuffer(data, dtype="<i4", count=2))
    expected = 8 + 12 * num_tris + 12 * num_verts
    if num_tris <= 0 or num_verts <= 0 or len(data) != expected:
        raise ValueError(
            f"{path}: {len(data)} bytes, expected {expected} for {num_tris} triangles and {num_verts} vertices"
        )
    tris = np.frombuffer(data, dtype="<i4", count=3 * num_tris, offset=8).reshape(num_tris, 3)
    verts = np.frombuffer(data, dtype="<f4", count=3 * num_verts, offset=8 + 12 * num_tris).reshape(num_verts, 3)
    if tris.min() < 0 or tris.max() >= num_verts:
        raise ValueError(f"{path}: a triangle refers to a vertex out of range")
    if units == "bullet":
        return verts.astype(np.float32), tris.astype(np.int32)
    return (verts * CMF_UNITS_TO_UU).astype(np.float32), tris.astype(np.int32)


MIN_AABB_DIMENSION = np.float32(0.002)
MIN_AABB_HALF_DIMENSION = np.float32(0.001)
QUANTIZATION_MARGIN = np.float32(1.0)
MAX_SUBTREE_NODES = 2048 // 16
"""Bullet's MAX_SUBTREE_SIZE_IN_BYTES over the size of a quantized BVH node."""


def bullet_bvh_order(verts: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """Rank (T,) int32 of each triangle in the order Bullet visits them when a query overlaps them all.

    RocketSim puts every .cmf file in a btBvhTriangleMeshShape with a quantized BVH; its queries walk the
    BVH's subtrees in the order of their headers and each subtree's leaves in array order, and a full
    contact manifold keeps points by that order. This replays Bullet's build in float32 (btOptimizedBvh::
    build, btQuantizedBvh::buildTree with its mean split and balancing, the subtree headers) on vertices
    in Bullet units (read_cmf(path, units="bullet")).
    """
    f32 = np.float32
    corners = verts[tris]  # (T, 3, 3)
    lo = corners.min(axis=1).astype(f32)
    hi = corners.max(axis=1).astype(f32)
    thin = (hi - lo) < MIN_AABB_DIMENSION
    hi = np.where(thin, hi + MIN_AABB_HALF_DIMENSION, hi).astype(f32)
    lo = np.where(thin, lo - MIN_AABB_HALF_DIMENSION, lo).astype(f32)
    used = verts[np.unique(tris)]
    bvh_min = used.min(axis=0).astype(f32) - QUANTIZATION_MARGIN
    bvh_max = used.max(axis=0).astype(f32) + QUANTIZATION_MARGIN
    steps = f32(65533.0)
    quant = (steps / (bvh_max - bvh_min)).astype(f32)

    def quantize(point: np.ndarray, is_max: bool) -> np.ndarray:
        v = ((point - bvh_min) * quant).astype(f32)
        if is_max:
            return (((v + f32(1.0)).astype(np.int64) & 0xFFFF) | 1).astype(np.uint16)
        return ((v.astype(np.int64) & 0xFFFF) & 0xFFFE).astype(np.uint16)

    def unquantize(q: np.ndarray) -> np.ndarray:
        return (q.astype(f32) / quant + bvh_min).astype(f32)

    clamp = np.full(3, QUANTIZATION_MARGIN, dtype=f32)
    bvh_min = np.minimum(bvh_min, unquantize(quantize(bvh_min, False)) - clamp).astype(f32)
    quant = (steps / (bvh_max - bvh_min)).astype(f32)
    bvh_max = np.maximum(bvh_max, unquantize(quantize(bvh_max, True)) + clamp).astype(f32)
    quant = (steps / (bvh_max - bvh_min)).astype(f32)
    centres = (f32(0.5) * (unquantize(quantize(hi, True)) + unquantize(quantize(lo, False)))).astype(f32)

    leaves = list(range(len(tris)))
    headers: list[tuple[int, int]] = []  # (first leaf, leaf count) of each subtree header, in order

    def nodes(count: int) -> int:
        return 2 * count - 1

    def build(first: int, count: int) -> None:
        if count == 1:
            return
        rows = centres[leaves[first : first + count]]
        means = (np.cumsum(rows, axis=0, dtype=f32)[-1] * (f32(1.0) / f32(count))).astype(f32)
        variance = (np.cumsum((rows - means) ** 2, axis=0, dtype=f32)[-1] * (f32(1.0) / f32(count - 1))).astype(f32)
        v0, v1, v2 = variance
        axis = (2 if v1 < v2 else 1) if v0 < v1 else (2 if v0 < v2 else 0)
        split_value = means[axis]
        split = first
        for i in range(first, first + count):
            if centres[leaves[i], axis] > split_value:
                leaves[i], leaves[split] = leaves[split], leaves[i]
                split += 1
        balanced = count // 3
        if split <= first + balanced or split >= first + count - 1 - balanced:
            split = first + (count >> 1)
        left, right = split - first, first + count - split
        build(first, left)
        build(split, right)
        if nodes(count) > MAX_SUBTREE_NODES:
            if nodes(left) <= MAX_SUBTREE_NODES:
                headers.append((first, left))
            if nodes(right) <= MAX_SUBTREE_NODES:
                headers.append((split, right))

    build(0, len(leaves))
    if not headers:
        headers.append((0, len(leaves)))
    rank = np.empty(len(tris), dtype=np.int32)
    position = 0
    for first, count in headers:
        for leaf in leaves[first : first + count]:
            rank[leaf] = position
            position += 1
    if position != len(tris):
        raise AssertionError(f"Bullet BVH order covers {position} of {len(tris)} triangles")
    return rank


EDGE_NO_NEIGHBOUR = float(2.0 * np.pi)
"""Edge angle of a triangle edge that no other triangle shares (Bullet's btTriangleInfo default)."""
EDGE_CONVEX = 1
"""Edge flag: the edge is convex (TRI_INFO_V*_CONVEX)."""
EDGE_SWAP_NORMAL_B = 2
"""Edge flag: the neighbour's normal computed from the angle points the other way (TRI_INFO_V*_SWAP_NORMALB)."""
PLANAR_EPSILON = 1.0e-4
EQUAL_VERTEX_THRESHOLD = 1.0e-8
"""Squared distance (Bullet units) under which two vertices are one (btTriangleInfoMap's defaults)."""


def _unit(v: np.ndarray) -> np.ndarray:
    """Rows of v scaled to unit length."""
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", a, b)


def _rotate(v: np.ndarray, axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rows of v turned by `angle` (rad) about the rows of `axis` (right hand)."""
    k = _unit(axis)
    c, s = np.cos(angle)[:, None], np.sin(angle)[:, None]
    return v * c + np.cross(k, v) * s + k * _dot(k, v)[:, None] * (1.0 - c)


def internal_edge_info(verts: np.ndarray, tris: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bullet's internal-edge data of one mesh file, as btGenerateInternalEdgeInfo computes it: per triangle
    edge (row 3 t + k; edge 0 joins vertices 0 and 1, edge 1 joins 1 and 2, edge 2 joins 2 and 0) the
    signed angle to the neighbouring triangle (rad, float32; EDGE_NO_NEIGHBOUR where none) and flags
    (int32, EDGE_CONVEX | EDGE_SWAP_NORMAL_B). `verts` in Bullet units, `order` the bullet_bvh_order
    (where several triangles share an edge, the last one Bullet visits wins)."""
    v = verts.astype(np.float64)
    _, canon = np.unique(np.round(v / np.sqrt(EQUAL_VERTEX_THRESHOLD)).astype(np.int64), axis=0, return_inverse=True)
    corner = canon.reshape(-1)[tris]
    area2 = np.linalg.norm(np.cross(v[tris[:, 1]] - v[tris[:, 0]], v[tris[:, 2]] - v[tris[:, 0]]), axis=1) ** 2
    usable = (area2 >= EQUAL_VERTEX_THRESHOLD) & (corner[:, 0] != corner[:, 1]) & (corner[:, 1] != corner[:, 2])
    usable &= corner[:, 0] != corner[:, 2]
    by_edge: dict[tuple[int, int], list[int]] = {}
    for t in np.flatnonzero(usable):
        for k in range(3):
            a, b = corner[t, k], corner[t, (k + 1) % 3]
            by_edge.setdefault((min(a, b), max(a, b)), []).append(int(t))
    pairs = [(ta, tb) for sharing in by_edge.values() for ta in sharing for tb in sharing if ta != tb]
    angles = np.full(3 * len(tris), EDGE_NO_NEIGHBOUR, dtype=np.float32)
    flags = np.zeros(3 * len(tris), dtype=np.int32)
    if not pairs:
        return angles, flags
    pa, pb = (np.array(x) for x in zip(*pairs, strict=True))
    pairs_kept, sa0, sa1, sb0, sb1 = [], [], [], [], []
    for n, (ta, tb) in enumerate(zip(pa, pb, strict=True)):
        shared = [(i, j) for i in range(3) for j in range(3) if corner[ta, i] == corner[tb, j]]
        if len(shared) != 2:
            continue
        (i0, j0), (i1, j1) = shared
        if (i0, i1) == (0, 2):
            i0, i1, j0, j1 = 2, 0, j1, j0
        pairs_kept.append(n)
        sa0.append(i0)
        sa1.append(i1)
        sb0.append(j0)
        sb1.append(j1)
    pa, pb = pa[pairs_kept], pb[pairs_kept]
    sa0, sa1, sb0, sb1 = (np.array(x) for x in (sa0, sa1, sb0, sb1))
    A, B = v[tris[pa]], v[tris[pb]]  # (N, 3, 3)
    rows = np.arange(len(pa))
    other_a, other_b = 3 - sa0 - sa1, 3 - sb0 - sb1
    normal_a = _unit(np.cross(A[:, 1] - A[:, 0], A[:, 2] - A[:, 0]))
    edge = _unit(A[rows, sa1] - A[rows, sa0])
    b0, b1, b2 = B[rows, sb1], B[rows, sb0], B[rows, other_b]
    normal_b = _unit(np.cross(b1 - b0, b2 - b0))
    cross_a = _unit(np.cross(edge, normal_a))
    cross_a *= np.where(_dot(cross_a, A[rows, other_a] - A[rows, sa0]) < 0, -1.0, 1.0)[:, None]
    cross_b = _unit(np.cross(edge, normal_b))
    cross_b *= np.where(_dot(cross_b, B[rows, other_b] - B[rows, sb0]) < 0, -1.0, 1.0)[:, None]
    calculated = np.cross(cross_a, cross_b)
    bent = _dot(calculated, calculated) >= PLANAR_EPSILON
    normal_calc = _unit(np.cross(np.where(bent[:, None], _unit(calculated + ~bent[:, None]), 1.0), cross_a))
    angle2 = np.arctan2(_dot(cross_b, normal_calc), _dot(cross_b, cross_a))
    convex = bent & (_dot(normal_a, cross_b) < 0.0)
    corrected = np.where(bent, np.where(convex, np.pi - angle2, angle2 - np.pi), 0.0)
    k = np.select([sa0 + sa1 == 1, sa0 + sa1 == 3], [0, 1], 2)
    edge_vec = np.where(
        (k == 0)[:, None], A[:, 0] - A[:, 1], np.where((k == 1)[:, None], A[:, 1] - A[:, 2], A[:, 2] - A[:, 0])
    )
    computed_b = _rotate(normal_a, edge_vec, -corrected)
    flag = np.where(convex, EDGE_CONVEX, 0) | np.where(_dot(computed_b, normal_b) < 0, EDGE_SWAP_NORMAL_B, 0)
    last_visited = np.argsort(order[pb], kind="stable")  # later assignments win, as Bullet's last neighbour does
    target = 3 * pa[last_visited] + k[last_visited]
    angles[target] = (-corrected[last_visited]).astype(np.float32)
    flags[target] = flag[last_visited].astype(np.int32)
    return angles, flags


def soccar_triangles(
    folder: Path | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All soccar mesh files merged: points (V, 3) float32 in uu, triangle indices (T, 3) int32, the
    file index of each triangle (T,) int32, each triangle's bullet_bvh_order within its file (T,) int32
    and its internal_edge_info: edge angles (T * 3,) float32 and edge flags (T * 3,) int32."""
    folder = (find_collision_meshes() if folder is None else Path(folder)) / "soccar"
    points, indices, parts, orders, angles, flags, offset = [], [], [], [], [], [], 0
    for part, path in enumerate(sorted(folder.glob("*.cmf"))):
        raw, tris = read_cmf(path, units="bullet")
        verts = (raw * CMF_UNITS_TO_UU).astype(np.float32)
        parts.append(np.full(len(tris), part, dtype=np.int32))
        order = bullet_bvh_order(raw, tris)
        edge_angles, edge_flags = internal_edge_info(raw, tris, order)
        orders.append(order)
        angles.append(edge_angles)
        flags.append(edge_flags)
        points.append(verts)
        indices.append(tris + offset)
        offset += len(verts)
    if not points:
        raise FileNotFoundError(f"no .cmf collision meshes in {folder}")
    return (
        np.concatenate(points),
        np.concatenate(indices),
        np.concatenate(parts),
        np.concatenate(orders),
        np.concatenate(angles),
        np.concatenate(flags),
    )


REACH_GRID_CELL = 128.0
"""Edge (uu) of the cells of mesh_reach_grid."""


def mesh_reach_grid(
    points: np.ndarray, indices: np.ndarray, reach: float, cell: float = REACH_GRID_CELL
) -> tuple[np.ndarray, np.ndarray]:
    """A coarse occupancy grid: cell (i, j, k) is 1 when some triangle's bounding box, grown by `reach` (uu),
    overlaps the cell, so a ball centred in a 0 cell cannot touch the mesh. Returns the grid (X, Y, Z)
    int32 and the corner of cell (0, 0, 0) (3,) float32; cells are `cell` uu wide and the grid covers the
    mesh grown by reach plus one cell."""
    lo = points.min(axis=0) - reach - cell
    hi = points.max(axis=0) + reach + cell
    dims = np.ceil((hi - lo) / cell).astype(int)
    grid = np.zeros(dims, dtype=np.int32)
    corners = points[indices]
    first = np.floor((corners.min(axis=1) - reach - lo) / cell).astype(int)
    last = np.floor((corners.max(axis=1) + reach - lo) / cell).astype(int) + 1
    for (x0, y0, z0), (x1, y1, z1) in zip(first, last, strict=True):
        grid[x0:x1, y0:y1, z0:z1] = 1
    return grid, lo.astype(np.float32)


class SoccarMesh(NamedTuple):
    """The soccar collision meshes on one device, for the ball's arena contacts."""

    mesh: wp.Mesh
    """All files as one triangle mesh with its BVH (uu)."""
    face_part: wp.array
    """(T,) int32 file index of each triangle."""
    face_order: wp.array
    """(T,) int32 bullet_bvh_order of each triangle within its file."""
    edge_angle: wp.array
    """(T * 3,) float32 internal_edge_info angles."""
    edge_flags: wp.array
    """(T * 3,) int32 internal_edge_info flags."""
    face_lower: wp.array
    """(T,) vec3 each triangle's bounds, lower corner (its vertices' min; the bounds the BVH tests)."""
    face_upper: wp.array
    """(T,) vec3 upper corner (its vertices' max)."""
    reach_grid: wp.array
    """(X, Y, Z) int32 mesh_reach_grid for the ball's contact reach."""
    grid_origin: wp.vec3
    """Corner of reach_grid's cell (0, 0, 0) (uu)."""


def soccar_mesh(device: wp.Device | str, reach: float) -> SoccarMesh:
    """The soccar arena meshes on `device` (see SoccarMesh), with a mesh_reach_grid for balls whose contacts
    reach `reach` uu from their centre; built once per device, reach and process."""
    device = wp.get_device(device)
    with _lock:
        key = (device.alias, float(reach))
        built = _meshes.get(key)
        if built is None:
            points, indices, parts, orders, angles, flags = soccar_triangles()
            grid, origin = mesh_reach_grid(points, indices, reach)
            corners = np.asarray(points, dtype=np.float32)[indices.reshape(-1, 3)]  # (T, 3, 3)
            built = SoccarMesh(
                mesh=wp.Mesh(
                    points=wp.array(points, dtype=wp.vec3, device=device),
                    indices=wp.array(indices.reshape(-1), dtype=wp.int32, device=device),
                ),
                face_part=wp.array(parts, dtype=wp.int32, device=device),
                face_order=wp.array(orders, dtype=wp.int32, device=device),
                edge_angle=wp.array(angles, dtype=wp.float32, device=device),
                edge_flags=wp.array(flags, dtype=wp.int32, device=device),
                face_lower=wp.array(corners.min(axis=1), dtype=wp.vec3, device=device),
                face_upper=wp.array(corners.max(axis=1), dtype=wp.vec3, device=device),
                reach_grid=wp.array(grid, dtype=wp.int32, device=device),
                grid_origin=wp.vec3(*origin.tolist()),
            )
            _meshes[key] = built
        return built
