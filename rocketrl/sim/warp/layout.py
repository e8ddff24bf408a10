"""Buffers of the warp engine: one structure of arrays for all arenas, and the column meaning of the
per-car float and int tables.

Shapes: A arenas, C cars per arena, P boost pads. Every array is a view of a torch tensor owned by
the engine, so the env layer reads them without copies.
"""

from __future__ import annotations

import warp as wp

# car_f columns (float32): seconds unless noted.
F_BOOST = 0  # boost amount in [0, 100]
F_JUMP_TIME = 1
F_FLIP_TIME = 2
F_AIR_TIME = 3  # air time since the first jump ended
F_BOOST_TIME = 4  # time spent boosting (for the 0.1 s minimum)
F_HANDBRAKE = 5  # powerslide amount in [0, 1]
F_SUPERSONIC_TIME = 6
F_DEMO_TIMER = 7  # seconds until a demolished car respawns
F_BUMP_COOLDOWN = 8
F_DODGE_X = 9  # dodge torque direction in car axes (roll part)
F_DODGE_Y = 10  # (pitch part)
F_AUTOFLIP_TIME = 11  # auto-flip torque time left
F_AUTOFLIP_DIR = 12  # auto-flip torque sign about the forward axis (+1 / -1)
F_CONTACT_NX = 13  # normal of the arena surface the car touches without standing on it (last tick)
F_CONTACT_NY = 14
F_CONTACT_NZ = 15
# Wheels (rocketrl.sim.warp.vehicle): values set during a tick for the wheels' next tick, as in
# RocketSim's btVehicleRL, where the friction impulses of a tick use what the previous tick set.
F_STEER_ANGLE = 16  # front wheels' steer angle (rad)
F_ENGINE_FORCE = 17  # drive force of each wheel (uu/s^2 x car mass)
F_BRAKE = 18  # brake amount of each wheel in [0, 1]
F_LAT_FRICTION = 19  # 4 columns, wheel k at F_LAT_FRICTION + k: lateral friction factor
F_LONG_FRICTION = 23  # 4 columns: longitudinal friction factor
F_PUSHBACK = 27  # 4 columns: extra suspension impulse of a wheel pressed past its rest (uu/s x car mass)
# What this tick's forces and torques (gravity, boost, throttle in the air, jump, air control, auto-roll)
# added to the car's velocities: Bullet integrates them inside its solver, so a contact's restitution
# sees the velocities without them (rocketrl.sim.warp.car_arena_box).
F_FORCE_DV = 31  # 3 columns: linear (uu/s)
F_TORQUE_DW = 34  # 3 columns: angular (rad/s)
NUM_CAR_F = 37

# car_i columns (int32 flags / counters).
I_GROUND = 0
I_HAS_JUMPED = 1
I_IS_JUMPING = 2
I_HAS_DOUBLE_JUMPED = 3
I_HAS_FLIPPED = 4
I_DEMOED = 5
I_SUPERSONIC = 6
I_LAST_JUMP = 7  # jump input of the previous tick
I_LAST_HIT_TICK = 8
I_BUMP_OTHER = 9  # car index of the last bump victim, -1 if none
I_WORLD_CONTACT = 10  # 1 when the car touched the arena last tick without standing on it
I_AUTOFLIP = 11  # 1 while an auto-flip is turning the car over
I_WHEEL_CONTACTS = 12  # wheels whose ray touches the arena this tick
NUM_CAR_I = 13

# ev_car columns (int32 events of the current step).
E_TOUCHED = 0
E_WAS_DEMOED = 1
E_DEMOS = 2
E_PICKUPS = 3
NUM_CAR_EVENTS = 4

PAD_GRID_CELL = 256.0
"""Cell edge (uu) of the boost-pad lookup grid."""


def pad_grid(pads: list[tuple[float, float, float, bool]], radius_big: float, radius_small: float):
    """The boost-pad lookup grid: (X, Y) int32 with the index of the one pad whose pickup circle meets each
    PAD_GRID_CELL-wide cell (-1 for none), and the corner of cell (0, 0) (x, y) in uu. Raises if two pads'
    circles meet one cell (the soccar pads are at least 1,060 uu apart)."""
    import numpy as np

    xy = np.array([(x, y) for x, y, _, _ in pads], dtype=np.float64)
    radii = np.array([radius_big if big else radius_small for *_, big in pads])
    lo = xy.min(axis=0) - radii.max() - PAD_GRID_CELL
    dims = np.ceil((xy.max(axis=0) + radii.max() + PAD_GRID_CELL - lo) / PAD_GRID_CELL).astype(int)
    grid = np.full(dims, -1, dtype=np.int32)
    for k, ((x, y), r) in enumerate(zip(xy, radii, strict=True)):
        for i in range(int((x - r - lo[0]) // PAD_GRID_CELL), int((x + r - lo[0]) // PAD_GRID_CELL) + 1):
            for j in range(int((y - r - lo[1]) // PAD_GRID_CELL), int((y + r - lo[1]) // PAD_GRID_CELL) + 1):
                cx = min(max(x, lo[0] + i * PAD_GRID_CELL), lo[0] + (i + 1) * PAD_GRID_CELL)
                cy = min(max(y, lo[1] + j * PAD_GRID_CELL), lo[1] + (j + 1) * PAD_GRID_CELL)
                if (cx - x) ** 2 + (cy - y) ** 2 <= r * r:
                    if grid[i, j] >= 0:
                        raise ValueError(f"boost pads {grid[i, j]} and {k} both reach cell ({i}, {j})")
                    grid[i, j] = k
    return grid, lo.astype(np.float32)


# Ball contact manifolds: slots per arena, points per manifold, and the ball_contacts columns.
BALL_MANIFOLDS = 6
MANIFOLD_POINTS = 4
C_OFFSET = 0  # 3 floats
C_NORMAL = 3  # 3 floats
C_DISTANCE = 6
CONTACT_FLOATS = 7

# Car-plane contact points (rocketrl.sim.warp.car_plane_manifold): car_plane_points columns.
P_LOCAL = 0  # 3 floats: the point on the car, body axes, relative to the car origin (uu)
P_ON_PLANE = 3  # 3 floats: the point on the plane (world uu)
P_IMPULSE = 6  # normal impulse the solver gave the point this tick (diagnostics)
P_DISTANCE = 7  # signed distance (uu)
PLANE_POINT_FLOATS = 8

# Car-mesh contact manifolds (rocketrl.sim.warp.car_mesh_manifold): manifolds per car, car_mesh_points columns.
CAR_MESH_MANIFOLDS = 3
M_LOCAL = 0  # 3 floats: the point on the car, body axes, relative to the car origin (uu)
M_ON_MESH = 3  # 3 floats: the point on the mesh (world uu)
M_NORMAL = 6  # 3 floats: unit normal from the mesh towards the car, fixed when the point is made
M_IMPULSE = 9  # normal impulse the solver gave the point this tick (diagnostics)
M_DISTANCE = 10  # signed distance (uu)
MESH_POINT_FLOATS = 11

# Make the column numbers usable inside kernels.
for _name, _value in list(globals().items()):
    if (
        _name[:2] in ("F_", "I_", "E_", "C_", "P_", "M_")
        or _name in ("BALL_MANIFOLDS", "MANIFOLD_POINTS", "PLANE_POINT_FLOATS")
        or _name in ("CAR_MESH_MANIFOLDS", "MESH_POINT_FLOATS")
    ) and isinstance(_value, int):
        globals()[_name] = wp.constant(_value)


@wp.struct
class SimState:
    """All simulation buffers of A arenas (see the module docstring for shapes)."""

    ball_pos: wp.array(dtype=wp.vec3)
    """(A,) uu."""
    ball_vel: wp.array(dtype=wp.vec3)
    """(A,) uu/s."""
    ball_ang: wp.array(dtype=wp.vec3)
    """(A,) rad/s."""
    ball_cache: wp.array(dtype=wp.vec3)
    """(A,) extra ball velocity from car hits, added at the end of the tick (uu/s)."""
    car_pos: wp.array2d(dtype=wp.vec3)
    """(A, C) uu."""
    car_vel: wp.array2d(dtype=wp.vec3)
    """(A, C) uu/s."""
    car_ang: wp.array2d(dtype=wp.vec3)
    """(A, C) rad/s."""
    car_rot: wp.array2d(dtype=wp.quat)
    """(A, C) orientation (x, y, z, w): body axes forward, right, up."""
    car_fwd: wp.array2d(dtype=wp.vec3)
    """(A, C) unit forward vector, written at the end of each step."""
    car_up: wp.array2d(dtype=wp.vec3)
    """(A, C) unit up vector, written at the end of each step."""
    car_cache: wp.array2d(dtype=wp.vec3)
    """(A, C) bump velocity added at the end of the tick (uu/s)."""
    car_f: wp.array3d(dtype=float)
    """(A, C, NUM_CAR_F) float state, columns F_*."""
    car_i: wp.array3d(dtype=int)
    """(A, C, NUM_CAR_I) int state, columns I_*."""
    car_team: wp.array2d(dtype=int)
    """(A, C) 0 blue, 1 orange."""
    controls: wp.array3d(dtype=float)
    """(A, C, 8) throttle, steer, pitch, yaw, roll, jump, boost, handbrake."""
    pad_timer: wp.array2d(dtype=float)
    """(A, P) seconds until the pad is back; 0 when active."""
    pad_active: wp.array2d(dtype=int)
    """(A, P) 1 when the pad can be picked up."""
    pad_grid: wp.array2d(dtype=int)
    """(X, Y) the pad whose pickup circle meets each PAD_GRID_CELL-wide cell, -1 for none (pad_grid())."""
    pad_grid_origin: wp.vec3
    """Corner (x, y; z unused) of pad_grid's cell (0, 0) (uu)."""
    pads: wp.array(dtype=wp.vec4)
    """(P,) x, y, z, 1 for a big pad."""
    scores: wp.array2d(dtype=int)
    """(A, 2) goals of blue and orange."""
    tick: wp.array(dtype=int)
    """(A,) ticks simulated."""
    goal_latch: wp.array(dtype=int)
    """(A,) 1 once a goal was counted, until the next reset."""
    ev_goal: wp.array(dtype=int)
    """(A,) -1, or the team that scored during the step."""
    ev_last_touch: wp.array(dtype=int)
    """(A,) car that touched the ball last, -1 if none since the reset."""
    ev_car: wp.array3d(dtype=int)
    """(A, C, NUM_CAR_EVENTS) per-car events of the step, columns E_*."""
    ball_manifold_object: wp.array2d(dtype=int)
    """(A, BALL_MANIFOLDS) scratch of the ball's arena contact, rebuilt every tick: the arena object of each
    contact manifold (a mesh file's index, or PLANE_OBJECT + plane), -1 for a free slot."""
    ball_manifold_count: wp.array2d(dtype=int)
    """(A, BALL_MANIFOLDS) scratch: contact points held by each manifold, 0 to MANIFOLD_POINTS."""
    ball_contacts: wp.array3d(dtype=float)
    """(A, BALL_MANIFOLDS * MANIFOLD_POINTS, CONTACT_FLOATS) scratch: the manifolds' points, C_OFFSET the
    point on the ball relative to its centre (uu), C_NORMAL the unit normal from the arena, C_DISTANCE the
    signed gap (uu)."""
    car_plane_count: wp.array3d(dtype=int)
    """(A, C, 4) 1 where a car touches an arena plane this tick, else 0 (car_plane_manifold)."""
    car_plane_points: wp.array4d(dtype=float)
    """(A, C, 4, PLANE_POINT_FLOATS) each plane's point this tick, columns P_*."""
    car_mesh_part: wp.array3d(dtype=int)
    """(A, C, CAR_MESH_MANIFOLDS) the mesh file of each of a car's mesh contact manifolds, -1 free
    (car_mesh_manifold)."""
    car_mesh_count: wp.array3d(dtype=int)
    """(A, C, CAR_MESH_MANIFOLDS) points in each of those manifolds."""
    car_mesh_points: wp.array4d(dtype=float)
    """(A, C, CAR_MESH_MANIFOLDS * MANIFOLD_POINTS, MESH_POINT_FLOATS) those manifolds' points, columns M_*."""
    car_near_faces: wp.array3d(dtype=int)
    """(A, C, MAX_NEAR_FACES) a cache: the mesh triangles whose bounds meet the car's listed region
    (rocketrl.sim.warp.near_faces)."""
    car_near_count: wp.array2d(dtype=int)
    """(A, C) how many of car_near_faces are listed; -1: none (no region listed)."""
    car_near_region: wp.array3d(dtype=float)
    """(A, C, 6) the listed region's lower then upper corner (uu)."""
    arena_mesh: wp.uint64
    """Id of the soccar collision mesh (rocketrl.sim.warp.arena_mesh), triangles in uu."""
    arena_face_lower: wp.array(dtype=wp.vec3)
    """(T,) each mesh triangle's bounds, lower corner (uu; arena_mesh.SoccarMesh.face_lower)."""
    arena_face_upper: wp.array(dtype=wp.vec3)
    """(T,) upper corner (uu)."""
    arena_face_part: wp.array(dtype=int)
    """(T,) index of the .cmf file each mesh triangle comes from."""
    arena_reach_grid: wp.array3d(dtype=int)
    """(X, Y, Z) 1 where a ball centred in the 128 uu cell may touch the mesh (arena_mesh.mesh_reach_grid)."""
    arena_grid_origin: wp.vec3
    """Corner of arena_reach_grid's cell (0, 0, 0) (uu)."""
    arena_face_order: wp.array(dtype=int)
    """(T,) rank of each mesh triangle in Bullet's traversal of its file (arena_mesh.bullet_bvh_order)."""
    arena_edge_angle: wp.array(dtype=float)
    """(T * 3,) Bullet's angle (rad) to the triangle across edge k of triangle t (row 3 t + k), 2 pi if none."""
    arena_edge_flags: wp.array(dtype=int)
    """(T * 3,) edge flags: 1 convex, 2 the neighbour's normal is flipped (arena_mesh.internal_edge_info)."""
    plane_only_cars: int
    """1: the cars' wheel rays and bodies ignore the collision meshes and meet only the four arena planes (to
    measure what the mesh queries cost; the ball still meets the meshes); 0 (default): the full arena."""


SimStateRef = wp.ref[SimState] if hasattr(wp, "ref") else SimState
"""How the engine's Warp functions take the SimState: by reference where Warp has wp.ref (1.19 and later), else
by value. The struct is 2.4 KB; passed by value, each call the compiler keeps out of line copies it, and on the
CPU the step runs 1.14-1.44x faster without those copies (benchmarks/engine_ab.py; docs/results/speed.md, The
simulation struct by reference)."""
