"""Car controls -> velocity changes for one tick: ground driving, jumps, double jumps, dodges, air
control and boost, following RocketSim's Car::_PreTickUpdate.

In the air the tick is RocketSim's: impulses (double jump, dodge) change the velocity at once, the
flip's z damping scales it, then the tick's forces (gravity, air throttle, jump, boost) and torques (air
control, flip) are integrated, as Bullet does after the pre-tick update; the engine then moves the car
with the new velocities and clamps them (2300 uu/s, 5.5 rad/s).

On its wheels the car is RocketSim's raycast vehicle (rocketrl.sim.warp.vehicle): four wheel rays
against the arena's planes and collision meshes, suspension, tyre friction, drive, brake, steering and
the sticky force along the contact normals, with RocketSim's ground boost; 3 or 4 wheels touching make
the car on the ground (floor, ramps, walls or ceiling), 1 or 2 leave it in the air without air control.
A tick there: the wheels' friction impulses (from what the previous tick set), the wheel update for the
next tick and the sticky force, air control, jump, flip, then the suspension and friction impulses, then
boost.

A car touching the arena with its body recovers as in Rocket League: jump on its roof auto-flips it (an
impulse off the surface and a roll torque), throttle auto-rolls it onto its wheels.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.car_air import air_control, auto_flip, dodge_impulse
from rocketrl.sim.warp.constants import (
    BOOST_ACCEL_AIR,
    BOOST_ACCEL_GROUND,
    BOOST_MIN_TIME,
    BOOST_USED_PER_SECOND,
    DODGE_DEADZONE,
    DOUBLEJUMP_MAX_DELAY,
    FLIP_TORQUE_TIME,
    FLIP_Z_DAMP_120,
    FLIP_Z_DAMP_END,
    FLIP_Z_DAMP_START,
    GRAVITY_Z,
    JUMP_ACCEL,
    JUMP_IMMEDIATE,
    JUMP_MAX_TIME,
    JUMP_MIN_TIME,
    JUMP_PRE_MIN_ACCEL_SCALE,
    JUMP_RESET_TIME_PAD,
    POWERSLIDE_FALL_RATE,
    POWERSLIDE_RISE_RATE,
    THROTTLE_AIR_ACCEL,
    TICK_TIME,
)
from rocketrl.sim.warp.layout import (
    F_AIR_TIME,
    F_BOOST,
    F_BOOST_TIME,
    F_CONTACT_NX,
    F_CONTACT_NY,
    F_CONTACT_NZ,
    F_DODGE_X,
    F_DODGE_Y,
    F_FLIP_TIME,
    F_FORCE_DV,
    F_HANDBRAKE,
    F_JUMP_TIME,
    F_STEER_ANGLE,
    F_TORQUE_DW,
    I_AUTOFLIP,
    I_GROUND,
    I_HAS_DOUBLE_JUMPED,
    I_HAS_FLIPPED,
    I_HAS_JUMPED,
    I_IS_JUMPING,
    I_LAST_JUMP,
    I_WHEEL_CONTACTS,
    I_WORLD_CONTACT,
    SimStateRef,
)
from rocketrl.sim.warp.vehicle import (
    apply_wheel_impulses,
    friction_impulses,
    update_wheels,
    wheel_auto_roll,
    wheel_axle,
)
from rocketrl.sim.warp.wheel_rays import WheelHits, cast_wheels, ground_up, wheels_touching


@wp.func(inline=True)
def read_controls(s: SimStateRef, a: int, c: int):
    """Car c's controls, clamped: throttle, steer, pitch, yaw, roll in [-1, 1], jump (0 or 1), boost
    (bool) and handbrake (0.0 or 1.0)."""
    throttle = wp.clamp(s.controls[a, c, 0], -1.0, 1.0)
    steer = wp.clamp(s.controls[a, c, 1], -1.0, 1.0)
    pitch = wp.clamp(s.controls[a, c, 2], -1.0, 1.0)
    yaw = wp.clamp(s.controls[a, c, 3], -1.0, 1.0)
    roll = wp.clamp(s.controls[a, c, 4], -1.0, 1.0)
    jump = 0
    if s.controls[a, c, 5] > 0.5:
        jump = 1
    boost_in = s.controls[a, c, 6] > 0.5
    handbrake_in = 0.0
    if s.controls[a, c, 7] > 0.5:
        handbrake_in = 1.0
    return throttle, steer, pitch, yaw, roll, jump, boost_in, handbrake_in


@wp.func(inline=True)
def update_handbrake(s: SimStateRef, a: int, c: int, handbrake_in: float) -> float:
    """Car c's powerslide amount in [0, 1] after one tick of rising (handbrake held) or falling; stored."""
    handbrake = s.car_f[a, c, F_HANDBRAKE]
    if handbrake_in > 0.0:
        handbrake = handbrake + POWERSLIDE_RISE_RATE * TICK_TIME
    else:
        handbrake = handbrake - POWERSLIDE_FALL_RATE * TICK_TIME
    handbrake = wp.clamp(handbrake, 0.0, 1.0)
    s.car_f[a, c, F_HANDBRAKE] = handbrake
    return handbrake


@wp.func(inline=True)
def air_tick(
    s: SimStateRef,
    a: int,
    c: int,
    on_ground: bool,
    wheels: int,
    fwd: wp.vec3,
    right: wp.vec3,
    up: wp.vec3,
    throttle: float,
    pitch: float,
    yaw: float,
    roll: float,
    has_flipped: int,
    flip_time: float,
    ang: wp.vec3,
    accel: wp.vec3,
):
    """Air control and air throttle of a car not on the ground. Returns ang (rad/s), the angular velocity
    change torque_dw (rad/s) and accel (uu/s^2); all unchanged on the ground."""
    torque_dw = wp.vec3(0.0)
    out_ang = ang
    out_accel = accel
    if not on_ground:
        out_ang = air_control(
            ang,
            fwd,
            right,
            up,
            pitch,
            yaw,
            roll,
            has_flipped,
            flip_time,
            s.car_f[a, c, F_DODGE_X],
            s.car_f[a, c, F_DODGE_Y],
            wheels == 0 and s.car_i[a, c, I_AUTOFLIP] == 0,  # RocketSim: no air control while auto-flipping
        )
        torque_dw = out_ang - ang
        if throttle != 0.0:
            out_accel = out_accel + fwd * (throttle * THROTTLE_AIR_ACCEL)
    return out_ang, torque_dw, out_accel


@wp.func(inline=True)
def car_jump(
    s: SimStateRef, a: int, c: int, on_ground: bool, jump: int, jump_pressed: bool, up: wp.vec3, vel: wp.vec3,
    accel: wp.vec3,
):  # fmt: skip
    """One tick of RocketSim's Car::_UpdateJump. Returns vel (uu/s, with the jump's impulse), accel (uu/s^2,
    with the held jump's force), has_jumped, is_jumping and jump_time (s)."""
    has_jumped = s.car_i[a, c, I_HAS_JUMPED]
    is_jumping = s.car_i[a, c, I_IS_JUMPING]
    jump_time = s.car_f[a, c, F_JUMP_TIME]
    out_vel = vel
    out_accel = accel
    if on_ground and is_jumping == 0:
        if not (has_jumped != 0 and jump_time < JUMP_MIN_TIME + JUMP_RESET_TIME_PAD):
            has_jumped = 0
            jump_time = 0.0
    if is_jumping != 0:
        if not (jump_time < JUMP_MIN_TIME or (jump != 0 and jump_time < JUMP_MAX_TIME)):
            is_jumping = 0
    elif on_ground and jump_pressed:
        is_jumping = 1
        jump_time = 0.0
        out_vel = out_vel + up * JUMP_IMMEDIATE
    if is_jumping != 0:
        has_jumped = 1
        jump_accel = JUMP_ACCEL
        if jump_time < JUMP_MIN_TIME:
            jump_accel = jump_accel * JUMP_PRE_MIN_ACCEL_SCALE
        out_accel = out_accel + up * jump_accel
    if is_jumping != 0 or has_jumped != 0:
        jump_time = jump_time + TICK_TIME
    return out_vel, out_accel, has_jumped, is_jumping, jump_time


@wp.func(inline=True)
def double_jump_or_flip(
    s: SimStateRef,
    a: int,
    c: int,
    on_ground: bool,
    jump_pressed: bool,
    has_jumped: int,
    is_jumping: int,
    has_flipped: int,
    flip_time: float,
    forward_speed: float,
    fwd: wp.vec3,
    up: wp.vec3,
    pitch: float,
    yaw: float,
    roll: float,
    vel: wp.vec3,
):
    """One tick of RocketSim's Car::_UpdateDoubleJumpOrFlip: a press within DOUBLEJUMP_MAX_DELAY of the jump's
    end (any time if the car did not jump) flips when |pitch| + |yaw| + |roll| reaches DODGE_DEADZONE, else
    double jumps; not while auto-flipping. Then the flip's z damping. Returns vel (uu/s), has_double,
    has_flipped, flip_time (s) and air_time (s)."""
    has_double = s.car_i[a, c, I_HAS_DOUBLE_JUMPED]
    air_time = s.car_f[a, c, F_AIR_TIME]
    out_vel = vel
    if on_ground:
        has_double = 0
        has_flipped = 0
        air_time = 0.0
        flip_time = 0.0
    else:
        if has_jumped != 0 and is_jumping == 0:
            air_time = air_time + TICK_TIME
        else:
            air_time = 0.0
        usable = has_double == 0 and has_flipped == 0 and s.car_i[a, c, I_AUTOFLIP] == 0
        if jump_pressed and air_time < DOUBLEJUMP_MAX_DELAY and usable:
            if wp.abs(yaw) + wp.abs(pitch) + wp.abs(roll) >= DODGE_DEADZONE:
                flip_time = 0.0
                has_flipped = 1
                dx = -pitch
                dy = yaw + roll
                tx = 0.0
                ty = 0.0
                if not (wp.abs(dy) < 0.1 and wp.abs(pitch) < 0.1):
                    n = wp.sqrt(dx * dx + dy * dy)
                    tx = -dy / n
                    ty = dx / n
                s.car_f[a, c, F_DODGE_X] = tx
                s.car_f[a, c, F_DODGE_Y] = ty
                out_vel = out_vel + dodge_impulse(forward_speed, fwd, pitch, yaw, roll)
            else:
                out_vel = out_vel + up * JUMP_IMMEDIATE
                has_double = 1
    if has_flipped != 0:
        flip_time = flip_time + TICK_TIME
        if flip_time <= FLIP_TORQUE_TIME:
            if flip_time >= FLIP_Z_DAMP_START and (out_vel[2] < 0.0 or flip_time < FLIP_Z_DAMP_END):
                out_vel = wp.vec3(out_vel[0], out_vel[1], out_vel[2] * (1.0 - FLIP_Z_DAMP_120))
    return out_vel, has_double, has_flipped, flip_time, air_time


@wp.func(inline=True)
def car_auto_roll(
    s: SimStateRef,
    a: int,
    c: int,
    hits: WheelHits,
    wheels: int,
    throttle: float,
    fwd: wp.vec3,
    right: wp.vec3,
    up: wp.vec3,
    ang: wp.vec3,
    accel: wp.vec3,
    torque_dw: wp.vec3,
):
    """RocketSim's Car::_UpdateAutoRoll with throttle held: towards the wheels' contacts with one to three
    wheels down, else towards the surface the body touched last tick. Returns accel (uu/s^2), ang (rad/s)
    and torque_dw (rad/s)."""
    out_accel = accel
    out_ang = ang
    out_dw = torque_dw
    world_contact = s.car_i[a, c, I_WORLD_CONTACT] != 0
    if throttle != 0.0 and ((wheels > 0 and wheels < 4) or world_contact):
        surface_up = ground_up(hits, up)
        if wheels == 0:
            surface_up = wp.vec3(s.car_f[a, c, F_CONTACT_NX], s.car_f[a, c, F_CONTACT_NY], s.car_f[a, c, F_CONTACT_NZ])
        out_accel, out_ang = wheel_auto_roll(fwd, right, surface_up, ang, accel)
        out_dw = torque_dw + (out_ang - ang)
    return out_accel, out_ang, out_dw


@wp.func(inline=True)
def car_boost(
    s: SimStateRef, a: int, c: int, boost: float, boost_in: bool, on_ground: bool, fwd: wp.vec3, accel: wp.vec3
):
    """One tick of RocketSim's Car::_UpdateBoost: once started it lasts at least BOOST_MIN_TIME, while boost
    lasts. Returns boost (amount left), boost_time (s) and accel (uu/s^2, with the boost's force)."""
    boost_time = s.car_f[a, c, F_BOOST_TIME]
    out_boost = boost
    out_accel = accel
    boosting = False
    if boost > 0.0:
        if boost_time > 0.0:
            boosting = boost_in or boost_time < BOOST_MIN_TIME
        else:
            boosting = boost_in
    if boosting:
        boost_time = boost_time + TICK_TIME
        out_boost = wp.max(boost - BOOST_USED_PER_SECOND * TICK_TIME, 0.0)
        if on_ground:
            out_accel = out_accel + fwd * BOOST_ACCEL_GROUND
        else:
            out_accel = out_accel + fwd * BOOST_ACCEL_AIR
    else:
        boost_time = 0.0
    return out_boost, boost_time, out_accel


@wp.func(inline=True)  # one call site in the step kernel; inlined: no call (nor SimState copy, on Warp without wp.ref)
def car_pre_tick(s: SimStateRef, a: int, c: int):
    """Apply car c's controls for one tick: wheels or air control, jump, dodge, boost, gravity."""
    dt = TICK_TIME
    q = s.car_rot[a, c]
    vel = s.car_vel[a, c]
    ang = s.car_ang[a, c]
    fwd = wp.quat_rotate(q, wp.vec3(1.0, 0.0, 0.0))
    right = wp.quat_rotate(q, wp.vec3(0.0, 1.0, 0.0))
    up = wp.quat_rotate(q, wp.vec3(0.0, 0.0, 1.0))
    throttle, steer, pitch, yaw, roll, jump, boost_in, handbrake_in = read_controls(s, a, c)
    jump_pressed = jump != 0 and s.car_i[a, c, I_LAST_JUMP] == 0
    pos = s.car_pos[a, c]
    # RocketSim counts a car with 3 or 4 wheels touching as on the ground, from this tick's rays.
    hits = cast_wheels(s, a, c, pos, q, up)
    wheels = wheels_touching(hits)
    on_ground = wheels >= 3
    s.car_i[a, c, I_GROUND] = int(on_ground)
    s.car_i[a, c, I_WHEEL_CONTACTS] = wheels
    boost = s.car_f[a, c, F_BOOST]
    forward_speed = wp.dot(vel, fwd)
    handbrake = update_handbrake(s, a, c, handbrake_in)
    real_throttle = throttle
    if boost_in and boost > 0.0:
        real_throttle = 1.0

    # Impulses change vel at once; forces (air throttle, jump, boost, gravity) add up in accel and change
    # it after the flip's z damping, as Bullet integrates a tick's forces after RocketSim's pre-tick update.
    accel = wp.vec3(0.0, 0.0, GRAVITY_Z)
    has_flipped = s.car_i[a, c, I_HAS_FLIPPED]
    flip_time = s.car_f[a, c, F_FLIP_TIME]
    vel0 = vel
    ang0 = ang
    # The front wheels' axle at the steer angle the previous tick set, for the friction and the wheel update.
    front_axle = wheel_axle(q, right, up, 0, s.car_f[a, c, F_STEER_ANGLE])
    friction = friction_impulses(s, a, c, hits, pos, q, right, front_axle, vel0, ang0)
    accel = accel + update_wheels(
        s, a, c, hits, pos, fwd, right, front_axle, vel0, ang0, wheels, throttle, real_throttle, steer, handbrake_in,
        handbrake,
    )  # fmt: skip
    ang, torque_dw, accel = air_tick(
        s, a, c, on_ground, wheels, fwd, right, up, throttle, pitch, yaw, roll, has_flipped, flip_time, ang, accel
    )
    vel, accel, has_jumped, is_jumping, jump_time = car_jump(s, a, c, on_ground, jump, jump_pressed, up, vel, accel)
    vel, ang = auto_flip(s, a, c, jump_pressed, fwd, right, up, vel, ang)
    vel, has_double, has_flipped, flip_time, air_time = double_jump_or_flip(
        s, a, c, on_ground, jump_pressed, has_jumped, is_jumping, has_flipped, flip_time, forward_speed, fwd, up,
        pitch, yaw, roll, vel,
    )  # fmt: skip
    accel, ang, torque_dw = car_auto_roll(s, a, c, hits, wheels, throttle, fwd, right, up, ang, accel, torque_dw)
    vel, ang = apply_wheel_impulses(s, a, c, hits, pos, q, up, vel0, ang0, friction, vel, ang)
    boost, boost_time, accel = car_boost(s, a, c, boost, boost_in, on_ground, fwd, accel)

    vel = vel + accel * dt
    for k in range(3):
        s.car_f[a, c, F_FORCE_DV + k] = accel[k] * dt
        s.car_f[a, c, F_TORQUE_DW + k] = torque_dw[k]

    s.car_vel[a, c] = vel
    s.car_ang[a, c] = ang
    s.car_f[a, c, F_BOOST] = boost
    s.car_f[a, c, F_BOOST_TIME] = boost_time
    s.car_f[a, c, F_JUMP_TIME] = jump_time
    s.car_f[a, c, F_FLIP_TIME] = flip_time
    s.car_f[a, c, F_AIR_TIME] = air_time
    s.car_i[a, c, I_HAS_JUMPED] = has_jumped
    s.car_i[a, c, I_IS_JUMPING] = is_jumping
    s.car_i[a, c, I_HAS_DOUBLE_JUMPED] = has_double
    s.car_i[a, c, I_HAS_FLIPPED] = has_flipped
    s.car_i[a, c, I_LAST_JUMP] = jump
