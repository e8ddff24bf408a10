"""The collision-mesh triangles near a car, found by one BVH query and shared by its wheel rays and its body.

A car near the meshes asks the BVH, each tick, four ray queries (its wheels) and one box query (its hitbox);
each costs about as much as the rest of the car's tick. Instead, one box query over a region holding all five,
grown by NEAR_MARGIN, lists the triangles whose bounds meet it (at most MAX_NEAR_FACES) and keeps them with the
region in SimState (car_near_faces, car_near_count, car_near_region). The mesh never moves, so the list stays
exact for any smaller box inside that region, on this tick and later ones: a wheel ray or the hitbox whose
bounds lie inside it tests the listed triangles (the rays with Warp's own ray-triangle test, the hitbox after
the same bounds test the BVH makes), and gets what its own BVH query would give; only a car that left the
region queries the BVH again. Lengths in uu.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.constants import HITBOX_COLLIDED, HITBOX_OFFSET
from rocketrl.sim.warp.layout import SimStateRef

MAX_NEAR_FACES = wp.constant(64)
"""Triangles a car's list holds; a region with more is not listed (its rays and box query the BVH)."""
MAX_MEETING_FACES = wp.constant(24)
"""Listed triangles listed_faces_meeting holds (the size of MeetingFaces)."""
MeetingFaces = wp.types.vector(length=24, dtype=wp.int32)
"""Mesh triangle indices (listed_faces_meeting's, the first MAX_MEETING_FACES of them used)."""
NEAR_MARGIN = wp.constant(24.0)
"""How far (uu) the listed region reaches past the car's rays and hitbox, so that the list serves the ticks
that follow while the car stays within it."""


@wp.func
def box_axes(q: wp.quat) -> wp.mat33:
    """The hitbox's axes (rows forward, right, up) at orientation q."""
    return wp.matrix_from_rows(
        wp.quat_rotate(q, wp.vec3(1.0, 0.0, 0.0)),
        wp.quat_rotate(q, wp.vec3(0.0, 1.0, 0.0)),
        wp.quat_rotate(q, wp.vec3(0.0, 0.0, 1.0)),
    )


@wp.func
def hitbox_centre(pos: wp.vec3, q: wp.quat) -> wp.vec3:
    """Centre of the hitbox of a car at pos, orientation q."""
    return pos + wp.quat_rotate(q, HITBOX_OFFSET)


@wp.func
def hitbox_extent(axes: wp.mat33) -> wp.vec3:
    """Half extent along the world axes of the box Bullet collides (HITBOX_COLLIDED) with axes `axes`."""
    half = wp.vec3(HITBOX_COLLIDED[0], HITBOX_COLLIDED[1], HITBOX_COLLIDED[2])
    return wp.vec3(
        wp.abs(axes[0, 0]) * half[0] + wp.abs(axes[1, 0]) * half[1] + wp.abs(axes[2, 0]) * half[2],
        wp.abs(axes[0, 1]) * half[0] + wp.abs(axes[1, 1]) * half[1] + wp.abs(axes[2, 1]) * half[2],
        wp.abs(axes[0, 2]) * half[0] + wp.abs(axes[1, 2]) * half[1] + wp.abs(axes[2, 2]) * half[2],
    )


@wp.func
def face_meets(s: SimStateRef, face: int, lo: wp.vec3, hi: wp.vec3) -> bool:
    """Whether mesh triangle `face`'s bounds meet the box lo..hi: the test a BVH box query makes on each
    triangle (bounds from the vertices' min and max, held in arena_face_lower/upper; touching counts)."""
    f_lo = s.arena_face_lower[face]
    f_hi = s.arena_face_upper[face]
    return not (
        lo[0] > f_hi[0] or lo[1] > f_hi[1] or lo[2] > f_hi[2] or hi[0] < f_lo[0] or hi[1] < f_lo[1] or hi[2] < f_lo[2]
    )


@wp.func
def listed_for(s: SimStateRef, a: int, c: int, lo: wp.vec3, hi: wp.vec3) -> bool:
    """Whether car c's list holds every triangle whose bounds meet the box lo..hi (the box lies inside its
    listed region)."""
    if s.car_near_count[a, c] < 0:
        return False
    r_lo = wp.vec3(s.car_near_region[a, c, 0], s.car_near_region[a, c, 1], s.car_near_region[a, c, 2])
    r_hi = wp.vec3(s.car_near_region[a, c, 3], s.car_near_region[a, c, 4], s.car_near_region[a, c, 5])
    return (
        lo[0] >= r_lo[0] and lo[1] >= r_lo[1] and lo[2] >= r_lo[2] and hi[0] <= r_hi[0] and hi[1] <= r_hi[1]
        and hi[2] <= r_hi[2]
    )  # fmt: skip


@wp.func
def listed_faces_meeting(s: SimStateRef, a: int, c: int, lo: wp.vec3, hi: wp.vec3):
    """The triangles of car c's near-face list whose bounds meet the box lo..hi, in the list's order (the first
    MAX_MEETING_FACES of them), and how many there are (more than MAX_MEETING_FACES: too many to hold). For a box
    inside the listed region (listed_for) these are the triangles a BVH box query over it finds."""
    faces = MeetingFaces()
    count = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
    for i in range(s.car_near_count[a, c]):
        f = s.car_near_faces[a, c, i]
        if face_meets(s, f, lo, hi):
            if count < MAX_MEETING_FACES:
                faces[count] = f
            count = count + 1
    return faces, count


@wp.func
def list_near_faces(s: SimStateRef, a: int, c: int, lo: wp.vec3, hi: wp.vec3) -> bool:
    """Unless car c's list already covers lo..hi: list the triangles whose bounds meet lo..hi grown by
    NEAR_MARGIN (one BVH query). False when they are too many to list (the list is then marked empty)."""
    if listed_for(s, a, c, lo, hi):
        return True
    r_lo = lo - wp.vec3(NEAR_MARGIN)
    r_hi = hi + wp.vec3(NEAR_MARGIN)
    count = int(0)  # noqa: UP018 (a variable for Warp, not a constant)
    query = wp.mesh_query_aabb(s.arena_mesh, r_lo, r_hi)
    face = int(0)  # noqa: UP018 (mesh_query_aabb_next writes the face index into it)
    while wp.mesh_query_aabb_next(query, face):
        if count < MAX_NEAR_FACES:
            s.car_near_faces[a, c, count] = face
        count = count + 1
    if count > MAX_NEAR_FACES:
        s.car_near_count[a, c] = -1
        return False
    s.car_near_count[a, c] = count
    for k in range(3):
        s.car_near_region[a, c, k] = r_lo[k]
        s.car_near_region[a, c, 3 + k] = r_hi[k]
    return True
