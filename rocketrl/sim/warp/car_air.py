"""A car in the air, the pure parts of its tick: air control and a flip's torque on the angular velocity, the
velocity a dodge adds, and auto-flip (a car on its roof pushed off the surface and rolled), each as RocketSim
does it (Car::_UpdateAirTorque, the dodge of Car::_UpdateDoubleJumpOrFlip, Car::_UpdateAutoFlip). The tick that
calls them, in RocketSim's order, is rocketrl.sim.warp.car. Velocities in uu/s, angular velocities in rad/s.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.constants import (
    AIR_DAMPING,
    AIR_TORQUE,
    CAR_AUTOFLIP_IMPULSE,
    CAR_AUTOFLIP_NORMZ_THRESH,
    CAR_AUTOFLIP_ROLL_THRESH,
    CAR_AUTOFLIP_TIME,
    CAR_AUTOFLIP_TORQUE,
    CAR_MAX_SPEED,
    CAR_TORQUE_SCALE,
    FLIP_BACKWARD_SCALE,
    FLIP_BACKWARD_SCALE_X,
    FLIP_INITIAL_VEL_SCALE,
    FLIP_PITCHLOCK_TIME,
    FLIP_SIDE_SCALE,
    FLIP_TORQUE_TIME,
    FLIP_TORQUE_X,
    FLIP_TORQUE_Y,
    TICK_TIME,
)
from rocketrl.sim.warp.layout import (
    F_AUTOFLIP_DIR,
    F_AUTOFLIP_TIME,
    F_CONTACT_NX,
    F_CONTACT_NY,
    F_CONTACT_NZ,
    I_AUTOFLIP,
    I_WORLD_CONTACT,
    SimStateRef,
)
from rocketrl.sim.warp.vehicle import sign_or_zero


@wp.func
def air_control(
    ang: wp.vec3,
    fwd: wp.vec3,
    right: wp.vec3,
    up: wp.vec3,
    pitch: float,
    yaw: float,
    roll: float,
    has_flipped: int,
    flip_time: float,
    dodge_x: float,
    dodge_y: float,
    allow_air_control: bool,
):
    """Angular velocity (rad/s) after one tick of air-control torque and damping, or of a flip's torque
    (RocketSim's Car::_UpdateAirTorque; torques there are scaled by the inverse inertia they were
    multiplied by, so they are angular accelerations here).

    During a flip (flip_time < FLIP_TORQUE_TIME) the flip's torque replaces air control, except that
    pitch against the flip's pitch scales that pitch down by 1 - |pitch| and gives back air control
    (yaw and roll; pitch stays locked until FLIP_PITCHLOCK_TIME). A flip without direction (a stall)
    keeps air control. allow_air_control False (a car with one or two wheels on the ground, or auto-flipping)
    leaves only the flip's torque."""
    dt = TICK_TIME
    dir_pitch = -right
    dir_yaw = up
    dir_roll = -fwd
    do_air = 1
    turn = wp.vec3(0.0)
    if has_flipped != 0 and flip_time < FLIP_TORQUE_TIME:
        if dodge_x != 0.0 or dodge_y != 0.0:
            do_air = 0
            dy = dodge_y
            if dy != 0.0 and pitch != 0.0 and sign_or_zero(dy) == sign_or_zero(pitch):
                dy = dy * (1.0 - wp.abs(pitch))
                do_air = 1
            turn = fwd * (dodge_x * FLIP_TORQUE_X) + right * (dy * FLIP_TORQUE_Y)
    if do_air != 0 and allow_air_control:
        pitch_scale = 1.0
        if has_flipped != 0 and flip_time < FLIP_PITCHLOCK_TIME:
            pitch_scale = 0.0
        torque = (
            dir_pitch * (pitch * pitch_scale * AIR_TORQUE[0])
            + dir_yaw * (yaw * AIR_TORQUE[1])
            + dir_roll * (roll * AIR_TORQUE[2])
        )
        damp_pitch = wp.dot(dir_pitch, ang) * AIR_DAMPING[0] * (1.0 - wp.abs(pitch * pitch_scale))
        damp_yaw = wp.dot(dir_yaw, ang) * AIR_DAMPING[1] * (1.0 - wp.abs(yaw))
        damp_roll = wp.dot(dir_roll, ang) * AIR_DAMPING[2]
        damping = dir_yaw * damp_yaw + dir_pitch * damp_pitch + dir_roll * damp_roll
        turn = turn + (torque - damping) * CAR_TORQUE_SCALE
    return ang + turn * dt


@wp.func
def dodge_impulse(forward_speed: float, fwd: wp.vec3, pitch: float, yaw: float, roll: float) -> wp.vec3:
    """Horizontal velocity (uu/s) a dodge adds (RocketSim's replication of RLUtilities' dodge), at the
    car's forward speed (uu/s) at the start of the tick."""
    ratio = wp.abs(forward_speed) / CAR_MAX_SPEED
    dx = -pitch
    dy = yaw + roll
    n = wp.sqrt(dx * dx + dy * dy)
    if wp.abs(dy) < 0.1 and wp.abs(pitch) < 0.1:
        return wp.vec3(0.0)
    dx = dx / n
    dy = dy / n
    if wp.abs(dx) < 0.1:
        dx = 0.0
    if wp.abs(dy) < 0.1:
        dy = 0.0
    if dx == 0.0 and dy == 0.0:
        return wp.vec3(0.0)
    backwards = dx < 0.0
    if wp.abs(forward_speed) >= 100.0:
        backwards = (dx >= 0.0) != (forward_speed >= 0.0)
    max_scale_x = 1.0
    if backwards:
        max_scale_x = FLIP_BACKWARD_SCALE
    ix = dx * FLIP_INITIAL_VEL_SCALE * ((max_scale_x - 1.0) * ratio + 1.0)
    iy = dy * FLIP_INITIAL_VEL_SCALE * ((FLIP_SIDE_SCALE - 1.0) * ratio + 1.0)
    if backwards:
        ix = ix * FLIP_BACKWARD_SCALE_X
    flat = wp.vec3(fwd[0], fwd[1], 0.0)
    if wp.length(flat) > 0.0:
        flat = wp.normalize(flat)
    return wp.vec3(ix * flat[0] - iy * flat[1], ix * flat[1] + iy * flat[0], 0.0)


@wp.func
def auto_flip(
    s: SimStateRef,
    a: int,
    c: int,
    jump_pressed: bool,
    fwd: wp.vec3,
    right: wp.vec3,
    up: wp.vec3,
    vel: wp.vec3,
    ang: wp.vec3,
):
    """Auto-flip of car c for one tick (RocketSim's Car::_UpdateAutoFlip), on vel and ang as the pre-tick
    update has them so far: while the car touches the arena (I_WORLD_CONTACT, normal F_CONTACT_N*, from the
    last tick), jump pressed with the surface below (n.z > 1/sqrt 2) and |roll| > 2.8 rad starts an auto-flip,
    a 200 uu/s push along -up and 50 rad/s^2 about the forward axis for 0.4 |roll| / pi s, whatever the
    wheels touch. RocketSim runs it after the jump and before the double jump or flip, which an auto-flip
    blocks. Returns vel and ang."""
    contact = s.car_i[a, c, I_WORLD_CONTACT] != 0
    n = wp.vec3(s.car_f[a, c, F_CONTACT_NX], s.car_f[a, c, F_CONTACT_NY], s.car_f[a, c, F_CONTACT_NZ])
    out_vel = vel
    out_ang = ang
    if jump_pressed and contact and n[2] > CAR_AUTOFLIP_NORMZ_THRESH:
        roll = wp.atan2(-right[2], up[2])
        if wp.abs(roll) > CAR_AUTOFLIP_ROLL_THRESH:
            s.car_i[a, c, I_AUTOFLIP] = 1
            s.car_f[a, c, F_AUTOFLIP_TIME] = CAR_AUTOFLIP_TIME * wp.abs(roll) / wp.pi
            direction = 1.0
            if roll <= 0.0:
                direction = -1.0
            s.car_f[a, c, F_AUTOFLIP_DIR] = direction
            out_vel = out_vel - up * CAR_AUTOFLIP_IMPULSE
    if s.car_i[a, c, I_AUTOFLIP] != 0:
        t = s.car_f[a, c, F_AUTOFLIP_TIME]
        if t <= 0.0:
            s.car_i[a, c, I_AUTOFLIP] = 0
            s.car_f[a, c, F_AUTOFLIP_TIME] = 0.0
        else:
            out_ang = out_ang + fwd * (CAR_AUTOFLIP_TORQUE * s.car_f[a, c, F_AUTOFLIP_DIR] * TICK_TIME)
            s.car_f[a, c, F_AUTOFLIP_TIME] = t - TICK_TIME
    return out_vel, out_ang
