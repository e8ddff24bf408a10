"""RocketSim's raycast vehicle: four wheel rays against the arena (rocketrl.sim.warp.wheel_rays),
suspension, tyre friction, drive and brake, steering and the sticky force along the wheels' contact
normals, in the order of a RocketSim tick, on the floor, ramps, walls and the ceiling alike.

A tick, as Car::_PreTickUpdate with btVehicleRL does it, every quantity from the state at the start of the
tick: the rays find each wheel's contact and surface normal (cast once, `cast_wheels`); each wheel's
friction impulse is worked out with the steer angle, drive force, brake and friction factors that the
PREVIOUS tick set (`friction_impulse`); then the new ones are set for the next tick from the controls and
the wheels' slip (`update_wheels`, which also gives the sticky force along the mean contact normal).
After jump and flip impulses, the suspension impulses (along each contact normal) and the friction
impulses are applied at the contact points (`apply_wheel_impulses`). Lengths are in uu and forces in
uu/s^2 x car mass: Bullet's 50 uu units cancel out of every formula.

Wheel k: 0 front right, 1 front left, 2 back right, 3 back left (RocketSim's order).
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.car_arena_box import inv_inertia_world
from rocketrl.sim.warp.constants import (
    BRAKE_TORQUE,
    BRAKING_NO_THROTTLE_SPEED,
    BULLET_DEFAULT_TIME_STEP,
    CAR_AUTOROLL_FORCE,
    CAR_AUTOROLL_TORQUE,
    CAR_INV_INERTIA,
    CAR_MASS,
    COASTING_BRAKE_FACTOR,
    FRICTION_SCALE,
    GRAVITY_Z,
    MAX_SUSPENSION_TRAVEL,
    PUSHBACK_ERP,
    ROLLING_FRICTION_SCALE,
    SIDE_FRICTION_DAMPING,
    STICKY_FORCE_SCALE,
    STOPPING_FORWARD_VEL,
    SUSPENSION_FORCE_SCALE_BACK,
    SUSPENSION_FORCE_SCALE_FRONT,
    SUSPENSION_STIFFNESS,
    SUSPENSION_SUBTRACTION,
    THROTTLE_DEADZONE,
    THROTTLE_TORQUE,
    TICK_TIME,
    WHEELS_DAMPING_COMPRESSION,
    WHEELS_DAMPING_RELAXATION,
    curve3,
    drive_torque_factor,
    powerslide_steer_angle,
    steer_angle,
)
from rocketrl.sim.warp.layout import (
    F_BRAKE,
    F_ENGINE_FORCE,
    F_LAT_FRICTION,
    F_LONG_FRICTION,
    F_PUSHBACK,
    F_STEER_ANGLE,
    SimStateRef,
)
from rocketrl.sim.warp.wheel_rays import WheelHits, suspension_rest, wheel_radius


@wp.func
def wheel_axle(q: wp.quat, right: wp.vec3, up: wp.vec3, k: int, angle: float) -> wp.vec3:
    """Wheel k's axle (its right axis): the car's right axis turned about up by the steer angle (front)."""
    if k >= 2:
        return right
    return wp.quat_rotate(wp.quat_from_axis_angle(up, angle), right)


@wp.func
def axle_of(k: int, right: wp.vec3, front_axle: wp.vec3) -> wp.vec3:
    """Wheel k's axle given the front wheels' (wheel_axle of wheel 0): one steer rotation per tick serves the
    four wheels and both the friction impulses and the wheel update, which use the same steer angle."""
    if k >= 2:
        return right
    return front_axle


@wp.func
def apply_impulse(vel: wp.vec3, ang: wp.vec3, q: wp.quat, impulse: wp.vec3, offset: wp.vec3):
    """Velocity and angular velocity after an impulse (uu/s x car mass) at `offset` from the car origin."""
    return vel + impulse * (1.0 / CAR_MASS), ang + inv_inertia_world(q, wp.cross(offset, impulse))


@wp.func
def friction_impulse(
    s: SimStateRef,
    a: int,
    c: int,
    k: int,
    hits: WheelHits,
    pos: wp.vec3,
    q: wp.quat,
    right: wp.vec3,
    front_axle: wp.vec3,
    vel: wp.vec3,
    ang: wp.vec3,
) -> wp.vec3:
    """Wheel k's tyre impulse (uu/s x car mass) for this tick (btVehicleRL::calcFrictionImpulses): a side
    impulse removing SIDE_FRICTION_DAMPING of the contact point's sideways velocity, and the drive force or
    the brake along the wheel, scaled by the friction factors and with the steer angle of the previous tick.
    Zero without contact."""
    if hits.hit[k] == 0.0:
        return wp.vec3(0.0)
    n = hits.normal[k]
    contact = hits.contact[k]
    axle = axle_of(k, right, front_axle)
    axle = wp.normalize(axle - n * wp.dot(axle, n))
    along = wp.normalize(wp.cross(n, axle))
    offset = contact - pos
    point_vel = vel + wp.cross(ang, offset)
    local = wp.quat_rotate_inv(q, wp.cross(offset, axle))
    inv_mass = 1.0 / CAR_MASS + wp.dot(wp.cw_mul(CAR_INV_INERTIA, local), local)
    side = -SIDE_FRICTION_DAMPING * wp.dot(axle, point_vel) * (1.0 / inv_mass)
    engine = s.car_f[a, c, F_ENGINE_FORCE]
    rolling = 0.0
    if engine == 0.0:
        brake = s.car_f[a, c, F_BRAKE] * BRAKE_TORQUE
        if brake != 0.0:
            rolling = wp.clamp(-wp.dot(point_vel, along) * ROLLING_FRICTION_SCALE, -brake, brake)
    else:
        rolling = -engine / FRICTION_SCALE
    lat = s.car_f[a, c, F_LAT_FRICTION + k]
    lon = s.car_f[a, c, F_LONG_FRICTION + k]
    return (along * rolling * lon + axle * side * lat) * FRICTION_SCALE


@wp.func
def suspension_impulse(
    s: SimStateRef,
    a: int,
    c: int,
    k: int,
    hits: WheelHits,
    pos: wp.vec3,
    q: wp.quat,
    up: wp.vec3,
    vel: wp.vec3,
    ang: wp.vec3,
) -> float:
    """Wheel k's suspension impulse along its contact normal (uu/s x car mass) for this tick: spring and
    damper (btVehicleRL::updateSuspension, never pulling), plus the push-back of a wheel pressed past its
    rest (resolveSingleCollision's impulse over 4 wheels; RocketSim keeps a wheel's last push-back while it
    touches without being pressed that far). Updates the stored push-back."""
    if hits.hit[k] == 0.0:
        s.car_f[a, c, F_PUSHBACK + k] = 0.0
        return 0.0
    n = hits.normal[k]
    contact = hits.contact[k]
    trace = hits.trace[k]
    rest = suspension_rest(k)
    radius = wheel_radius(k)
    length = wp.clamp(trace - radius, rest - MAX_SUSPENSION_TRAVEL, rest + MAX_SUSPENSION_TRAVEL)
    offset = contact - pos
    point_vel = vel + wp.cross(ang, offset)
    normal_vel = wp.dot(n, point_vel)
    along_up = wp.dot(n, up)
    relative_vel = 0.0
    inv_along_up = 10.0
    if along_up > 0.1:
        inv_along_up = 1.0 / along_up
        relative_vel = normal_vel * inv_along_up
    pushback = s.car_f[a, c, F_PUSHBACK + k]
    threshold = rest + radius - SUSPENSION_SUBTRACTION
    if trace < threshold:
        arm = wp.cross(offset, n)
        inv_mass = 1.0 / CAR_MASS + wp.dot(n, wp.cross(inv_inertia_world(q, arm), offset))
        jac_inv = 1.0 / inv_mass
        # RocketSim's push-back reads its world's solver time step before this tick's step sets it: Bullet's
        # default, 1/60 s, on an arena's first tick (which no reset repeats), the tick after that.
        step = TICK_TIME
        if s.tick[a] == 0:
            step = BULLET_DEFAULT_TIME_STEP
        push = PUSHBACK_ERP * (threshold - trace) / step * jac_inv - normal_vel * jac_inv
        pushback = wp.max(push, 0.0) / 4.0
        s.car_f[a, c, F_PUSHBACK + k] = pushback
    force = (rest - length) * SUSPENSION_STIFFNESS * inv_along_up
    damping = WHEELS_DAMPING_RELAXATION
    if relative_vel < 0.0:
        damping = WHEELS_DAMPING_COMPRESSION
    scale = SUSPENSION_FORCE_SCALE_BACK
    if k < 2:
        scale = SUSPENSION_FORCE_SCALE_FRONT
    force = (force - damping * relative_vel) * scale
    if force <= 0.0:
        return 0.0
    return force * TICK_TIME + pushback


@wp.func
def apply_wheel_impulses(
    s: SimStateRef,
    a: int,
    c: int,
    hits: WheelHits,
    pos: wp.vec3,
    q: wp.quat,
    up: wp.vec3,
    vel0: wp.vec3,
    ang0: wp.vec3,
    friction: wp.mat44,
    vel: wp.vec3,
    ang: wp.vec3,
):
    """Velocity and angular velocity after the suspension impulses (at the contact points) and the friction
    impulses `friction` (row k: wheel k's impulse, first 3 columns; applied at the contact point moved along
    up to the car origin's height, as btVehicleRL does), both worked out from the tick's start (vel0, ang0)."""
    for k in range(4):
        impulse = suspension_impulse(s, a, c, k, hits, pos, q, up, vel0, ang0)
        if impulse != 0.0:
            vel, ang = apply_impulse(vel, ang, q, hits.normal[k] * impulse, hits.contact[k] - pos)
    for k in range(4):
        j = wp.vec3(friction[k, 0], friction[k, 1], friction[k, 2])
        if j[0] != 0.0 or j[1] != 0.0 or j[2] != 0.0:
            offset = hits.contact[k] - pos
            offset = offset - up * wp.dot(up, offset)
            vel, ang = apply_impulse(vel, ang, q, j * TICK_TIME, offset)
    return vel, ang


@wp.func
def friction_impulses(
    s: SimStateRef,
    a: int,
    c: int,
    hits: WheelHits,
    pos: wp.vec3,
    q: wp.quat,
    right: wp.vec3,
    front_axle: wp.vec3,
    vel: wp.vec3,
    ang: wp.vec3,
) -> wp.mat44:
    """Every wheel's friction impulse (row k, first 3 columns) from the values the previous tick set."""
    out = wp.mat44(0.0)
    for k in range(4):
        j = friction_impulse(s, a, c, k, hits, pos, q, right, front_axle, vel, ang)
        out[k, 0] = j[0]
        out[k, 1] = j[1]
        out[k, 2] = j[2]
    return out


@wp.func
def sign_or_zero(x: float) -> float:
    if x > 0.0:
        return 1.0
    if x < 0.0:
        return -1.0
    return 0.0


@wp.func
def lat_friction_curve(slip: float) -> float:
    """LAT_FRICTION_CURVE over the slip ratio in [0, 1]: 1 rolling, 0.2 sliding sideways."""
    return 1.0 + (0.2 - 1.0) * wp.clamp(slip, 0.0, 1.0)


@wp.func
def handbrake_long_friction_curve(slip: float) -> float:
    """HANDBRAKE_LONG_FRICTION_FACTOR_CURVE over the slip ratio: 0.5 rolling, 0.9 sliding sideways."""
    return 0.5 + (0.9 - 0.5) * wp.clamp(slip, 0.0, 1.0)


@wp.func
def update_wheels(
    s: SimStateRef,
    a: int,
    c: int,
    hits: WheelHits,
    pos: wp.vec3,
    fwd: wp.vec3,
    right: wp.vec3,
    front_axle: wp.vec3,
    vel: wp.vec3,
    ang: wp.vec3,
    contacts: int,
    throttle: float,
    real_throttle: float,
    steer: float,
    handbrake_in: float,
    handbrake: float,
) -> wp.vec3:
    """Set the wheels' drive force, brake, steer angle and friction factors for the next tick
    (Car::_UpdateWheels) and return the sticky acceleration (uu/s^2; zero with no wheel touching): along
    the wheels' mean contact normal, half of gravity, plus 1 - |normal z| of it when driving or moving.

    fwd, right: the car's axes; front_axle: the front wheels' axle at the steer angle the previous tick set
    (wheel_axle); throttle: the input; real_throttle: 1 when boosting; handbrake_in: the input (0 or 1);
    handbrake: the powerslide amount in [0, 1]."""
    forward_speed = wp.dot(vel, fwd)
    speed = wp.abs(forward_speed)
    drive_scale = drive_torque_factor(speed)
    engine_throttle = real_throttle
    brake = 0.0
    if handbrake_in <= 0.0:
        if wp.abs(real_throttle) >= THROTTLE_DEADZONE:
            if speed > STOPPING_FORWARD_VEL and sign_or_zero(real_throttle) != sign_or_zero(forward_speed):
                brake = 1.0
                if speed > BRAKING_NO_THROTTLE_SPEED:
                    engine_throttle = 0.0
        else:
            engine_throttle = 0.0
            brake = COASTING_BRAKE_FACTOR
            if speed < STOPPING_FORWARD_VEL:
                brake = 1.0
    if contacts < 3:
        drive_scale = drive_scale / 4.0
    s.car_f[a, c, F_ENGINE_FORCE] = engine_throttle * THROTTLE_TORQUE * drive_scale
    s.car_f[a, c, F_BRAKE] = brake

    # Friction factors from each touching wheel's slip, along its axle as this tick steered it.
    up_sum = wp.vec3(0.0)
    for k in range(4):
        if hits.hit[k] != 0.0:
            n = hits.normal[k]
            hard_point = hits.hard_point[k]
            up_sum = up_sum + n
            lat_dir = axle_of(k, right, front_axle)
            long_dir = wp.cross(lat_dir, n)
            wheel_vel = wp.cross(ang, hard_point - pos) + vel
            base = wp.abs(wp.dot(wheel_vel, lat_dir))
            slip = 0.0
            if base > 5.0:
                slip = base / (wp.abs(wp.dot(wheel_vel, long_dir)) + base)
            lat = lat_friction_curve(slip)
            lon = 1.0
            if handbrake != 0.0:
                lat = lat * ((0.1 - 1.0) * handbrake + 1.0)
                lon = lon * ((handbrake_long_friction_curve(slip) - 1.0) * handbrake + 1.0)
            if real_throttle == 0.0:
                non_sticky = curve3(n[2], 0.0, 0.1, 0.7075, 0.5, 1.0, 1.0)
                lat = lat * non_sticky
                lon = lon * non_sticky
            s.car_f[a, c, F_LAT_FRICTION + k] = lat
            s.car_f[a, c, F_LONG_FRICTION + k] = lon

    angle = steer_angle(speed)
    if handbrake != 0.0:
        angle = angle + (powerslide_steer_angle(speed) - angle) * handbrake
    s.car_f[a, c, F_STEER_ANGLE] = angle * steer

    sticky = wp.vec3(0.0)
    if up_sum[0] != 0.0 or up_sum[1] != 0.0 or up_sum[2] != 0.0:
        ground_up = wp.normalize(up_sum)
        scale = STICKY_FORCE_SCALE
        if real_throttle != 0.0 or speed > STOPPING_FORWARD_VEL:
            scale = scale + (1.0 - wp.abs(ground_up[2]))
        sticky = ground_up * (scale * GRAVITY_Z)
    return sticky


@wp.func
def wheel_auto_roll(fwd: wp.vec3, right: wp.vec3, ground_up: wp.vec3, ang: wp.vec3, accel: wp.vec3):
    """RocketSim's auto-roll with some wheels on the ground (Car::_UpdateAutoRoll): a push towards the
    ground and a turn of the car's right and forward axes towards it. Returns (accel, ang)."""
    down = -ground_up
    cross_right = wp.cross(ground_up, fwd)
    cross_forward = wp.cross(down, cross_right)
    right_factor = 1.0 - wp.clamp(wp.dot(right, cross_right), 0.0, 1.0)
    forward_factor = 1.0 - wp.clamp(wp.dot(fwd, cross_forward), 0.0, 1.0)
    right_sign = 1.0
    if wp.dot(right, ground_up) >= 0.0:
        right_sign = -1.0
    forward_sign = -1.0
    if wp.dot(fwd, ground_up) >= 0.0:
        forward_sign = 1.0
    turn = right * (forward_sign * forward_factor) + fwd * (right_sign * right_factor)
    return accel + down * CAR_AUTOROLL_FORCE, ang + turn * (CAR_AUTOROLL_TORQUE * TICK_TIME)
