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

import numpy as np
import warp as wp

from rocketrl.sim.meshes import find_collision_meshes

CMF_UNITS_TO_UU = 50.0
"""uu per .cmf (Bullet) unit."""

_lock = threading.Lock()
_meshes: dict[str, tuple[wp.Mesh, wp.array, wp.array]] = {}


def read_cmf(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V, 3) float32 in uu and triangles (T, 3) int32 of one .cmf file."""
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
    return (verts * CMF_UNITS_TO_UU).astype(np.float32), tris.astype(np.int32)


def edge_neighbour_normals(points: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Unit normal (T * 3, 3) float32 of the triangle across each edge (edge k of triangle t joins its
    vertices k and (k + 1) % 3; row 3 t + k), or the triangle's own normal where no other triangle of
    the same mesh file shares the edge. Vertices are matched by position (0.01 uu)."""
    tri = points[indices]
    normals = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
    keys = np.round(points * 100.0).astype(np.int64)
    owner: dict[tuple, list[int]] = {}
    for t, (i0, i1, i2) in enumerate(indices):
        for k, (u, v) in enumerate(((i0, i1), (i1, i2), (i2, i0))):
            a, b = tuple(keys[u]), tuple(keys[v])
            owner.setdefault((min(a, b), max(a, b)), []).append(3 * t + k)
    out = np.repeat(normals, 3, axis=0)
    for edges in owner.values():
        if len(edges) == 2:
            e0, e1 = edges
            out[e0], out[e1] = normals[e1 // 3], normals[e0 // 3]
    return out.astype(np.float32)


def soccar_triangles(folder: Path | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All soccar mesh files merged: points (V, 3) float32 in uu, triangle indices (T, 3) int32, the
    file index of each triangle (T,) int32 and edge_neighbour_normals (T * 3, 3) float32 (neighbours
    within each file)."""
    folder = (find_collision_meshes() if folder is None else Path(folder)) / "soccar"
    points, indices, parts, neighbours, offset = [], [], [], [], 0
    for part, path in enumerate(sorted(folder.glob("*.cmf"))):
        verts, tris = read_cmf(path)
        parts.append(np.full(len(tris), part, dtype=np.int32))
        neighbours.append(edge_neighbour_normals(verts, tris))
        points.append(verts)
        indices.append(tris + offset)
        offset += len(verts)
    if not points:
        raise FileNotFoundError(f"no .cmf collision meshes in {folder}")
    return np.concatenate(points), np.concatenate(indices), np.concatenate(parts), np.concatenate(neighbours)


def soccar_mesh(device: wp.Device | str) -> tuple[wp.Mesh, wp.array, wp.array]:
    """The soccar arena mesh (with its BVH), the file index of each triangle (T,) int32 and the
    edge_neighbour_normals (T * 3,) vec3, on `device`, built once per device and process."""
    device = wp.get_device(device)
    with _lock:
        built = _meshes.get(device.alias)
        if built is None:
            points, indices, parts, neighbours = soccar_triangles()
            mesh = wp.Mesh(
                points=wp.array(points, dtype=wp.vec3, device=device),
                indices=wp.array(indices.reshape(-1), dtype=wp.int32, device=device),
            )
            built = (
                mesh,
                wp.array(parts, dtype=wp.int32, device=device),
                wp.array(neighbours, dtype=wp.vec3, device=device),
            )
            _meshes[device.alias] = built
        return built
