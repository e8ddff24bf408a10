"""One tick of a soccar arena as Warp functions, in the phases both ways of stepping run (kernels.step_kernel:
all of them in one thread per arena; phase_kernels: each its own kernel): the cars' starts (controls, wheels,
jumps, boost), the ball and the meetings (its arena contact, car-ball and car-car contacts), the cars' ends (body
against the arena, integration) and the arena's end (ball integration, boost pads, goals)."""

from __future__ import annotations

import warp as wp

from rocketrl.sim.arena import RESPAWN_X_BLUE, RESPAWN_Y_BLUE
from rocketrl.sim.warp import layout
from rocketrl.sim.warp.car import car_pre_tick
from rocketrl.sim.warp.car_arena_box import car_arena_box_contact
from rocketrl.sim.warp.car_ball import car_ball_contacts
from rocketrl.sim.warp.car_contacts import car_car_contact
from rocketrl.sim.warp.car_mesh_manifold import clear_mesh_manifolds
from rocketrl.sim.warp.car_plane_manifold import clear_planes
from rocketrl.sim.warp.collisions import ball_arena_contact
from rocketrl.sim.warp.constants import (
    BALL_DRAG,
    BALL_MAX_ANG_SPEED,
    BALL_MAX_SPEED,
    BALL_RADIUS,
    CAR_MAX_ANG_SPEED,
    CAR_MAX_SPEED,
    CAR_RESPAWN_Z,
    GOAL_SCORE_Y,
    GRAVITY_Z,
    PAD_AMOUNT_SMALL,
    PAD_COOLDOWN_BIG,
    PAD_COOLDOWN_SMALL,
    PAD_HEIGHT,
    PAD_RADIUS_BIG,
    PAD_RADIUS_SMALL,
    SPAWN_BOOST,
    SUPERSONIC_MAINTAIN_MAX_TIME,
    SUPERSONIC_MAINTAIN_MIN_SPEED,
    SUPERSONIC_START_SPEED,
    TICK_TIME,
)
from rocketrl.sim.warp.layout import (
    E_PICKUPS,
    F_BOOST,
    F_BUMP_COOLDOWN,
    F_DEMO_TIMER,
    F_SUPERSONIC_TIME,
    I_BUMP_OTHER,
    I_DEMOED,
    I_LAST_HIT_TICK,
    I_SUPERSONIC,
    NUM_CAR_EVENTS,
    NUM_CAR_F,
    NUM_CAR_I,
    SimStateRef,
)

PAD_GRID_CELL = wp.constant(layout.PAD_GRID_CELL)
"""Cell edge (uu) of SimState.pad_grid (layout.pad_grid)."""
RESPAWN_X = wp.constant(wp.vec4(*RESPAWN_X_BLUE))
RESPAWN_Y = wp.constant(RESPAWN_Y_BLUE)


@wp.func
def limit(v: wp.vec3, max_len: float) -> wp.vec3:
    n = wp.length(v)
    if n > max_len:
        return v * (max_len / n)
    return v


@wp.func
def integrate_rotation(q: wp.quat, w: wp.vec3) -> wp.quat:
    angle = wp.length(w) * TICK_TIME
    if angle < 1.0e-9:
        return q
    return wp.normalize(wp.quat_from_axis_angle(w / wp.length(w), angle) * q)


@wp.func
def respawn(s: SimStateRef, a: int, c: int, tick: int):
    """Put a demolished car back at one of the four respawn spots of its team, with 33.3 boost; which one follows
    rocketrl.sim.arena.respawn_spot, as the RocketSim engine's respawns do."""
    k = (tick + c) % 4
    sign = 1.0
    yaw = 1.5707963
    if s.car_team[a, c] != 0:
        sign = -1.0
        yaw = -1.5707963
    s.car_pos[a, c] = wp.vec3(RESPAWN_X[k] * sign, RESPAWN_Y * sign, CAR_RESPAWN_Z)
    s.car_vel[a, c] = wp.vec3(0.0)
    s.car_ang[a, c] = wp.vec3(0.0)
    s.car_rot[a, c] = wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), yaw)
    for k2 in range(NUM_CAR_F):
        s.car_f[a, c, k2] = 0.0
    for k3 in range(NUM_CAR_I):
        s.car_i[a, c, k3] = 0
    s.car_f[a, c, F_BOOST] = SPAWN_BOOST
    s.car_i[a, c, I_BUMP_OTHER] = -1
    s.car_i[a, c, I_LAST_HIT_TICK] = -10
    clear_planes(s, a, c)
    clear_mesh_manifolds(s, a, c)


@wp.func
def car_post_tick(s: SimStateRef, a: int, c: int):
    """Integrate car c's position and orientation, add bump velocity, limit speeds, supersonic state."""
    s.car_pos[a, c] = s.car_pos[a, c] + s.car_vel[a, c] * TICK_TIME
    s.car_rot[a, c] = integrate_rotation(s.car_rot[a, c], s.car_ang[a, c])
    v = limit(s.car_vel[a, c] + s.car_cache[a, c], CAR_MAX_SPEED)
    w = limit(s.car_ang[a, c], CAR_MAX_ANG_SPEED)
    s.car_cache[a, c] = wp.vec3(0.0)
    s.car_vel[a, c] = v
    s.car_ang[a, c] = w
    speed = wp.length(v)
    sup = s.car_i[a, c, I_SUPERSONIC]
    sup_time = s.car_f[a, c, F_SUPERSONIC_TIME]
    if sup != 0 and sup_time < SUPERSONIC_MAINTAIN_MAX_TIME:
        sup = int(speed >= SUPERSONIC_MAINTAIN_MIN_SPEED)
    else:
        sup = int(speed >= SUPERSONIC_START_SPEED)
    if sup != 0:
        sup_time = sup_time + TICK_TIME
    else:
        sup_time = 0.0
    s.car_i[a, c, I_SUPERSONIC] = sup
    s.car_f[a, c, F_SUPERSONIC_TIME] = sup_time
    s.car_f[a, c, F_BUMP_COOLDOWN] = wp.max(s.car_f[a, c, F_BUMP_COOLDOWN] - TICK_TIME, 0.0)


@wp.func
def pad_under(s: SimStateRef, p: wp.vec3) -> int:
    """The only boost pad whose pickup circle may contain position p (from SimState.pad_grid), or -1."""
    i = int(wp.floor((p[0] - s.pad_grid_origin[0]) / PAD_GRID_CELL))
    j = int(wp.floor((p[1] - s.pad_grid_origin[1]) / PAD_GRID_CELL))
    if i < 0 or j < 0 or i >= s.pad_grid.shape[0] or j >= s.pad_grid.shape[1]:
        return -1
    return s.pad_grid[i, j]


@wp.func
def update_pads(s: SimStateRef, a: int, num_cars: int, num_pads: int):
    """Count inactive pads down, then let each car (in order) pick up an active pad under it (cylinder
    test; the pad grid names the one pad a car can be over)."""
    for k in range(num_pads):
        if s.pad_active[a, k] == 0:
            t = s.pad_timer[a, k] - TICK_TIME
            if t <= 0.0:
                t = 0.0
                s.pad_active[a, k] = 1
            s.pad_timer[a, k] = t
    for c in range(num_cars):
        if s.car_i[a, c, I_DEMOED] == 0:
            p = s.car_pos[a, c]
            k = pad_under(s, p)
            if k >= 0:
                if s.pad_active[a, k] != 0:
                    pad = s.pads[k]
                    big = pad[3] > 0.5
                    radius = PAD_RADIUS_SMALL
                    if big:
                        radius = PAD_RADIUS_BIG
                    dx = p[0] - pad[0]
                    dy = p[1] - pad[1]
                    boost = s.car_f[a, c, F_BOOST]
                    if dx * dx + dy * dy < radius * radius and wp.abs(p[2] - pad[2]) < PAD_HEIGHT and boost < 100.0:
                        if big:
                            boost = 100.0
                            s.pad_timer[a, k] = PAD_COOLDOWN_BIG
                        else:
                            boost = wp.min(boost + PAD_AMOUNT_SMALL, 100.0)
                            s.pad_timer[a, k] = PAD_COOLDOWN_SMALL
                        s.car_f[a, c, F_BOOST] = boost
                        s.pad_active[a, k] = 0
                        s.ev_car[a, c, E_PICKUPS] = s.ev_car[a, c, E_PICKUPS] + 1


# The phase functions below have one call site in step_kernel and one in their phase kernel: inlined, the
# step kernel is the code it was before the phases were named.
@wp.func(inline=True)
def begin_step(s: SimStateRef, a: int, num_cars: int):
    """Clear arena a's events of the step."""
    s.ev_goal[a] = -1
    for c in range(num_cars):
        for e in range(NUM_CAR_EVENTS):
            s.ev_car[a, c, e] = 0


@wp.func(inline=True)
def car_tick_start(s: SimStateRef, a: int, c: int, tick: int):
    """Car c's start of a tick: a demolished car's timer (and respawn), else its own forces (car_pre_tick)."""
    if s.car_i[a, c, I_DEMOED] != 0:
        timer = s.car_f[a, c, F_DEMO_TIMER] - TICK_TIME
        s.car_f[a, c, F_DEMO_TIMER] = wp.max(timer, 0.0)
        if timer <= 0.0:
            respawn(s, a, c, tick)
    else:
        car_pre_tick(s, a, c)


@wp.func(inline=True)
def ball_and_meetings(s: SimStateRef, a: int, num_cars: int, tick: int):
    """The ball's gravity and drag and its arena contact, then the car-ball and car-car contacts of arena a."""
    decay = wp.pow(1.0 - BALL_DRAG, TICK_TIME)
    s.ball_vel[a] = s.ball_vel[a] * decay + wp.vec3(0.0, 0.0, GRAVITY_Z * TICK_TIME)
    # The ball's arena contact before the cars', as Bullet orders them in the ball's island: a car's hit on a
    # ball resting on the floor then follows RocketSim's (docs/results/engine-parity.md, contact order).
    ball_arena_contact(s, a)
    car_ball_contacts(s, a, num_cars, tick)
    for i in range(num_cars):
        for j in range(i + 1, num_cars):
            car_car_contact(s, a, i, j)


@wp.func(inline=True)
def car_tick_end(s: SimStateRef, a: int, c: int):
    """Car c's body against the arena, then its integration (nothing for a demolished car)."""
    if s.car_i[a, c, I_DEMOED] == 0:
        car_arena_box_contact(s, a, c)
        car_post_tick(s, a, c)


@wp.func(inline=True)
def end_tick(s: SimStateRef, a: int, num_cars: int, num_pads: int, tick: int):
    """Arena a's end of a tick: the ball's integration and limits, boost pads, goals, the tick count."""
    s.ball_pos[a] = s.ball_pos[a] + s.ball_vel[a] * TICK_TIME
    bv = limit(s.ball_vel[a] + s.ball_cache[a], BALL_MAX_SPEED)
    s.ball_cache[a] = wp.vec3(0.0)
    s.ball_vel[a] = bv
    s.ball_ang[a] = limit(s.ball_ang[a], BALL_MAX_ANG_SPEED)
    update_pads(s, a, num_cars, num_pads)
    by = s.ball_pos[a][1]
    if s.goal_latch[a] == 0 and wp.abs(by) > GOAL_SCORE_Y + BALL_RADIUS:
        team = 0
        if by < 0.0:
            team = 1
        s.goal_latch[a] = 1
        s.scores[a, team] = s.scores[a, team] + 1
        s.ev_goal[a] = team
    s.tick[a] = tick + 1


@wp.func(inline=True)
def end_step_car(s: SimStateRef, a: int, c: int):
    """Car c's forward and up vectors, read by the env layer."""
    q = s.car_rot[a, c]
    s.car_fwd[a, c] = wp.quat_rotate(q, wp.vec3(1.0, 0.0, 0.0))
    s.car_up[a, c] = wp.quat_rotate(q, wp.vec3(0.0, 0.0, 1.0))
