"""Soccar arena geometry and constants shared by every engine.

Units are Rocket League units (uu, uu/s, rad) and seconds; physics runs at 120 ticks per second.
Blue (team 0) defends the goal at -y, orange (team 1) the goal at +y; z points up.
Orange sees the field rotated by pi about z (x -> -x, y -> -y), so one policy plays both sides.
"""

from __future__ import annotations

import math

TICK_RATE = 120.0
"""Physics ticks per second."""
TICK_TIME = 1.0 / TICK_RATE
DEFAULT_TICK_SKIP = 8
"""Physics ticks per environment step (15 steps per second of game time)."""


def step_seconds(tick_skip: int) -> float:
    """Game time of one environment step of `tick_skip` physics ticks, in seconds (tick_skip / 120)."""
    return tick_skip / TICK_RATE


BLUE_TEAM = 0
ORANGE_TEAM = 1

# Field (uu). Side walls at |x| = 4096, back walls at |y| = 5120, ceiling at z = 2044.
SIDE_WALL_X = 4096.0
BACK_WALL_Y = 5120.0
CEILING_Z = 2044.0
"""Ceiling height used by observations, rewards and state setters (RLGym's value)."""
CEILING_PLANE_Z = 2048.0
"""Height of RocketSim's ceiling collision plane, which the engines collide with (4 uu above CEILING_Z)."""
GOAL_HALF_WIDTH = 892.755
"""Half width of the goal mouth used by observations and rewards (RLGym's value); the collision meshes'
goal side walls stand at |x| = 896."""
GOAL_HEIGHT = 642.775
"""Height of the goal mouth used by observations and rewards (RLGym's value); the meshes' crossbar
underside is at z = 640."""
GOAL_DEPTH = 880.0
BACK_NET_Y = BACK_WALL_Y + GOAL_DEPTH
"""The goal line is y = +-5120; the ball counts as scored once its centre passes 5124.25 + radius."""

BALL_RADIUS = 91.25
BALL_REST_Z = 93.15
BALL_MAX_SPEED = 6000.0
CAR_MAX_SPEED = 2300.0
CAR_MAX_ANG_SPEED = 5.5
SUPERSONIC_SPEED = 2200.0
CAR_SPAWN_REST_Z = 17.0
RESET_ON_GROUND_MAX_Z = 20.0
"""A car set into the arena reads as on the ground until its first tick when it is below this height (uu) and
upright (its roof's z above RESET_ON_GROUND_MIN_UP_Z); from the first tick on, the engine's wheels decide."""
RESET_ON_GROUND_MIN_UP_Z = 0.7
BOOST_MAX = 100.0
KICKOFF_BOOST = 100.0 / 3.0
"""Boost every car holds at kickoff (RocketSim and Rocket League give 33.3)."""

ORANGE_GOAL_CENTER = (0.0, BACK_WALL_Y, GOAL_HEIGHT / 2)
BLUE_GOAL_CENTER = (0.0, -BACK_WALL_Y, GOAL_HEIGHT / 2)

# The five kickoff spawns of the blue team: (x, y, yaw). Orange spawns are these rotated by pi about z.
KICKOFF_SPAWNS_BLUE: tuple[tuple[float, float, float], ...] = (
    (-2048.0, -2560.0, math.pi / 4),
    (2048.0, -2560.0, 3 * math.pi / 4),
    (-256.0, -3840.0, math.pi / 2),
    (256.0, -3840.0, math.pi / 2),
    (0.0, -4608.0, math.pi / 2),
)

RESPAWN_X_BLUE: tuple[float, float, float, float] = (-2304.0, -2688.0, 2304.0, 2688.0)
"""x (uu) of blue's four respawn spots after a demolition, all at y = RESPAWN_Y_BLUE, facing +y; orange's are
these rotated by pi about z."""
RESPAWN_Y_BLUE = -4608.0


def respawn_spot(tick: int, car: int) -> int:
    """Index into RESPAWN_X_BLUE of where car `car` (our order: blue cars, then orange) respawns when it respawns
    in the arena's tick `tick` (ticks done since the arena was built). Both engines use this rule: RocketSim
    itself draws the spot from a clock-seeded random engine, which no seed reproduces."""
    return (tick + car) % len(RESPAWN_X_BLUE)


# Boost pads in RocketSim's order: (x, y, z, is_big). The order is symmetric under the rotation by pi
# about z that maps blue's view to orange's: pad i and pad 33 - i are mirror images.
BOOST_PADS: tuple[tuple[float, float, float, bool], ...] = (
    (0.0, -4240.0, 70.0, False),
    (-1792.0, -4184.0, 70.0, False),
    (1792.0, -4184.0, 70.0, False),
    (-3072.0, -4096.0, 73.0, True),
    (3072.0, -4096.0, 73.0, True),
    (-940.0, -3308.0, 70.0, False),
    (940.0, -3308.0, 70.0, False),
    (0.0, -2816.0, 70.0, False),
    (-3584.0, -2484.0, 70.0, False),
    (3584.0, -2484.0, 70.0, False),
    (-1788.0, -2300.0, 70.0, False),
    (1788.0, -2300.0, 70.0, False),
    (-2048.0, -1036.0, 70.0, False),
    (0.0, -1024.0, 70.0, False),
    (2048.0, -1036.0, 70.0, False),
    (-3584.0, 0.0, 73.0, True),
    (-1024.0, 0.0, 70.0, False),
    (1024.0, 0.0, 70.0, False),
    (3584.0, 0.0, 73.0, True),
    (-2048.0, 1036.0, 70.0, False),
    (0.0, 1024.0, 70.0, False),
    (2048.0, 1036.0, 70.0, False),
    (-1788.0, 2300.0, 70.0, False),
    (1788.0, 2300.0, 70.0, False),
    (-3584.0, 2484.0, 70.0, False),
    (3584.0, 2484.0, 70.0, False),
    (0.0, 2816.0, 70.0, False),
    (-940.0, 3308.0, 70.0, False),
    (940.0, 3308.0, 70.0, False),
    (-3072.0, 4096.0, 73.0, True),
    (3072.0, 4096.0, 73.0, True),
    (-1792.0, 4184.0, 70.0, False),
    (1792.0, 4184.0, 70.0, False),
    (0.0, 4240.0, 70.0, False),
)
NUM_BOOST_PADS = len(BOOST_PADS)
BOOST_PAD_COOLDOWN_BIG = 10.0
BOOST_PAD_COOLDOWN_SMALL = 4.0

MAX_TEAM_SIZE = 3
