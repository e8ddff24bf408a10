"""Physical constants of the warp engine, in Rocket League units (uu, uu/s, rad, s) unless noted.

Values follow RocketSim's RLConst.h and public Rocket League references. The arena's dimensions and the
game's speed limits are owned by rocketrl.sim.arena, which both engines read; this module holds them as
warp constants and adds what only the warp engine's physics needs.
"""

from __future__ import annotations

import warp as wp

from rocketrl.sim import arena

# ---------------------------------------------------------------------------------------- world
TICK_TIME = wp.constant(arena.TICK_TIME)
GRAVITY_Z = wp.constant(-650.0)

# Arena (uu).
EXTENT_X = wp.constant(arena.SIDE_WALL_X)
CEILING_PLANE_Z = wp.constant(arena.CEILING_PLANE_Z)
"""Height of RocketSim's ceiling collision plane."""
GOAL_SCORE_Y = wp.constant(5124.25)

# ----------------------------------------------------------------------------------------- ball
BALL_RADIUS = wp.constant(arena.BALL_RADIUS)
BALL_ARENA_RADIUS = wp.constant(93.15)
"""Centre distance (uu) within which the arena touches the ball: BALL_RADIUS plus Bullet's contact
threshold (a ball set down at rest stays at this height)."""
BALL_MASS = wp.constant(30.0)
BALL_DRAG = wp.constant(0.03)
"""Linear damping: velocity *= (1 - 0.03) ** dt."""
BALL_RESTITUTION = wp.constant(0.6)
BALL_FRICTION = wp.constant(0.35)
BALL_MAX_SPEED = wp.constant(arena.BALL_MAX_SPEED)
BALL_MAX_ANG_SPEED = wp.constant(6.0)
RESTITUTION_MIN_SPEED = wp.constant(10.0)
"""Below this approach speed a contact does not bounce (Bullet's restitution threshold, 0.2 m/s)."""

# ------------------------------------------------------------------------------------------ car
CAR_MASS = wp.constant(180.0)
HITBOX_HALF = wp.constant(wp.vec3(60.2535, 43.3497, 19.32955))
"""Octane hitbox half extents (full size 120.507 x 86.6994 x 38.6591)."""
HITBOX_OFFSET = wp.constant(wp.vec3(13.8757, 0.0, 20.755))
HITBOX_MARGIN = wp.constant(0.1 * 19.32955)
"""Bullet's collision margin of the hitbox box (uu): a tenth of its smallest half extent, as btBoxShape
lowers its default 0.04 (2 uu) for a thin box."""
HITBOX_CORE = wp.constant(wp.vec3(60.2535 - 2.0, 43.3497 - 2.0, 19.32955 - 2.0))
"""The box inside the margin (uu): btBoxShape takes its implicit dimensions with the default 0.04 margin
before it lowers the margin, so the box Bullet collides (HITBOX_CORE + HITBOX_MARGIN) is 0.067 uu smaller
on every side than the hitbox."""
HITBOX_COLLIDED = wp.constant(wp.vec3(60.2535 - 2.0 + 1.932955, 43.3497 - 2.0 + 1.932955, 19.32955 - 2.0 + 1.932955))
"""Half extents (uu) of the box Bullet collides: its box-box detector's and its support vertices'."""
INERTIA_BOX_SHRINK = 2.0 * 50.0 * (0.04 - 0.1 * 38.6591 / 2.0 / 50.0)
"""How much smaller (uu) each side of the box is whose inertia Bullet gives the car: its box shape's
margin drops from 0.04 to a tenth of the smallest half extent (Bullet units), and the inertia is taken
from the half extents less the old margin plus the new one (0.134 uu less on every side)."""
_INERTIA_BOX = (120.507 - INERTIA_BOX_SHRINK, 86.6994 - INERTIA_BOX_SHRINK, 38.6591 - INERTIA_BOX_SHRINK)
CAR_INV_INERTIA = wp.constant(
    wp.vec3(
        12.0 / (180.0 * (_INERTIA_BOX[1] ** 2 + _INERTIA_BOX[2] ** 2)),
        12.0 / (180.0 * (_INERTIA_BOX[0] ** 2 + _INERTIA_BOX[2] ** 2)),
        12.0 / (180.0 * (_INERTIA_BOX[0] ** 2 + _INERTIA_BOX[1] ** 2)),
    )
)
"""Inverse inertia of the hitbox box about the car origin, body axes (forward, right, up), as Bullet
computes it for RocketSim's car (see INERTIA_BOX_SHRINK)."""
CAR_MAX_SPEED = wp.constant(arena.CAR_MAX_SPEED)
CAR_MAX_ANG_SPEED = wp.constant(arena.CAR_MAX_ANG_SPEED)

COASTING_BRAKE_FACTOR = wp.constant(0.15)
STOPPING_FORWARD_VEL = wp.constant(25.0)
THROTTLE_DEADZONE = wp.constant(0.001)
THROTTLE_AIR_ACCEL = wp.constant(66.666667)
POWERSLIDE_RISE_RATE = wp.constant(5.0)
POWERSLIDE_FALL_RATE = wp.constant(2.0)

BOOST_ACCEL_AIR = wp.constant(3175.0 / 3.0)
"""Boost acceleration (uu/s^2) of a car not on its wheels (RocketSim's BOOST_ACCEL_AIR)."""
BOOST_USED_PER_SECOND = wp.constant(100.0 / 3.0)
BOOST_MIN_TIME = wp.constant(0.1)
SUPERSONIC_START_SPEED = wp.constant(2200.0)
SUPERSONIC_MAINTAIN_MIN_SPEED = wp.constant(2100.0)
SUPERSONIC_MAINTAIN_MAX_TIME = wp.constant(1.0)

JUMP_ACCEL = wp.constant(4375.0 / 3.0)
JUMP_IMMEDIATE = wp.constant(875.0 / 3.0)
JUMP_MIN_TIME = wp.constant(0.025)
JUMP_RESET_TIME_PAD = wp.constant(0.025)
JUMP_MAX_TIME = wp.constant(0.2)
JUMP_PRE_MIN_ACCEL_SCALE = wp.constant(0.62)
DOUBLEJUMP_MAX_DELAY = wp.constant(1.25)
DODGE_DEADZONE = wp.constant(0.5)

FLIP_Z_DAMP_120 = wp.constant(0.35)
FLIP_Z_DAMP_START = wp.constant(0.15)
FLIP_Z_DAMP_END = wp.constant(0.21)
FLIP_TORQUE_TIME = wp.constant(0.65)
FLIP_PITCHLOCK_TIME = wp.constant(0.65 + 0.3)
"""Pitch input is ignored this long after a flip starts (FLIP_TORQUE_TIME + RocketSim's
FLIP_PITCHLOCK_EXTRA_TIME)."""
FLIP_INITIAL_VEL_SCALE = wp.constant(500.0)
FLIP_TORQUE_X = wp.constant(260.0)
FLIP_TORQUE_Y = wp.constant(224.0)
FLIP_SIDE_SCALE = wp.constant(1.9)
FLIP_BACKWARD_SCALE = wp.constant(2.5)
FLIP_BACKWARD_SCALE_X = wp.constant(16.0 / 15.0)

CAR_AUTOFLIP_IMPULSE = wp.constant(200.0)
"""Velocity (uu/s) along -up given when jump is pressed while on the roof."""
CAR_AUTOFLIP_TORQUE = wp.constant(50.0)
"""Angular acceleration (rad/s^2) about the forward axis while auto-flipping."""
CAR_AUTOFLIP_TIME = wp.constant(0.4)
"""Auto-flip duration (s) for a roll of pi; scaled by |roll| / pi."""
CAR_AUTOFLIP_NORMZ_THRESH = wp.constant(0.70710678)
CAR_AUTOFLIP_ROLL_THRESH = wp.constant(2.8)
CAR_AUTOROLL_FORCE = wp.constant(100.0)
"""Acceleration (uu/s^2) towards the surface while auto-rolling."""
# ---------------------------------------------------------------------------------------- wheels
# RocketSim's raycast vehicle for the Octane (CarConfig, RLConst::BTVehicle), in uu: lengths in uu,
# forces as uu/s^2 x CAR_MASS (Bullet's units are 50 uu; every wheel formula is linear in length).
FRONT_WHEEL_OFFSET = wp.constant(wp.vec3(51.25, 25.90, 20.755))
"""Front right wheel's suspension connection point in body axes (front left mirrors y)."""
BACK_WHEEL_OFFSET = wp.constant(wp.vec3(-33.75, 29.50, 20.755))
FRONT_WHEEL_RADIUS = wp.constant(12.5)
BACK_WHEEL_RADIUS = wp.constant(15.0)
MAX_SUSPENSION_TRAVEL = wp.constant(12.0)
FRONT_SUSPENSION_REST = wp.constant(38.755 - 12.0)
"""Suspension rest length: CarConfig's less MAX_SUSPENSION_TRAVEL, as RocketSim sets up its wheels."""
BACK_SUSPENSION_REST = wp.constant(37.055 - 12.0)
SUSPENSION_SUBTRACTION = wp.constant(2.5)
"""Shortening of the wheel ray and of the push-back threshold (0.05 Bullet units)."""
SUSPENSION_STIFFNESS = wp.constant(500.0)
WHEELS_DAMPING_COMPRESSION = wp.constant(25.0)
WHEELS_DAMPING_RELAXATION = wp.constant(40.0)
SUSPENSION_FORCE_SCALE_FRONT = wp.constant(36.0 - 1.0 / 4.0)
SUSPENSION_FORCE_SCALE_BACK = wp.constant(54.0 + 1.0 / 4.0 + 1.5 / 100.0)
PUSHBACK_ERP = wp.constant(0.2)
"""Bullet's contact error reduction, used by a wheel's push-back impulse (resolveSingleCollision)."""
BULLET_DEFAULT_TIME_STEP = wp.constant(1.0 / 60.0)
"""btContactSolverInfo's time step before a world's first step sets it (s): a wheel's push-back on an arena's
first tick divides by it."""
THROTTLE_TORQUE = wp.constant(180.0 * 400.0)
"""Drive force of each wheel at full throttle (THROTTLE_TORQUE_AMOUNT)."""
BRAKE_TORQUE = wp.constant(180.0 * (14.25 + 1.0 / 3.0))
"""Largest brake force of each wheel (BRAKE_TORQUE_AMOUNT)."""
BRAKING_NO_THROTTLE_SPEED = wp.constant(0.01)
ROLLING_FRICTION_SCALE = wp.constant(113.73963)
"""Brake force per uu/s of the contact point's forward speed, up to the brake (RocketSim's magic number)."""
SIDE_FRICTION_DAMPING = wp.constant(0.2)
"""Share of the contact point's sideways velocity one bilateral impulse removes (Bullet's contactDamping)."""
FRICTION_SCALE = wp.constant(180.0 / 3.0)
"""Friction impulse multiplier: car mass / 3, as btVehicleRL scales its friction impulses."""
STICKY_FORCE_SCALE = wp.constant(0.5)
"""Share of gravity pressing a car with a wheel on the ground onto it (more on slopes when driving)."""
BOOST_ACCEL_GROUND = wp.constant(2975.0 / 3.0)
"""Boost acceleration (uu/s^2) of a car on its wheels (RocketSim's BOOST_ACCEL_GROUND, no speed decay)."""
CAR_AUTOROLL_TORQUE = wp.constant(80.0)
"""Angular acceleration (rad/s^2) of RocketSim's auto-roll, per unit of its torque directions."""

AIR_TORQUE = wp.constant(wp.vec3(130.0, 95.0, 400.0))
"""Pitch, yaw, roll."""
AIR_DAMPING = wp.constant(wp.vec3(30.0, 20.0, 50.0))
CAR_TORQUE_SCALE = wp.constant(2.0 * 3.14159265358979 / 65536.0 * 1000.0)
"""Air-control torque (rad/s^2 per unit of AIR_TORQUE and AIR_DAMPING): 2 pi / 2^16 * 1000."""

CARWORLD_RESTITUTION = wp.constant(0.3)
CARBALL_FRICTION = wp.constant(2.0)
CARCAR_RESTITUTION = wp.constant(0.1)
CARCAR_FRICTION = wp.constant(0.09)
"""RocketSim's CARCAR_COLLISION_FRICTION, which its contact callback sets on every car-car point."""
BALL_CAR_EXTRA_Z_SCALE = wp.constant(0.35)
BALL_CAR_EXTRA_FORWARD_SCALE = wp.constant(0.65)
BALL_CAR_EXTRA_MAX_DELTA = wp.constant(4600.0)
BUMP_COOLDOWN_TIME = wp.constant(0.25)
BUMP_MIN_FORWARD_DIST = wp.constant(64.5)
DEMO_RESPAWN_TIME = wp.constant(3.0)
CAR_RESPAWN_Z = wp.constant(36.0)
SPAWN_BOOST = wp.constant(100.0 / 3.0)

# ---------------------------------------------------------------------------------- boost pads
PAD_RADIUS_BIG = wp.constant(208.0)
PAD_RADIUS_SMALL = wp.constant(144.0)
PAD_HEIGHT = wp.constant(95.0)
PAD_COOLDOWN_BIG = wp.constant(10.0)
PAD_COOLDOWN_SMALL = wp.constant(4.0)
PAD_AMOUNT_SMALL = wp.constant(12.0)


@wp.func
def curve3(x: float, x0: float, y0: float, x1: float, y1: float, x2: float, y2: float) -> float:
    """Piecewise-linear curve through 3 points, clamped at both ends."""
    if x <= x0:
        return y0
    if x <= x1:
        return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    if x <= x2:
        return y1 + (y2 - y1) * (x - x1) / (x2 - x1)
    return y2


@wp.func
def steer_angle(speed: float) -> float:
    """Maximum front-wheel steer angle (rad) at forward speed |speed| (STEER_ANGLE_FROM_SPEED_CURVE)."""
    s = wp.abs(speed)
    if s <= 1000.0:
        return curve3(s, 0.0, 0.53356, 500.0, 0.31930, 1000.0, 0.18203)
    if s <= 1750.0:
        return curve3(s, 1000.0, 0.18203, 1500.0, 0.10570, 1750.0, 0.08507)
    return curve3(s, 1750.0, 0.08507, 3000.0, 0.03454, 3001.0, 0.03454)


@wp.func
def powerslide_steer_angle(speed: float) -> float:
    """Steer angle (rad) with full handbrake (POWERSLIDE_STEER_ANGLE_FROM_SPEED_CURVE)."""
    s = wp.min(wp.abs(speed), 2500.0)
    return 0.39235 + (0.12610 - 0.39235) * s / 2500.0


@wp.func
def drive_torque_factor(speed: float) -> float:
    """DRIVE_SPEED_TORQUE_FACTOR_CURVE: 1 at rest, 0.1 at 1400 uu/s, 0 from 1410 uu/s."""
    return curve3(wp.abs(speed), 0.0, 1.0, 1400.0, 0.1, 1410.0, 0.0)


@wp.func
def extra_impulse_factor(speed: float) -> float:
    """BALL_CAR_EXTRA_IMPULSE_FACTOR_CURVE over the car-ball relative speed (uu/s)."""
    if speed <= 500.0:
        return 0.65
    return curve3(speed, 500.0, 0.65, 2300.0, 0.55, 4600.0, 0.30)


@wp.func
def bump_ground(speed: float) -> float:
    return curve3(speed, 0.0, 5.0 / 6.0, 1400.0, 1100.0, 2200.0, 1530.0)


@wp.func
def bump_air(speed: float) -> float:
    return curve3(speed, 0.0, 5.0 / 6.0, 1400.0, 1390.0, 2200.0, 1945.0)


@wp.func
def bump_up(speed: float) -> float:
    return curve3(speed, 0.0, 2.0 / 6.0, 1400.0, 278.0, 2200.0, 417.0)
