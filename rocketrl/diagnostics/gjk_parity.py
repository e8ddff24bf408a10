"""The warp engine's box-triangle contact (rocketrl.sim.warp.gjk, and the least overlap where the cores overlap)
against Bullet's btGjkPairDetector with its EPA solver, as RocketSim builds them (scripts/rocketsim_probe's
gjk_probe), on random cases near the car's hitbox: a box face lying flat over a large triangle (axis-aligned
or yawed) and triangles of random size and tilt placed near the box's surface.

    python -m rocketrl.diagnostics.rocketsim_probe --gjk N [--gjk-probe PATH] [--gjk-depth UNITS]

reports how many cases each answers with GJK, how far warp's point, normal and distance are from Bullet's where
both do, and, where Bullet's answer comes from EPA (the cores overlap), how far the least overlap is from it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import warp as wp

from rocketrl.sim.warp.car_arena_box import CONTACT_REACH
from rocketrl.sim.warp.car_mesh_manifold import core_overlap
from rocketrl.sim.warp.constants import HITBOX_CORE, HITBOX_HALF, HITBOX_MARGIN
from rocketrl.sim.warp.gjk import gjk_box_triangle

BT = 50.0
"""uu per Bullet unit."""


@wp.kernel
def contact_kernel(
    centre: wp.array(dtype=wp.vec3),
    basis: wp.array(dtype=wp.mat33),
    tris: wp.array(dtype=wp.vec3),
    out: wp.array2d(dtype=float),
):
    """Row i: GJK's valid, normal, point on the triangle, distance (Bullet units); then the least overlap's
    separation (uu), normal and point on the triangle (Bullet units), all world."""
    i = wp.tid()
    r = gjk_box_triangle(
        centre[i], basis[i], HITBOX_CORE / 50.0, HITBOX_MARGIN / 50.0,
        tris[3 * i], tris[3 * i + 1], tris[3 * i + 2], (HITBOX_MARGIN + CONTACT_REACH) / 50.0,
    )  # fmt: skip
    out[i, 0] = float(r.valid)
    for k in range(3):
        out[i, 1 + k] = r.normal[k]
        out[i, 4 + k] = r.on_triangle[k]
    out[i, 7] = r.distance
    c = centre[i] * 50.0
    axes = wp.transpose(basis[i])
    t0 = axes * (tris[3 * i] * 50.0 - c)
    t1 = axes * (tris[3 * i + 1] * 50.0 - c)
    t2 = axes * (tris[3 * i + 2] * 50.0 - c)
    sep, n, on_box, on_tri = core_overlap(t0, t1, t2, 1.0e9)
    normal = basis[i] * n
    point = (basis[i] * on_tri + c) / 50.0
    out[i, 8] = sep
    for k in range(3):
        out[i, 9 + k] = normal[k]
        out[i, 12 + k] = point[k]


def yaw(angle: float) -> np.ndarray:
    """(3, 3) rotation by `angle` (rad) about z."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def random_bases(rng: np.random.Generator, count: int) -> np.ndarray:
    """(count, 3, 3) uniformly random rotations (from normalised Gaussian quaternions)."""
    q = rng.normal(size=(count, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=1,
    )


def launch_cases(kernel, width: int, centres: np.ndarray, bases: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """(count, width) rows of a box-triangle `kernel` (centre, basis, triangle vertices, out) run on the CPU."""
    wp.init()
    out = wp.zeros((len(centres), width), dtype=float, device="cpu")
    wp.launch(
        kernel,
        dim=len(centres),
        inputs=[
            wp.array(centres.astype(np.float32), dtype=wp.vec3, device="cpu"),
            wp.array(bases.astype(np.float32), dtype=wp.mat33, device="cpu"),
            wp.array(tris.reshape(-1, 3).astype(np.float32), dtype=wp.vec3, device="cpu"),
            out,
        ],
        device="cpu",
    )
    return out.numpy()


def random_cases(count: int, depth: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Box centres (count, 3), bases (count, 3, 3; columns the box axes) and triangles (count, 3, 3), Bullet
    units: every first and second case a box flat over a large triangle up to 0.04 units below it (as deep as
    `depth` into it), axis-aligned or yawed; the others a random triangle near the box's surface, from `depth`
    inside it to 0.06 units out."""
    rng = np.random.default_rng(seed)
    half = np.array([float(v) for v in HITBOX_HALF]) / BT
    core = np.array([float(v) for v in HITBOX_CORE]) / BT
    bases = random_bases(rng, count)
    centres = rng.uniform(-2.0, 2.0, (count, 3)) + np.array([80.0, -60.0, 2.0])
    tris = np.zeros((count, 3, 3))
    for i in range(count):
        if i % 4 < 2:
            bases[i] = np.eye(3) if i % 4 == 0 else yaw(rng.uniform(0.0, 2.0 * np.pi))
            z = centres[i, 2] - half[2] - rng.uniform(-depth, 0.04)
            size = rng.uniform(2.0, 20.0)
            x0, y0 = centres[i, :2] + rng.uniform(-3.0, 3.0, 2)
            tris[i] = [[x0 - size, y0 - size, z], [x0 + size, y0 - size, z], [x0, y0 + size, z]]
        else:
            n = rng.normal(size=3)
            n /= np.linalg.norm(n)
            reach = np.abs(bases[i].T @ n) @ core
            centre = centres[i] + n * (reach + rng.uniform(-depth, 0.06))
            u = np.cross(n, [0.3, 0.5, 0.8])
            u /= np.linalg.norm(u)
            v = np.cross(n, u)
            size = rng.uniform(0.5, 6.0)
            angles = rng.uniform(0.0, 2.0 * np.pi, 3)
            tri = centre + size * (np.cos(angles)[:, None] * u + np.sin(angles)[:, None] * v)
            if np.dot(np.cross(tri[1] - tri[0], tri[2] - tri[0]), n) < 0:
                tri = tri[[0, 2, 1]]
            tris[i] = tri
    return centres, bases, tris


def warp_answers(centres: np.ndarray, bases: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """contact_kernel's rows for the cases, on the CPU."""
    return launch_cases(contact_kernel, 15, centres, bases, tris)


def bullet_answers(gjk_probe: Path, centres: np.ndarray, bases: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """Per case gjk_probe's found, normal (3), point on the triangle (3), distance, method (1 GJK, 3 EPA)."""
    half = np.array([float(v) for v in HITBOX_HALF]) / BT
    lines = [
        " ".join(f"{v:.9g}" for v in (*centres[i], *bases[i].T.flatten(), *tris[i].flatten()))
        for i in range(len(centres))
    ]
    out = subprocess.run(
        [str(gjk_probe), *(f"{h:.9g}" for h in half), f"{float(CONTACT_REACH) / BT:.9g}"],
        input="\n".join(lines),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return np.array([[float(v) for v in line.split()[:9]] for line in out.splitlines() if line])


def compare(gjk_probe: Path, count: int, depth: float) -> dict:
    """The report described in the module docstring (distances in uu)."""
    centres, bases, tris = random_cases(count, depth)
    ours = warp_answers(centres, bases, tris)
    bullet = bullet_answers(gjk_probe, centres, bases, tris)
    gjk = (bullet[:, 0] == 1) & (bullet[:, 8] == 1)
    both = gjk & (ours[:, 0] == 1)
    point = np.linalg.norm(ours[both, 4:7] - bullet[both, 4:7], axis=1) * BT
    report = {
        "cases": count,
        "bullet_gjk": int(gjk.sum()),
        "warp_gjk": int((ours[:, 0] == 1).sum()),
        "both_gjk": int(both.sum()),
        "point_within_0.001uu": int((point <= 0.001).sum()),
        "point_uu_max": float(point.max()) if both.any() else None,
        "normal_max": float(np.abs(ours[both, 1:4] - bullet[both, 1:4]).max()) if both.any() else None,
        "distance_uu_max": float(np.abs(ours[both, 7] - bullet[both, 7]).max() * BT) if both.any() else None,
    }
    epa = (bullet[:, 0] == 1) & (bullet[:, 8] == 3) & (ours[:, 8] <= 0.0)
    if epa.any():
        depth_gap = np.abs((ours[epa, 8] - float(HITBOX_MARGIN)) - bullet[epa, 7] * BT)
        normal_gap = np.linalg.norm(ours[epa, 9:12] - bullet[epa, 1:4], axis=1)
        flat = (np.nonzero(epa)[0] % 4) < 2
        point_gap = np.linalg.norm(ours[epa, 12:15] - bullet[epa, 4:7], axis=1) * BT
        report["bullet_epa_cores_overlap"] = int(epa.sum())
        report["least_overlap_depth_uu_max"] = float(depth_gap.max())
        report["least_overlap_normal_within_1e-4"] = int((normal_gap <= 1e-4).sum())
        report["least_overlap_point_uu_median_flat"] = float(np.median(point_gap[flat])) if flat.any() else None
        report["least_overlap_point_uu_median_tilted"] = float(np.median(point_gap[~flat])) if (~flat).any() else None
    return report
