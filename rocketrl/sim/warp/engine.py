"""WarpEngine: A soccar arenas stepped by one Warp kernel launch per step, with RocketSimEngine's interface.

State lives in torch tensors on `device` that Warp kernels read and write in place (wp.from_torch,
no copies); a step launches one thread per arena that runs all `tick_skip` ticks. `state` and the
value of `step` are snapshots (clones), valid after later steps, as with RocketSimEngine.

Warp's CPU backend runs a launch on one core, so on the CPU a step splits the arenas into contiguous chunks
(CHUNKS_PER_WORKER per worker) that `num_workers` Python threads take in turn, one launch per chunk (the
compiled kernel runs without the GIL). Arenas cost unequal time (a car on a ramp or at a wall queries the
collision meshes, one on the open floor does not), so one fixed range per thread left a thread idle while
the other finished. On CUDA a step is one launch. `split_step` runs the same step as phase kernels instead
(phase_kernels.py), `cuda_graph` replays a step's launches as one CUDA graph.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch
import warp as wp

from rocketrl.sim.arena import (
    BLUE_TEAM,
    BOOST_PADS,
    DEFAULT_TICK_SKIP,
    NUM_BOOST_PADS,
    ORANGE_TEAM,
    RESET_ON_GROUND_MAX_Z,
    RESET_ON_GROUND_MIN_UP_Z,
)
from rocketrl.sim.engine_base import Engine
from rocketrl.sim.rocketsim import DOUBLE_JUMP_MAX_DELAY
from rocketrl.sim.state import BatchState, ResetState, kickoff_reset_state
from rocketrl.sim.warp.arena_mesh import soccar_mesh
from rocketrl.sim.warp.constants import BALL_ARENA_RADIUS, PAD_RADIUS_BIG, PAD_RADIUS_SMALL
from rocketrl.sim.warp.layout import (
    BALL_MANIFOLDS,
    CAR_MESH_MANIFOLDS,
    CONTACT_FLOATS,
    E_DEMOS,
    E_PICKUPS,
    E_TOUCHED,
    E_WAS_DEMOED,
    F_AIR_TIME,
    F_BOOST,
    I_BUMP_OTHER,
    I_DEMOED,
    I_GROUND,
    I_HAS_DOUBLE_JUMPED,
    I_HAS_FLIPPED,
    I_HAS_JUMPED,
    I_LAST_HIT_TICK,
    MANIFOLD_POINTS,
    MESH_POINT_FLOATS,
    NUM_CAR_EVENTS,
    NUM_CAR_F,
    NUM_CAR_I,
    PLANE_POINT_FLOATS,
    SimState,
    pad_grid,
)
from rocketrl.sim.warp.near_faces import MAX_NEAR_FACES

_initialised = False


def init_warp() -> None:
    """Initialise Warp once per process, quietly."""
    global _initialised
    if not _initialised:
        wp.config.quiet = True
        wp.init()
        _initialised = True


def euler_to_matrix(rotation: torch.Tensor) -> torch.Tensor:
    """Rotation matrices (..., 3, 3) with columns forward, right, up of (pitch, yaw, roll) angles (..., 3).

    RocketSim's Angle convention (yaw, then pitch, then roll); see rocketrl.sim.state.euler_to_forward_up.
    """
    pitch, yaw, roll = rotation.unbind(-1)
    cp, sp, cy, sy, cr, sr = pitch.cos(), pitch.sin(), yaw.cos(), yaw.sin(), roll.cos(), roll.sin()
    forward = torch.stack([cp * cy, cp * sy, sp], dim=-1)
    right = torch.stack([cy * sp * sr - cr * sy, sy * sp * sr + cr * cy, -cp * sr], dim=-1)
    up = torch.stack([-cr * cy * sp - sr * sy, -cr * sy * sp + sr * cy, cp * cr], dim=-1)
    return torch.stack([forward, right, up], dim=-1)


def matrix_to_quat(m: torch.Tensor) -> torch.Tensor:
    """Quaternions (..., 4) as (x, y, z, w) of rotation matrices (..., 3, 3)."""
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    w = torch.sqrt(torch.clamp(1 + m00 + m11 + m22, min=0)) / 2
    x = torch.sqrt(torch.clamp(1 + m00 - m11 - m22, min=0)) / 2
    y = torch.sqrt(torch.clamp(1 - m00 + m11 - m22, min=0)) / 2
    z = torch.sqrt(torch.clamp(1 - m00 - m11 + m22, min=0)) / 2
    x = torch.copysign(x, m[..., 2, 1] - m[..., 1, 2])
    y = torch.copysign(y, m[..., 0, 2] - m[..., 2, 0])
    z = torch.copysign(z, m[..., 1, 0] - m[..., 0, 1])
    q = torch.stack([x, y, z, w], dim=-1)
    return q / q.norm(dim=-1, keepdim=True)


CHUNKS_PER_WORKER = 8
"""Launches per worker and step on the CPU: enough for the workers to even out unequal arenas, few enough that
a launch's cost (about 20 us) stays under 1% of a step."""


def state_tensors(a: int, blue_size: int, orange_size: int, dev: torch.device) -> dict[str, torch.Tensor]:
    """Zeroed state of `a` arenas (cars at rest with identity rotations, every pad active) as torch tensors on
    `dev`: float32 (uu, uu/s, rad/s, s) and int32 (flags, counts, indices), shapes as layout.py's SimState."""
    n = blue_size + orange_size
    f32 = dict(dtype=torch.float32, device=dev)
    i32 = dict(dtype=torch.int32, device=dev)
    tensors = {
        "ball_pos": torch.zeros(a, 3, **f32),
        "ball_vel": torch.zeros(a, 3, **f32),
        "ball_ang": torch.zeros(a, 3, **f32),
        "ball_cache": torch.zeros(a, 3, **f32),
        "car_pos": torch.zeros(a, n, 3, **f32),
        "car_vel": torch.zeros(a, n, 3, **f32),
        "car_ang": torch.zeros(a, n, 3, **f32),
        "car_rot": torch.zeros(a, n, 4, **f32),
        "car_fwd": torch.zeros(a, n, 3, **f32),
        "car_up": torch.zeros(a, n, 3, **f32),
        "car_cache": torch.zeros(a, n, 3, **f32),
        "car_f": torch.zeros(a, n, NUM_CAR_F, **f32),
        "car_i": torch.zeros(a, n, NUM_CAR_I, **i32),
        "car_team": torch.tensor([BLUE_TEAM] * blue_size + [ORANGE_TEAM] * orange_size, **i32)
        .expand(a, n)
        .contiguous(),
        "controls": torch.zeros(a, n, 8, **f32),
        "pad_timer": torch.zeros(a, NUM_BOOST_PADS, **f32),
        "pad_active": torch.ones(a, NUM_BOOST_PADS, **i32),
        "pads": torch.tensor([[x, y, z, float(big)] for x, y, z, big in BOOST_PADS], **f32),
        "scores": torch.zeros(a, 2, **i32),
        "tick": torch.zeros(a, **i32),
        "goal_latch": torch.zeros(a, **i32),
        "ev_goal": torch.full((a,), -1, **i32),
        "ev_last_touch": torch.full((a,), -1, **i32),
        "ev_car": torch.zeros(a, n, NUM_CAR_EVENTS, **i32),
        "ball_manifold_object": torch.full((a, BALL_MANIFOLDS), -1, **i32),
        "ball_manifold_count": torch.zeros(a, BALL_MANIFOLDS, **i32),
        "ball_contacts": torch.zeros(a, BALL_MANIFOLDS * MANIFOLD_POINTS, CONTACT_FLOATS, **f32),
        "car_plane_count": torch.zeros(a, n, 4, **i32),
        "car_plane_points": torch.zeros(a, n, 4, PLANE_POINT_FLOATS, **f32),
        "car_mesh_part": torch.full((a, n, CAR_MESH_MANIFOLDS), -1, **i32),
        "car_mesh_count": torch.zeros(a, n, CAR_MESH_MANIFOLDS, **i32),
        "car_mesh_points": torch.zeros(a, n, CAR_MESH_MANIFOLDS * MANIFOLD_POINTS, MESH_POINT_FLOATS, **f32),
        "car_near_faces": torch.zeros(a, n, MAX_NEAR_FACES, **i32),
        "car_near_count": torch.full((a, n), -1, **i32),
        "car_near_region": torch.zeros(a, n, 6, **f32),
    }
    tensors["car_rot"][..., 3] = 1.0
    return tensors


class WarpEngine(Engine):
    """N soccar arenas of blue_size vs orange_size cars, simulated by Warp kernels on `device`.

    An `Engine` (sim/engine_base.py) as RocketSimEngine is: `state`, `step(controls (A, C, 8))` (its
    `step_async` runs the whole step, `step_wait` reads it out), `reset(mask, state)`,
    `reset_kickoff_native(mask, seed)`, `num_workers`, `copy_seconds`, `close()`.

    num_workers: on the CPU, threads that launch the kernel on chunks of arenas in turn (None: every CPU core,
    at most one per arena). On CUDA it is ignored and a step is one launch (num_workers = 1).

    plane_only_cars: the cars' wheel rays and bodies meet only the four arena planes, not the collision
    meshes (goals, back walls, ramps, corners), so cars leave the field through them; for measuring what the
    cars' mesh queries cost (benchmarks/engine_throughput.py), not for play.

    block_dim: on CUDA, threads per block of the step's kernels (None: Warp's default, 256); each value
    builds its own copy of the kernels. Ignored on the CPU.

    split_step: run each tick as phase kernels (phase_kernels.py: the cars' starts and ends a thread per car, the ball
    and the meetings and the arena's end a thread per arena) instead of one kernel that runs the whole step per
    arena; the state is the same bit for bit.

    cuda_graph: on CUDA, record a step's launches once as a CUDA graph and replay it (a step of the phase
    kernels is 2 + 4 * tick_skip launches). Ignored on the CPU.
    """

    def __init__(
        self,
        num_arenas: int,
        blue_size: int = 1,
        orange_size: int = 1,
        tick_skip: int = DEFAULT_TICK_SKIP,
        device: str | torch.device = "cpu",
        seed: int = 0,
        num_workers: int | None = None,
        plane_only_cars: bool = False,
        block_dim: int | None = None,
        split_step: bool = False,
        cuda_graph: bool = False,
    ) -> None:
        super().__init__(num_arenas, blue_size, orange_size, tick_skip, device, seed)
        if num_workers is not None and num_workers < 1:
            raise ValueError(f"num_workers={num_workers}: must be at least 1 (or None for every CPU core)")
        if block_dim is not None and (block_dim < 32 or block_dim > 1024 or block_dim % 32):
            raise ValueError(f"block_dim={block_dim}: must be a multiple of 32 from 32 to 1024 (None: Warp's 256)")
        init_warp()
        self.stepping = "kernels"
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        if self.device.type == "cpu":
            workers = num_workers if num_workers is not None else (os.cpu_count() or 1)
            self.num_workers = max(1, min(workers, num_arenas))
        else:
            self.num_workers = 1
        chunks = 1 if self.num_workers == 1 else min(num_arenas, self.num_workers * CHUNKS_PER_WORKER)
        bounds = [num_arenas * k // chunks for k in range(chunks + 1)]
        self._ranges = [(lo, hi - lo) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        """(first arena, arena count) of each launch of a step, taken by the workers in turn."""
        self._pool = ThreadPoolExecutor(self.num_workers - 1) if self.num_workers > 1 else None
        a, dev = num_arenas, self.device
        self.t = state_tensors(a, blue_size, orange_size, dev)
        """The engine's state as torch tensors; the SimState's Warp arrays share their memory."""
        self._wp_device = wp.device_from_torch(dev)
        self._sim, self._mesh = self._bind_state(plane_only_cars)
        self._team = self.t["car_team"].long()
        from rocketrl.sim.warp import kernels, phase_kernels

        self._kernels = kernels
        self._phase_kernels = phase_kernels
        self.split_step = split_step
        self.cuda_graph = cuda_graph and self.device.type == "cuda"
        self.phase_seconds: dict[str, float] = {}
        """split_step on the CPU: CPU seconds spent in each phase kernel (summed over the launch threads)."""
        self._phase_lock = threading.Lock()
        self._graphs: dict[int, object] = {}
        """ticks -> the captured graph of a step of that many ticks (cuda_graph)."""
        self._launch_options = {"block_dim": block_dim} if block_dim and self.device.type == "cuda" else {}
        # compile once, before threads launch it
        module = (phase_kernels.begin_step_kernel if split_step else kernels.step_kernel).module
        wp.load_module(module, device=self._wp_device, **self._launch_options)
        self.reset_kickoff_native(torch.ones(a, dtype=torch.bool), seed)

    def _bind_state(self, plane_only_cars: bool) -> tuple[SimState, object]:
        """The kernels' SimState: Warp views of self.t, the arena's collision mesh and the boost pads' grid; and
        the mesh, which the engine keeps so that its BVH lives as long as the engine."""
        vec_dtypes = {"car_rot": wp.quat, "pads": wp.vec4}
        sim = SimState()
        for name, tensor in self.t.items():
            dtype = vec_dtypes.get(name, wp.vec3 if tensor.shape[-1] == 3 and tensor.dtype == torch.float32 else None)
            if name in (
                "car_f", "car_i", "controls", "ev_car", "scores", "car_team", "pad_timer", "pad_active",
                "car_plane_count", "car_plane_points", "car_mesh_part", "car_mesh_count", "car_mesh_points",
                "car_near_faces", "car_near_count", "car_near_region",
            ):  # fmt: skip
                dtype = None
            if name in ("tick", "goal_latch", "ev_goal", "ev_last_touch"):
                dtype = None
            setattr(sim, name, wp.from_torch(tensor, dtype=dtype) if dtype else wp.from_torch(tensor))
        arena = soccar_mesh(self._wp_device, reach=float(BALL_ARENA_RADIUS) + 1.0)
        sim.arena_mesh = arena.mesh.id
        sim.arena_face_part = arena.face_part
        sim.arena_face_order = arena.face_order
        sim.arena_edge_angle = arena.edge_angle
        sim.arena_edge_flags = arena.edge_flags
        sim.arena_face_lower = arena.face_lower
        sim.arena_face_upper = arena.face_upper
        sim.arena_reach_grid = arena.reach_grid
        sim.arena_grid_origin = arena.grid_origin
        sim.plane_only_cars = int(plane_only_cars)
        grid, origin = pad_grid(BOOST_PADS, float(PAD_RADIUS_BIG), float(PAD_RADIUS_SMALL))
        sim.pad_grid = wp.array(grid, dtype=wp.int32, device=self._wp_device)
        sim.pad_grid_origin = wp.vec3(float(origin[0]), float(origin[1]), 0.0)
        return sim, arena.mesh

    # ----------------------------------------------------------------------------------- stepping
    def _start_step(self, controls: torch.Tensor) -> None:
        """Copy controls (A, C, 8) in and run the whole step: the kernel launches return when it is done."""
        started = time.perf_counter()
        self.t["controls"].copy_(controls.detach())
        self.copy_seconds += time.perf_counter() - started
        self.step_raw()

    def _finish_step(self) -> BatchState:
        return self._publish()

    def step_raw(self, ticks: int | None = None) -> None:
        """Advance every arena with the controls already set and read nothing (for benchmarks)."""
        self._check_idle("step_raw()")
        ticks = self.tick_skip if ticks is None else ticks
        if self.cuda_graph:
            graph = self._graphs.get(ticks)
            if graph is None:
                with wp.ScopedCapture(device=self._wp_device) as capture:
                    self._launch(0, self.num_arenas, ticks)
                graph = self._graphs[ticks] = capture.graph
            wp.capture_launch(graph)
            return
        if self._pool is None:
            self._launch(0, self.num_arenas, ticks)
            return
        chunks = iter(self._ranges)  # shared: each worker takes the next chunk (next() holds the GIL)

        def work() -> None:
            for first, count in chunks:
                self._launch(first, count, ticks)

        pending = [self._pool.submit(work) for _ in range(self.num_workers - 1)]
        work()
        for future in pending:
            future.result()

    def _launch(self, first_arena: int, count: int, ticks: int) -> None:
        """Run the step on arenas first_arena .. first_arena + count - 1 (one kernel, or the phase kernels)."""
        k, sim, cars = self._phase_kernels, self._sim, self.num_cars

        timed = self.device.type == "cpu" and self.split_step

        def launch(kernel: wp.Kernel, dim: int | tuple[int, int], *inputs: object) -> None:
            started = time.thread_time() if timed else 0.0
            wp.launch(kernel, dim=dim, inputs=[sim, *inputs], device=self._wp_device, **self._launch_options)
            if timed:  # a CPU launch returns when its kernel is done
                spent = time.thread_time() - started
                with self._phase_lock:
                    self.phase_seconds[kernel.key] = self.phase_seconds.get(kernel.key, 0.0) + spent

        if not self.split_step:
            launch(self._kernels.step_kernel, count, ticks, cars, NUM_BOOST_PADS, first_arena)
            return
        launch(k.begin_step_kernel, count, cars, first_arena)
        for _ in range(ticks):
            launch(k.car_tick_start_kernel, (count, cars), first_arena)
            launch(k.ball_and_meetings_kernel, count, cars, first_arena)
            launch(k.car_tick_end_kernel, (count, cars), first_arena)
            launch(k.end_tick_kernel, count, cars, NUM_BOOST_PADS, first_arena)
        launch(k.end_step_kernel, (count, cars), first_arena)

    # ----------------------------------------------------------------------------------- resets
    def reset(self, mask: torch.Tensor, state: ResetState | Callable[[int], ResetState]) -> BatchState:
        """Put the arenas selected by `mask` (A,) bool into `state` (K = mask.sum() arenas).

        `state` may be a ResetState or a function of K that makes one. Pads become active, jumps and
        flips available, cars un-demolished, events cleared; scores are kept. Other arenas are untouched.
        """
        rows = self._rows(mask)
        if rows.numel() == 0:
            return self._state
        if callable(state):
            state = state(int(rows.numel()))
        if state.num_arenas != rows.numel():
            raise ValueError(
                f"ResetState holds {state.num_arenas} arenas but the reset mask selects {rows.numel()}; "
                "give one state per selected arena"
            )
        state.validate(self.num_cars)
        self._write(rows, state)
        self._state = self._publish()
        return self._state

    def reset_kickoff_native(self, mask: torch.Tensor, seed: int = 0) -> BatchState:
        """Kickoff for the masked arenas: the five soccar spawns shuffled per arena (seeded by seed + arena
        index), blue on them and orange on their mirror images, ball at rest at the centre, 33.3 boost."""
        rows = self._rows(mask)
        if rows.numel() == 0:
            return self._state
        orders = [torch.randperm(5, generator=torch.Generator().manual_seed(seed + arena)) for arena in rows.tolist()]
        state = kickoff_reset_state(torch.stack(orders), self.blue_size, self.orange_size)
        self._write(rows, state)
        self._state = self._publish()
        return self._state

    def _rows(self, mask: torch.Tensor) -> torch.Tensor:
        self._check_idle("reset")
        mask = torch.as_tensor(mask).detach().to("cpu").bool()
        if tuple(mask.shape) != (self.num_arenas,):
            raise ValueError(f"reset mask has shape {tuple(mask.shape)}, expected ({self.num_arenas},)")
        return torch.nonzero(mask).flatten().to(self.device)

    def _write(self, rows: torch.Tensor, state: ResetState) -> None:
        """Write a ResetState into the given arena rows and clear their flags, pads and events."""
        t, dev = self.t, self.device

        def put(name: str, value: torch.Tensor) -> None:
            t[name][rows] = value.to(dev, torch.float32)

        put("ball_pos", state.ball_pos)
        put("ball_vel", state.ball_vel)
        put("ball_ang", state.ball_ang_vel)
        put("car_pos", state.car_pos)
        put("car_vel", state.car_vel)
        put("car_ang", state.car_ang_vel)
        matrix = euler_to_matrix(state.car_rotation.to(dev, torch.float32))
        t["car_rot"][rows] = matrix_to_quat(matrix)
        t["car_fwd"][rows] = matrix[..., 0]
        t["car_up"][rows] = matrix[..., 2]
        t["ball_cache"][rows] = 0.0
        t["car_cache"][rows] = 0.0
        t["car_plane_count"][rows] = 0
        t["car_mesh_part"][rows] = -1
        t["car_mesh_count"][rows] = 0
        car_f = torch.zeros(len(rows), self.num_cars, NUM_CAR_F, dtype=torch.float32, device=dev)
        car_f[..., F_BOOST] = state.car_boost.to(dev, torch.float32)
        t["car_f"][rows] = car_f
        car_i = torch.zeros(len(rows), self.num_cars, NUM_CAR_I, dtype=torch.int32, device=dev)
        car_i[..., I_BUMP_OTHER] = -1
        car_i[..., I_LAST_HIT_TICK] = -10
        pos = state.car_pos.to(dev, torch.float32)
        upright = matrix[..., 2, 2] > RESET_ON_GROUND_MIN_UP_Z
        car_i[..., I_GROUND] = ((pos[..., 2] < RESET_ON_GROUND_MAX_Z) & upright).int()
        t["car_i"][rows] = car_i
        t["pad_timer"][rows] = 0.0
        t["pad_active"][rows] = 1
        t["goal_latch"][rows] = 0
        t["ev_goal"][rows] = -1
        t["ev_last_touch"][rows] = -1
        t["ev_car"][rows] = 0
        t["controls"][rows] = 0.0

    # ----------------------------------------------------------------------------------- readout
    def _publish(self) -> BatchState:
        """A snapshot of the buffers as a BatchState (new tensors on the engine's device)."""
        started = time.perf_counter()
        t = self.t
        car_i = t["car_i"]
        on_ground = car_i[..., I_GROUND] > 0
        has_jumped = car_i[..., I_HAS_JUMPED] > 0
        flip = (
            ~on_ground
            & (car_i[..., I_HAS_DOUBLE_JUMPED] == 0)
            & (car_i[..., I_HAS_FLIPPED] == 0)
            & (~has_jumped | (t["car_f"][..., F_AIR_TIME] < DOUBLE_JUMP_MAX_DELAY))
        )
        ev = t["ev_car"]
        state = BatchState(
            ball_pos=t["ball_pos"].clone(),
            ball_vel=t["ball_vel"].clone(),
            ball_ang_vel=t["ball_ang"].clone(),
            car_pos=t["car_pos"].clone(),
            car_vel=t["car_vel"].clone(),
            car_ang_vel=t["car_ang"].clone(),
            car_forward=t["car_fwd"].clone(),
            car_up=t["car_up"].clone(),
            car_boost=t["car_f"][..., F_BOOST].clone(),
            car_on_ground=on_ground,
            car_has_jump=on_ground & ~has_jumped,
            car_has_flip=flip,
            car_demolished=car_i[..., I_DEMOED] > 0,
            car_team=self._team,
            pad_active=t["pad_active"] > 0,
            pad_timer=t["pad_timer"].clone(),
            blue_score=t["scores"][:, 0].long(),
            orange_score=t["scores"][:, 1].long(),
            goal_scored=t["ev_goal"].long(),
            car_touched_ball=ev[..., E_TOUCHED] > 0,
            car_was_demolished=ev[..., E_WAS_DEMOED] > 0,
            car_demolitions=ev[..., E_DEMOS].long(),
            car_boost_pickups=ev[..., E_PICKUPS].long(),
            ball_last_touch=t["ev_last_touch"].long(),
        )
        self.copy_seconds += time.perf_counter() - started
        return state

    def close(self) -> None:
        """Release the buffers and the launch threads. Safe to call twice, and while a step is in flight."""
        self._closed = True
        self._in_flight = False
        self._graphs.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
