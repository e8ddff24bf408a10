"""Tests of the RocketSim engine: physics seen through BatchState, event bookkeeping, resets, modes, input checks.

Numbers are hand-checked against the constants in rocketrl.sim.arena and Rocket League's rules:
goal once the ball centre passes 5124.25 + radius, ball radius 91.25, ceiling 2044, kickoff boost 100/3,
small pad +12 boost / 4 s cooldown, big pad to 100 / 10 s, demolished cars respawn after 3 s,
gravity 650 uu/s^2, 120 ticks per second and 8 ticks per step (15 steps per second).
"""

from __future__ import annotations

import math
from dataclasses import fields

import pytest
import torch

from rocketrl.sim import arena
from rocketrl.sim.meshes import MESHES_ENV_VAR, CollisionMeshesNotFound, find_collision_meshes
from rocketrl.sim.rocketsim import STEPPING_MODES, RocketSimEngine
from rocketrl.sim.state import BatchState, ResetState, euler_to_forward_up

THROTTLE, STEER, PITCH, YAW, ROLL, JUMP, BOOST, HANDBRAKE = range(8)
STEPS_PER_SECOND = int(arena.TICK_RATE) // arena.DEFAULT_TICK_SKIP  # 15
STEP_TIME = arena.DEFAULT_TICK_SKIP / arena.TICK_RATE
GOAL_LINE_FOR_BALL_CENTRE = 5124.25 + arena.BALL_RADIUS  # 5215.5, see arena.BACK_NET_Y's docstring
PARKED = [-2500.0, 500.0, arena.CAR_SPAWN_REST_Z]  # a spot clear of every pad, path and ball below
FAR_BALL = [3000.0, 3000.0, arena.BALL_REST_Z]
EVENT_FIELDS = ("car_touched_ball", "car_was_demolished", "car_demolitions", "car_boost_pickups")


def reset_state(
    ball_pos,
    car_pos,
    *,
    ball_vel=None,
    car_vel=None,
    car_rotation=None,
    car_boost=None,
) -> ResetState:
    """A ResetState from nested lists: ball_* (K, 3), car_* (K, C, 3), car_boost (K, C); missing ones are 0/50."""
    ball_pos = torch.tensor(ball_pos, dtype=torch.float32)
    car_pos = torch.tensor(car_pos, dtype=torch.float32)
    k, c = car_pos.shape[:2]

    def given(value, shape):
        return torch.zeros(shape) if value is None else torch.tensor(value, dtype=torch.float32)

    return ResetState(
        ball_pos=ball_pos,
        ball_vel=given(ball_vel, (k, 3)),
        ball_ang_vel=torch.zeros(k, 3),
        car_pos=car_pos,
        car_vel=given(car_vel, (k, c, 3)),
        car_ang_vel=torch.zeros(k, c, 3),
        car_rotation=given(car_rotation, (k, c, 3)),
        car_boost=torch.full((k, c), 50.0) if car_boost is None else given(car_boost, (k, c)),
    )


def yaw(angle: float) -> list[float]:
    """(pitch, yaw, roll) of a car lying flat and facing `angle`."""
    return [0.0, angle, 0.0]


def everywhere(engine: RocketSimEngine) -> torch.Tensor:
    return torch.ones(engine.num_arenas, dtype=torch.bool)


def no_controls(engine: RocketSimEngine) -> torch.Tensor:
    return torch.zeros(engine.num_arenas, engine.num_cars, 8)


def assert_events_cleared(state: BatchState) -> None:
    assert (state.goal_scored == -1).all()
    assert (state.ball_last_touch == -1).all()
    assert not state.car_touched_ball.any()
    assert not state.car_was_demolished.any()
    assert (state.car_demolitions == 0).all()
    assert (state.car_boost_pickups == 0).all()


def pad_index(x: float, y: float) -> int:
    return next(i for i, (px, py, _, _) in enumerate(arena.BOOST_PADS) if (px, py) == (x, y))


@pytest.fixture(scope="module")
def duel():
    """Two 1v1 arenas in worker processes (one per arena). Every test that uses it resets both arenas first;
    scores carry over between tests, so tests compare score differences."""
    with RocketSimEngine(2, 1, 1, num_workers=2) as engine:
        yield engine


# ------------------------------------------------------------------------------------------------ goals
def test_goal_is_counted_once_for_the_attacking_team_at_each_end(duel):
    # Arena 0: ball rolls into the orange goal (+y), so blue scores. Arena 1: into the blue goal (-y), orange scores.
    state = reset_state(
        ball_pos=[[0, 4900, 100], [0, -4900, 100]],
        ball_vel=[[0, 1500, 0], [0, -1500, 0]],
        car_pos=[[[-3000, 0, 17], [3000, 0, 17]]] * 2,
    )
    s = duel.reset(everywhere(duel), state)
    assert s.goal_scored.tolist() == [-1, -1]
    blue_before, orange_before = s.blue_score.clone(), s.orange_score.clone()
    goals: dict[int, list[tuple[int, int, float, float]]] = {0: [], 1: []}
    prev_y = s.ball_pos[:, 1].clone()
    for i in range(12):  # 0.8 s: the ball needs ~0.21 s to cross the line, then sits in the net
        s = duel.step(no_controls(duel))
        for a in (0, 1):
            assert s.goal_scored[a] in (-1, 0, 1)
            if s.goal_scored[a] != -1:
                goals[a].append((i, int(s.goal_scored[a]), float(prev_y[a]), float(s.ball_pos[a, 1])))
        prev_y = s.ball_pos[:, 1].clone()

    assert [g[1] for g in goals[0]] == [0], "blue (0) scores exactly once at +y"
    assert [g[1] for g in goals[1]] == [1], "orange (1) scores exactly once at -y"
    # The goal fires on the step in which the ball centre crosses y = +-(5124.25 + 91.25).
    _, _, y_before, y_at_goal = goals[0][0]
    assert y_before < GOAL_LINE_FOR_BALL_CENTRE <= y_at_goal
    _, _, y_before, y_at_goal = goals[1][0]
    assert -y_before < GOAL_LINE_FOR_BALL_CENTRE <= -y_at_goal
    assert goals[0][0][0] <= 5 and goals[1][0][0] <= 5
    assert (s.blue_score - blue_before).tolist() == [1, 0]
    assert (s.orange_score - orange_before).tolist() == [0, 1]
    assert s.blue_score.dtype == torch.int64 and s.goal_scored.dtype == torch.int64

    # A reset keeps the scores and clears the event.
    s = duel.reset(everywhere(duel), reset_state(ball_pos=[[0, 0, 93.15]] * 2, car_pos=[[[-3000, 0, 17], PARKED]] * 2))
    assert (s.blue_score - blue_before).tolist() == [1, 0]
    assert (s.orange_score - orange_before).tolist() == [0, 1]
    assert_events_cleared(s)


# ------------------------------------------------------------------------------------------------ walls
WALL_SHOTS = {
    # name: (ball start, ball velocity, velocity components pointing at the surface)
    "side_wall_+x": ([3000, 0, 300], [3000, 0, 0], (0,)),
    "side_wall_-x": ([-3000, 0, 300], [-3000, 0, 0], (0,)),
    "back_wall_+y_beside_goal": ([2500, 4000, 300], [0, 3000, 0], (1,)),
    "back_wall_-y_beside_goal": ([2500, -4000, 300], [0, -3000, 0], (1,)),
    "corner_+x+y": ([3000, 4000, 300], [2000, 2000, 0], (0, 1)),
    "ceiling": ([0, 0, 500], [0, 0, 4000], (2,)),
}


def test_ball_bounces_off_walls_corner_and_ceiling_and_stays_in_the_arena():
    names = list(WALL_SHOTS)
    with RocketSimEngine(len(names), 1, 0, stepping="serial") as engine:
        state = reset_state(
            ball_pos=[WALL_SHOTS[n][0] for n in names],
            ball_vel=[WALL_SHOTS[n][1] for n in names],
            car_pos=[[[-1500, -2000, 17]]] * len(names),  # off every ball path
        )
        s = engine.reset(everywhere(engine), state)
        positions, velocities = [s.ball_pos.clone()], [s.ball_vel.clone()]
        for _ in range(3 * STEPS_PER_SECOND):
            s = engine.step(no_controls(engine))
            assert (s.goal_scored == -1).all(), "none of these shots is on target"
            positions.append(s.ball_pos.clone())
            velocities.append(s.ball_vel.clone())
    pos, vel = torch.stack(positions), torch.stack(velocities)  # (T, A, 3)

    tol = 10.0  # uu of penetration allowed: the ball's surface may not pass through a wall
    assert (pos[..., 0].abs() <= arena.SIDE_WALL_X - arena.BALL_RADIUS + tol).all()
    assert (pos[..., 1].abs() <= arena.BACK_WALL_Y - arena.BALL_RADIUS + tol).all()
    assert (pos[..., 2] <= arena.CEILING_Z - arena.BALL_RADIUS + tol).all()
    assert (pos[..., 2] >= arena.BALL_RADIUS - tol).all()
    for a, name in enumerate(names):
        start_vel = torch.tensor(WALL_SHOTS[name][1], dtype=torch.float32)
        for comp in WALL_SHOTS[name][2]:
            toward = torch.sign(start_vel[comp])
            # Within 1 s the component pointing at the surface reverses. Nothing else can reverse it: the
            # horizontal shots feel no force along it, and gravity alone would need 4000 / 650 = 6.2 s.
            first_second = vel[1 : STEPS_PER_SECOND + 1, a, comp] * toward
            assert (first_second < -100).any(), f"{name}: velocity component {comp} never turned back"
        if name != "ceiling":
            # After 3 s the ball is back in the field, far from the surface and still travelling away from it.
            comps = list(WALL_SHOTS[name][2])
            walls = torch.tensor([arena.SIDE_WALL_X, arena.BACK_WALL_Y])[comps]
            assert (vel[-1, a, comps] * start_vel[comps] < 0).all(), name
            assert (walls - pos[-1, a, comps] * torch.sign(start_vel[comps]) > 1500).all(), name


# ------------------------------------------------------------------------------------------------ kickoff
SEEDS = (0, 7, 1234, 31337, 99991, 424242, 1_000_000)


@pytest.mark.parametrize(("num_arenas", "team_size"), [(4, 1), (3, 3)])
def test_native_kickoff_uses_the_five_spawns_mirrored_for_orange(num_arenas, team_size):
    spawns = torch.tensor([(x, y) for x, y, _ in arena.KICKOFF_SPAWNS_BLUE])
    headings = torch.tensor([(math.cos(w), math.sin(w), 0.0) for _, _, w in arena.KICKOFF_SPAWNS_BLUE])
    seen: set[int] = set()
    with RocketSimEngine(num_arenas, team_size, team_size, stepping="serial") as engine:
        # Leave every arena in a messy state first, so the kickoff has something to undo.
        engine.reset(
            everywhere(engine),
            reset_state(
                ball_pos=[[100, 200, 500]] * num_arenas,
                ball_vel=[[500, 0, 0]] * num_arenas,
                car_pos=[[[500.0 * c, 1000, 300] for c in range(2 * team_size)]] * num_arenas,
                car_boost=[[90.0] * (2 * team_size)] * num_arenas,
            ),
        )
        for _ in range(3):
            engine.step(no_controls(engine))
        for seed in SEEDS:
            s = engine.reset_kickoff_native(everywhere(engine), seed)
            torch.testing.assert_close(s.ball_pos, torch.tensor([[0.0, 0.0, arena.BALL_REST_Z]]).expand(num_arenas, 3))
            assert (s.ball_vel == 0).all() and (s.ball_ang_vel == 0).all()
            assert (s.car_vel.abs() < 1e-3).all() and (s.car_ang_vel.abs() < 1e-3).all()
            torch.testing.assert_close(s.car_pos[..., 2], torch.full_like(s.car_pos[..., 2], 17.0), atol=1e-3, rtol=0)
            torch.testing.assert_close(s.car_boost, torch.full_like(s.car_boost, 100 / 3), atol=1e-4, rtol=0)
            assert s.car_on_ground.all() and s.car_has_jump.all() and not s.car_has_flip.any()
            assert s.pad_active.all() and (s.pad_timer == 0).all()
            assert_events_cleared(s)
            for a in range(num_arenas):
                xy = s.car_pos[a, :, :2]
                # Nearest spawn of every car; blue cars sit on a spawn, orange cars on a spawn rotated by pi.
                blue_d = torch.cdist(xy[:team_size], spawns)
                orange_d = torch.cdist(xy[team_size:], -spawns)
                blue_idx, orange_idx = blue_d.argmin(1), orange_d.argmin(1)
                assert (blue_d.min(1).values < 1e-2).all(), xy
                assert (orange_d.min(1).values < 1e-2).all(), xy
                assert len(set(blue_idx.tolist())) == team_size, "two blue cars on one spawn"
                assert sorted(orange_idx.tolist()) == sorted(blue_idx.tolist()), "orange is blue's mirror image"
                torch.testing.assert_close(s.car_forward[a, :team_size], headings[blue_idx], atol=1e-3, rtol=0)
                torch.testing.assert_close(s.car_forward[a, team_size:], -headings[orange_idx], atol=1e-3, rtol=0)
                torch.testing.assert_close(s.car_up[a], torch.tensor([0.0, 0.0, 1.0]).expand(2 * team_size, 3))
                seen.update(blue_idx.tolist())
    assert seen == set(range(5)), f"spawns used: {sorted(seen)}"


# ------------------------------------------------------------------------------------------------ events
def test_touch_event_and_last_touch_follow_the_car_that_hits_the_ball(duel):
    # Arena 0: blue (car 0) drives +y into a resting ball; arena 1: orange (car 1) drives -y into it.
    state = reset_state(
        ball_pos=[[0, 0, arena.BALL_REST_Z]] * 2,
        car_pos=[[[0, -400, 17], PARKED], [PARKED, [0, 400, 17]]],
        car_vel=[[[0, 2000, 0], [0, 0, 0]], [[0, 0, 0], [0, -2000, 0]]],
        car_rotation=[[yaw(math.pi / 2), yaw(0)], [yaw(0), yaw(-math.pi / 2)]],
    )
    s = duel.reset(everywhere(duel), state)
    assert_events_cleared(s)
    controls = no_controls(duel)
    controls[0, 0, THROTTLE] = controls[1, 1, THROTTLE] = 1.0
    hitter, direction = [0, 1], [1.0, -1.0]
    contact_step = [None, None]
    touched_steps: list[list[int]] = [[], []]
    for i in range(12):
        s = duel.step(controls)
        for a in (0, 1):
            moving = bool(s.ball_vel[a].norm() > 1.0)
            if s.car_touched_ball[a].any():
                touched_steps[a].append(i)
                assert s.car_touched_ball[a].tolist() == [c == hitter[a] for c in range(2)]
            if contact_step[a] is None and moving:
                contact_step[a] = i
                # The ball starts moving on the step of the hit, and that step reports the touch.
                assert s.car_touched_ball[a, hitter[a]]
                # Head-on at 2000 uu/s the ball leaves faster than the car came, along the car's direction.
                assert s.ball_vel[a, 1] * direction[a] > 2000
            if contact_step[a] is None:
                assert s.ball_last_touch[a] == -1 and not s.car_touched_ball[a].any()
            else:
                assert s.ball_last_touch[a] == hitter[a]
    for a in (0, 1):
        assert contact_step[a] is not None and contact_step[a] <= 3  # 137 uu gap at 2000 uu/s: < 0.1 s
        assert touched_steps[a][0] == contact_step[a]
        assert touched_steps[a][-1] < 11, "the touch event stops once the ball has flown off"
    assert s.ball_last_touch.tolist() == hitter

    s = duel.reset(everywhere(duel), state)
    assert_events_cleared(s)


def test_supersonic_bump_demolishes_the_opponent_until_it_respawns(duel):
    # Arena 0: supersonic blue (car 0) hits a stationary orange (car 1); arena 1: the mirror image.
    state = reset_state(
        ball_pos=[FAR_BALL, [-3000, -3000, arena.BALL_REST_Z]],
        car_pos=[[[0, -600, 17], [0, 0, 17]], [[0, 0, 17], [0, 600, 17]]],
        car_vel=[[[0, 2290, 0], [0, 0, 0]], [[0, 0, 0], [0, -2290, 0]]],
        car_rotation=[[yaw(math.pi / 2), yaw(0)], [yaw(0), yaw(-math.pi / 2)]],
        car_boost=[[100, 50], [50, 100]],
    )
    s = duel.reset(everywhere(duel), state)
    assert not s.car_demolished.any()
    controls = no_controls(duel)
    for a, c in ((0, 0), (1, 1)):
        controls[a, c, THROTTLE] = controls[a, c, BOOST] = 1.0
    history = []
    for _ in range(52):
        history.append(duel.step(controls))
    was = torch.stack([h.car_was_demolished for h in history])  # (T, A, C)
    demoed = torch.stack([h.car_demolished for h in history])
    demos = torch.stack([h.car_demolitions for h in history])
    for a, bumper, victim in ((0, 0, 1), (1, 1, 0)):
        steps = torch.nonzero(was[:, a, victim]).flatten().tolist()
        assert len(steps) == 1, f"arena {a}: the victim is demolished exactly once, got steps {steps}"
        d = steps[0]
        assert 1 <= d <= 5  # 600 uu at 2300 uu/s, less the two car lengths: ~0.2 s
        speed_before = history[d - 1].car_vel[a, bumper].norm()
        assert speed_before >= arena.SUPERSONIC_SPEED
        assert not was[:, a, bumper].any() and not demoed[:, a, bumper].any()
        assert demos[d, a, bumper] == 1
        assert demos[:, a, bumper].sum() == 1, "the demolition counts on its step only"
        assert (demos[:, a, victim] == 0).all()
        assert not demoed[:d, a, victim].any()
        # Demolished cars wait 3 s (45 steps) before they respawn.
        assert demoed[d : d + 3 * STEPS_PER_SECOND - 1, a, victim].all()
        assert not demoed[d + 3 * STEPS_PER_SECOND + 1 :, a, victim].any()


def _demolition_runs(tick_skip: int, stepping: str, steps: int) -> list[BatchState]:
    """Two 1v1 arenas in a fresh engine: a supersonic blue car hits a parked orange car, from 600 uu in arena 0
    and from 1,400 uu in arena 1 (so the hits come on different ticks); `steps` steps of `tick_skip` ticks."""
    state = reset_state(
        ball_pos=[FAR_BALL, FAR_BALL],
        car_pos=[[[0, -600, 17], [0, 0, 17]], [[0, -1400, 17], [0, 0, 17]]],
        car_vel=[[[0, 2290, 0], [0, 0, 0]], [[0, 2290, 0], [0, 0, 0]]],
        car_rotation=[[yaw(math.pi / 2), yaw(0)], [yaw(math.pi / 2), yaw(0)]],
        car_boost=[[100, 50], [100, 50]],
    )
    with RocketSimEngine(2, 1, 1, tick_skip=tick_skip, stepping=stepping, num_workers=2) as engine:
        engine.reset(everywhere(engine), state)
        controls = no_controls(engine)
        controls[:, 0, THROTTLE] = controls[:, 0, BOOST] = 1.0
        states = []
        for step in range(steps):
            if step == 40 // tick_skip:
                controls[:, 0] = 0.0  # the bumper stops driving (and stays far from the respawn spots)
            states.append(engine.step(controls))
        return states


def test_a_demolished_car_respawns_at_the_spot_the_rule_names_in_every_stepping_mode():
    # RocketSim draws a respawn spot from a clock-seeded random engine; the engine moves the car to the spot
    # arena.respawn_spot names for its respawn tick, so a game with a demolition replays exactly, in any mode.
    delay_ticks = 3 * int(arena.TICK_RATE)  # respawn 3 s after the hit
    by_tick = _demolition_runs(1, "serial", 500)
    was = torch.stack([s.car_was_demolished[:, 1] for s in by_tick])  # (ticks, A): tick t is the (t+1)-th
    hit = [int(torch.nonzero(was[:, a]).flatten()[0]) for a in range(2)]  # tick index of each hit
    assert hit[0] != hit[1]
    respawn = [t + delay_ticks for t in hit]
    demoed = torch.stack([s.car_demolished[:, 1] for s in by_tick])
    for a in range(2):
        assert demoed[hit[a] : respawn[a], a].all() and not demoed[respawn[a], a]
    # Orange's spots are blue's rotated by pi: x and y change sign; it falls straight down from 36 uu.
    expected_x = [-arena.RESPAWN_X_BLUE[arena.respawn_spot(t, 1)] for t in respawn]
    for a in range(2):
        pos = by_tick[respawn[a]].car_pos[a, 1]
        assert pos.tolist() == [expected_x[a], -arena.RESPAWN_Y_BLUE, 36.0]
        assert float(by_tick[-1].car_pos[a, 1, 0]) == expected_x[a]  # landed where it fell (y settles < 1 uu)
        assert abs(float(by_tick[-1].car_pos[a, 1, 1]) + arena.RESPAWN_Y_BLUE) < 1.0
    steps = 500 // arena.DEFAULT_TICK_SKIP
    finals = {mode: _demolition_runs(arena.DEFAULT_TICK_SKIP, mode, steps)[-1] for mode in STEPPING_MODES}
    for mode, final in finals.items():
        assert final.car_pos[:, 1, 0].tolist() == expected_x, mode
        assert torch.equal(final.car_pos, finals["serial"].car_pos), mode
        assert torch.equal(final.ball_pos, finals["serial"].ball_pos), mode


def test_driving_over_small_and_big_pads_picks_them_up(duel):
    small = pad_index(0.0, -2816.0)
    big = pad_index(3072.0, 4096.0)
    assert not arena.BOOST_PADS[small][3] and arena.BOOST_PADS[big][3]
    # Arena 0: blue (car 0) drives over the small pad at (0, -2816); arena 1: orange (car 1) over the big one.
    state = reset_state(
        ball_pos=[FAR_BALL, [-3000, -3000, arena.BALL_REST_Z]],
        car_pos=[[[0, -3100, 17], PARKED], [PARKED, [3072, 3800, 17]]],
        car_vel=[[[0, 1500, 0], [0, 0, 0]], [[0, 0, 0], [0, 1500, 0]]],
        car_rotation=[[yaw(math.pi / 2), yaw(0)], [yaw(0), yaw(math.pi / 2)]],
        car_boost=[[50, 50], [50, 50]],
    )
    s = duel.reset(everywhere(duel), state)
    assert s.pad_active.all() and (s.pad_timer == 0).all()
    controls = no_controls(duel)
    controls[0, 0, THROTTLE] = controls[1, 1, THROTTLE] = 1.0
    cases = (
        (0, 0, small, arena.BOOST_PAD_COOLDOWN_SMALL, 50.0 + 12.0),
        (1, 1, big, arena.BOOST_PAD_COOLDOWN_BIG, arena.BOOST_MAX),
    )
    history = [duel.step(controls) for _ in range(6)]
    for a, car, pad, cooldown, boost_after in cases:
        pickups = torch.stack([h.car_boost_pickups[a] for h in history])  # (T, C)
        steps = torch.nonzero(pickups[:, car]).flatten().tolist()
        assert len(steps) == 1 and pickups[steps[0], car] == 1, pickups
        assert pickups.sum() == 1, "only the driving car picks up, once"
        p = steps[0]
        at, after = history[p], history[p + 1]
        assert p <= 3
        assert not at.pad_active[a, pad]
        assert 0 < at.pad_timer[a, pad] <= cooldown
        assert at.pad_timer[a, pad] >= cooldown - STEP_TIME - 1e-4  # exact to within one step
        others = torch.arange(arena.NUM_BOOST_PADS) != pad
        assert at.pad_active[a, others].all() and (at.pad_timer[a, others] == 0).all()
        before = history[p - 1] if p > 0 else s
        assert before.car_boost[a, car] == pytest.approx(50.0, abs=1e-3)
        assert at.car_boost[a, car] == pytest.approx(boost_after, abs=1e-3)
        # The next step counts the cooldown down by one step; the pad stays taken.
        assert not after.pad_active[a, pad]
        assert after.pad_timer[a, pad] == pytest.approx(float(at.pad_timer[a, pad]) - STEP_TIME, abs=1e-4)
        assert (after.car_boost_pickups[a] == 0).all()


# ------------------------------------------------------------------------------------------------ flags
def test_jump_and_flip_flags_follow_a_jump_and_landing(duel):
    state = reset_state(ball_pos=[FAR_BALL] * 2, car_pos=[[[0, -2000, 17], PARKED]] * 2)
    duel.reset(everywhere(duel), state)
    s = duel.step(no_controls(duel))
    assert s.car_on_ground.all() and s.car_has_jump.all() and not s.car_has_flip.any()

    controls = no_controls(duel)
    controls[0, 0, JUMP] = 1.0  # only blue in arena 0 jumps
    s = duel.step(controls)
    assert not s.car_on_ground[0, 0]
    assert s.car_pos[0, 0, 2] > 27 and s.car_vel[0, 0, 2] > 200  # jump impulse 292 uu/s plus held-jump force
    assert not s.car_has_jump[0, 0] and s.car_has_flip[0, 0]
    others = torch.tensor([[False, True], [True, True]])
    assert s.car_on_ground[others].all() and s.car_has_jump[others].all() and not s.car_has_flip[others].any()

    for _ in range(2 * STEPS_PER_SECOND):  # a short jump lands within ~1 s
        s = duel.step(no_controls(duel))
    assert s.car_on_ground.all() and s.car_has_jump.all() and not s.car_has_flip.any()


def test_airborne_car_that_did_not_jump_has_a_flip(duel):
    state = reset_state(ball_pos=[FAR_BALL] * 2, car_pos=[[[0, -2000, 600], PARKED]] * 2)
    duel.reset(everywhere(duel), state)
    s = duel.step(no_controls(duel))  # falling, never jumped
    assert not s.car_on_ground[0, 0] and s.car_vel[0, 0, 2] < 0
    flag_in_air = bool(s.car_has_flip[0, 0])
    controls = no_controls(duel)
    controls[0, 0, JUMP] = 1.0
    s = duel.step(controls)
    # RocketSim lets it jump in the air: the fall turns into a climb (double-jump impulse).
    assert s.car_vel[0, 0, 2] > 100
    assert flag_in_air, "car_has_flip was False although the car could double jump"


# ------------------------------------------------------------------------------------------------ resets
@pytest.mark.parametrize("stepping", ["serial", "processes"])
def test_reset_of_one_arena_leaves_the_others_untouched(stepping):
    with RocketSimEngine(3, 1, 1, stepping=stepping, num_workers=2) as engine:  # blocks {0}, {1, 2}
        engine.reset(
            everywhere(engine),
            reset_state(
                ball_pos=[[0, 0, 93.15], [500, 500, 300], [-800, 0, 93.15]],
                ball_vel=[[100, 0, 0], [0, 0, 0], [0, 300, 500]],
                car_pos=[[[0, -2000, 17], [0, 2000, 17]]] * 3,
                car_rotation=[[yaw(math.pi / 2), yaw(-math.pi / 2)]] * 3,
            ),
        )
        controls = no_controls(engine)
        controls[..., THROTTLE] = 1.0
        controls[..., STEER] = torch.tensor([[0.0, 0.5], [1.0, -1.0], [-0.3, 0.2]])
        for _ in range(5):
            engine.step(controls)
        before = engine.state.clone()

        rotation = [[0.3, 1.0, 0.5], [0.0, -math.pi / 2, 0.0]]
        wanted = reset_state(
            ball_pos=[[100, 200, 300]],
            ball_vel=[[10, 20, 30]],
            car_pos=[[[500, -1000, 300], [-500, 1000, 17]]],
            car_vel=[[[0, 100, 0], [0, 0, 0]]],
            car_rotation=[rotation],
            car_boost=[[42.0, 7.5]],
        )
        asked = []
        s = engine.reset(torch.tensor([False, True, False]), lambda k: asked.append(k) or wanted)
    assert asked == [1], "a callable state is asked for exactly the K = mask.sum() arenas"
    for a in (0, 2):
        for name in ("ball_pos", "ball_vel", "car_pos", "car_vel", "car_forward", "car_boost", "pad_active"):
            assert torch.equal(getattr(s, name)[a], getattr(before, name)[a]), (a, name)
        assert s.ball_last_touch[a] == before.ball_last_touch[a]
    torch.testing.assert_close(s.ball_pos[1], wanted.ball_pos[0], atol=1e-2, rtol=0)
    torch.testing.assert_close(s.ball_vel[1], wanted.ball_vel[0], atol=1e-2, rtol=0)
    torch.testing.assert_close(s.car_pos[1], wanted.car_pos[0], atol=1e-2, rtol=0)
    torch.testing.assert_close(s.car_vel[1], wanted.car_vel[0], atol=1e-2, rtol=0)
    torch.testing.assert_close(s.car_boost[1], wanted.car_boost[0], atol=1e-4, rtol=0)
    forward, up = euler_to_forward_up(torch.tensor(rotation))
    torch.testing.assert_close(s.car_forward[1], forward, atol=1e-3, rtol=0)
    torch.testing.assert_close(s.car_up[1], up, atol=1e-3, rtol=0)
    assert s.pad_active[1].all() and (s.pad_timer[1] == 0).all()
    assert_events_cleared(s.index(torch.tensor([1])))


@pytest.mark.parametrize("stepping", ["serial", "processes"])
def test_reset_of_one_arena_keeps_the_events_of_the_others(stepping):
    with RocketSimEngine(3, 1, 0, stepping=stepping, num_workers=2) as engine:  # blocks {0}, {1, 2}
        engine.reset(
            everywhere(engine),
            reset_state(
                ball_pos=[FAR_BALL] * 3,
                car_pos=[[[0, -3100, 17]]] * 3,
                car_vel=[[[0, 1500, 0]]] * 3,
                car_rotation=[[yaw(math.pi / 2)]] * 3,
            ),
        )
        controls = no_controls(engine)
        controls[..., THROTTLE] = 1.0
        s = engine.step(controls)
        while not (s.car_boost_pickups == 1).all():
            s = engine.step(controls)
        assert (s.car_boost_pickups == 1).all()
        s = engine.reset(torch.tensor([False, True, False]), reset_state(ball_pos=[FAR_BALL], car_pos=[[[0, 0, 17]]]))
    assert s.car_boost_pickups[:, 0].tolist() == [1, 0, 1], "the last step's pickups of arenas 0 and 2 are kept"


# ------------------------------------------------------------------------------------------------ modes
def test_all_stepping_modes_produce_the_same_states():
    num_arenas, g = 4, torch.Generator().manual_seed(0)
    state = reset_state(
        ball_pos=[[x, 0, 93.15] for x in (0, 60, -60, 120)],
        ball_vel=[[0, 0, 0], [0, 0, 400], [200, 0, 0], [0, 0, 0]],
        car_pos=[[[0, -500, 17], [-2000, -2000, 17], [0, 500, 17], [0, 2900, 17]]] * num_arenas,
        car_vel=[[[0, 1500, 0], [0, 0, 0], [0, -1500, 0], [0, 0, 0]]] * num_arenas,
        car_rotation=[[yaw(math.pi / 2), yaw(0), yaw(-math.pi / 2), yaw(-math.pi / 2)]] * num_arenas,
    )
    controls = []
    for _ in range(10):
        analog = torch.rand(num_arenas, 4, 5, generator=g) * 2 - 1
        buttons = (torch.rand(num_arenas, 4, 3, generator=g) > 0.6).float()
        controls.append(torch.cat([analog, buttons], dim=-1))
    kickoff_mask = torch.tensor([True, False, True, False])

    runs: dict[str, list[BatchState]] = {}
    kickoffs: dict[str, BatchState] = {}
    for stepping in STEPPING_MODES:
        with RocketSimEngine(num_arenas, 2, 2, stepping=stepping, num_workers=2) as engine:
            states = [engine.reset(everywhere(engine), state)]
            states += [engine.step(c) for c in controls]
            runs[stepping] = states
            kickoffs[stepping] = engine.reset_kickoff_native(kickoff_mask, seed=5)

    reference = runs["serial"]
    assert any(s.car_touched_ball.any() for s in reference), "the run should include ball touches"
    assert any(s.car_boost_pickups.any() for s in reference), "the run should include boost pickups"
    for stepping, states in runs.items():
        for i, (got, want) in enumerate(zip(states, reference)):
            for f in fields(BatchState):
                a, b = getattr(got, f.name), getattr(want, f.name)
                assert a.dtype == b.dtype and a.shape == b.shape, (stepping, i, f.name)
                torch.testing.assert_close(a.double(), b.double(), atol=1e-3, rtol=0, msg=f"{stepping} {i} {f.name}")

    # RocketSim's kickoff picks the same spawns for a seed, but which car of a team gets which of them follows
    # the iteration order of its internal car set (pointer hashes), which differs between builds. So compare
    # each team's spawns as a set, and everything that does not depend on the assignment exactly.
    def spawns(s: BatchState, a: int, team: slice) -> list[tuple[float, ...]]:
        return sorted(tuple(round(v, 1) for v in xy) for xy in s.car_pos[a, team, :2].tolist())

    want = kickoffs["serial"]
    for stepping, got in kickoffs.items():
        for name in ("ball_pos", "ball_vel", "car_boost", "pad_active", "pad_timer", "blue_score", "orange_score"):
            torch.testing.assert_close(getattr(got, name), getattr(want, name), atol=1e-3, rtol=0, msg=name)
        for a in range(num_arenas):
            for team in (slice(0, 2), slice(2, 4)):
                assert spawns(got, a, team) == spawns(want, a, team), (stepping, a)
        untouched = ~kickoff_mask
        torch.testing.assert_close(got.car_pos[untouched], runs[stepping][-1].car_pos[untouched])


# ------------------------------------------------------------------------------------------------ bad input
def test_controls_of_the_wrong_shape_are_rejected(duel):
    for shape in [(2, 2, 7), (2, 3, 8), (1, 2, 8), (2, 16)]:
        with pytest.raises(ValueError, match="controls"):
            duel.step(torch.zeros(shape))


def test_reset_state_with_a_non_finite_value_is_rejected_naming_the_field(duel):
    s = duel.reset(everywhere(duel), reset_state(ball_pos=[FAR_BALL] * 2, car_pos=[[[0, -2000, 17], PARKED]] * 2))
    before = s.clone()
    for f in fields(ResetState):
        if f.name == "blue_first":  # optional bool flags; their shape is checked below
            continue
        for bad in (float("nan"), float("inf")):
            state = reset_state(ball_pos=[[0, 0, 93.15]] * 2, car_pos=[[[0, 0, 17], [0, 100, 17]]] * 2)
            getattr(state, f.name).view(-1)[-1] = bad
            with pytest.raises(ValueError, match=rf"ResetState\.{f.name}\b"):
                duel.reset(everywhere(duel), state)
    state = reset_state(
        ball_pos=[[0, 0, 93.15]] * 2, car_pos=[[[0, 0, 17], [0, 100, 17]]] * 2, car_boost=[[101, 0]] * 2
    )
    with pytest.raises(ValueError, match="car_boost"):
        duel.reset(everywhere(duel), state)
    state = reset_state(ball_pos=[[0, 0, 93.15]] * 2, car_pos=[[[0, 0, 17]]] * 2)  # 1 car, engine has 2
    with pytest.raises(ValueError, match="car_pos"):
        duel.reset(everywhere(duel), state)
    state = reset_state(ball_pos=[[0, 0, 93.15]] * 2, car_pos=[[[0, 0, 17], [0, 100, 17]]] * 2)
    state.blue_first = torch.tensor([True])
    with pytest.raises(ValueError, match="blue_first"):
        duel.reset(everywhere(duel), state)
    # A rejected reset changes nothing.
    assert torch.equal(duel.state.ball_pos, before.ball_pos) and torch.equal(duel.state.car_pos, before.car_pos)


def test_reset_mask_of_the_wrong_shape_is_rejected(duel):
    good = reset_state(ball_pos=[FAR_BALL] * 2, car_pos=[[[0, -2000, 17], PARKED]] * 2)
    for mask in (torch.ones(3, dtype=torch.bool), torch.ones(2, 1, dtype=torch.bool), torch.tensor(True)):
        with pytest.raises(ValueError, match="mask"):
            duel.reset(mask, good)
        with pytest.raises(ValueError, match="mask"):
            duel.reset_kickoff_native(mask, 0)
    s = duel.reset(torch.zeros(2, dtype=torch.bool), good)  # an empty mask is a no-op
    assert s is duel.state


def test_reset_state_for_the_wrong_number_of_arenas_is_rejected(duel):
    state = reset_state(ball_pos=[[0, 0, 93.15]], car_pos=[[[0, 0, 17], [0, 100, 17]]])  # K = 1
    with pytest.raises(ValueError, match="mask"):
        duel.reset(everywhere(duel), state)  # mask.sum() = 2


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"num_arenas": 0}, "num_arenas"),
        ({"num_arenas": -3}, "num_arenas"),
        ({"blue_size": 4}, "blue_size"),
        ({"blue_size": 0}, "blue_size"),
        ({"orange_size": -1}, "orange_size"),
        ({"orange_size": 4}, "orange_size"),
        ({"tick_skip": 0}, "tick_skip"),
        ({"stepping": "bogus"}, "stepping"),
    ],
)
def test_bad_constructor_arguments_are_rejected_naming_the_argument(kwargs, argument):
    args = {"num_arenas": 1, "blue_size": 1, "orange_size": 1, "stepping": "serial", **kwargs}
    with pytest.raises(ValueError, match=argument):
        RocketSimEngine(**args)


def test_missing_collision_meshes_raise_a_helpful_error(monkeypatch, tmp_path):
    monkeypatch.setenv(MESHES_ENV_VAR, str(tmp_path))
    with pytest.raises(CollisionMeshesNotFound) as info:
        find_collision_meshes()
    assert MESHES_ENV_VAR in str(info.value) and "rlgym-rocket-league" in str(info.value)
    assert isinstance(info.value, FileNotFoundError)

    (tmp_path / "soccar").mkdir()
    with pytest.raises(CollisionMeshesNotFound):  # a soccar/ folder without .cmf files is not enough
        find_collision_meshes()
    (tmp_path / "soccar" / "mesh_0.cmf").write_bytes(b"")
    assert find_collision_meshes() == tmp_path

    monkeypatch.delenv(MESHES_ENV_VAR)
    assert any((find_collision_meshes() / "soccar").glob("*.cmf")), "the rlgym-rocket-league meshes are found"
    monkeypatch.setattr("rocketrl.sim.meshes._rlgym_importable", lambda: False)
    with pytest.raises(CollisionMeshesNotFound, match="rlgym-rocket-league"):
        find_collision_meshes()


@pytest.mark.parametrize("stepping", STEPPING_MODES)
def test_stepping_a_closed_engine_raises(stepping):
    engine = RocketSimEngine(2, 1, 1, stepping=stepping, num_workers=2)
    with engine:
        engine.step(no_controls(engine))
    engine.close()  # closing twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        engine.step(no_controls(engine))


@pytest.mark.parametrize("stepping", STEPPING_MODES)
def test_resetting_a_closed_engine_raises(stepping):
    engine = RocketSimEngine(2, 1, 1, stepping=stepping, num_workers=2)
    engine.close()
    with pytest.raises(RuntimeError, match="closed"):
        engine.reset(everywhere(engine), reset_state(ball_pos=[FAR_BALL] * 2, car_pos=[[[0, 0, 17], PARKED]] * 2))


# ------------------------------------------------------------------------------------------------ team sizes
@pytest.mark.parametrize(("blue", "orange"), [(1, 1), (1, 2), (2, 2), (2, 3), (3, 3), (1, 0)])
def test_team_sizes_build_step_and_report_teams(blue, orange):
    num_arenas, cars = 2, blue + orange
    with RocketSimEngine(num_arenas, blue, orange, num_workers=2) as engine:
        assert engine.num_cars == cars
        start = engine.state
        controls = no_controls(engine)
        controls[..., THROTTLE] = 1.0
        for _ in range(5):
            s = engine.step(controls)
    teams = torch.tensor([[0] * blue + [1] * orange] * num_arenas)
    assert s.car_team.dtype == torch.int64 and torch.equal(s.car_team, teams)
    assert torch.equal(s.car_is_orange(), teams == 1)
    assert s.num_arenas == num_arenas and s.num_cars == cars
    shapes = {
        **dict.fromkeys(("ball_pos", "ball_vel", "ball_ang_vel"), (num_arenas, 3)),
        **dict.fromkeys(("car_pos", "car_vel", "car_ang_vel", "car_forward", "car_up"), (num_arenas, cars, 3)),
        **dict.fromkeys(
            ("car_boost", "car_on_ground", "car_has_jump", "car_has_flip", "car_demolished", "car_team") + EVENT_FIELDS,
            (num_arenas, cars),
        ),
        **dict.fromkeys(("pad_active", "pad_timer"), (num_arenas, arena.NUM_BOOST_PADS)),
        **dict.fromkeys(("blue_score", "orange_score", "goal_scored", "ball_last_touch"), (num_arenas,)),
    }
    assert set(shapes) == {f.name for f in fields(BatchState)}
    for name, shape in shapes.items():
        assert tuple(getattr(s, name).shape) == shape, name
    # Built at kickoff: blue cars in their own half (-y), orange in theirs; full throttle drives each forward.
    assert (start.car_pos[:, :blue, 1] < -2000).all() and (start.car_pos[:, blue:, 1] > 2000).all()
    moved = ((s.car_pos - start.car_pos) * start.car_forward).sum(-1)
    assert (moved > 50).all()


@pytest.mark.parametrize("pin_memory", [True, False])
def test_pin_memory_is_a_safe_no_op_on_cpu(pin_memory):
    with RocketSimEngine(2, 1, 1, stepping="serial", pin_memory=pin_memory) as engine:
        state = engine.step(no_controls(engine))
        assert engine._pinned is None and state.car_pos.device.type == "cpu"


def test_car_order_decides_head_on_contacts_and_is_followed_by_the_readout(duel):
    # RocketSim resolves a car-car contact in the order the cars joined the arena. Arena 1 holds the
    # mirror image of arena 0 with the teams swapped: with the same order (blue first) the meeting
    # ends differently, with the order swapped too it ends as the exact mirror image.
    cars = torch.tensor([[276.1, -653.3, 17.0], [342.6, -585.7, 17.0]])
    vels = torch.tensor([[889.8, 903.6, 0.0], [-502.2, -778.8, 0.0]])
    rots = torch.tensor([[0.0, 0.7931, 0.0], [0.0, 4.1396, 0.0]])
    mirror = torch.tensor([-1.0, -1.0, 1.0])
    mirrored_rots = rots.flip(0).clone()
    mirrored_rots[:, 1] += math.pi
    state = ResetState(
        ball_pos=torch.tensor([FAR_BALL, [-FAR_BALL[0], -FAR_BALL[1], FAR_BALL[2]]]),
        ball_vel=torch.zeros(2, 3),
        ball_ang_vel=torch.zeros(2, 3),
        car_pos=torch.stack([cars, (cars * mirror).flip(0)]),
        car_vel=torch.stack([vels, (vels * mirror).flip(0)]),
        car_ang_vel=torch.zeros(2, 2, 3),
        car_rotation=torch.stack([rots, mirrored_rots]),
        car_boost=torch.zeros(2, 2),
    )
    controls = no_controls(duel)
    controls[..., THROTTLE] = 1.0
    gaps = []
    for blue_first in ([True, True], [True, False]):
        state.blue_first = torch.tensor(blue_first)
        s = duel.reset(everywhere(duel), state)
        # The readout keeps our car order (blue, then orange) whichever joined first.
        torch.testing.assert_close(s.car_pos, state.car_pos, atol=1.0, rtol=0)
        assert s.car_team.tolist() == [[0, 1], [0, 1]]
        for _ in range(8):
            s = duel.step(controls)
        gaps.append(float((s.car_vel[0] - (s.car_vel[1] * mirror).flip(0)).norm(dim=-1).max()))
    assert gaps[0] > 200.0, gaps  # same order: the mirrored meeting ends differently
    assert gaps[1] < 5.0, gaps  # mirrored order too: the exact mirror image


def test_env_draws_the_car_order_evenly_at_resets():
    from rocketrl.env.batched import BatchedEnv

    with BatchedEnv(num_arenas=4, blue_size=1, orange_size=1, num_workers=1, seed=3) as env:
        drawn = torch.cat([env._reset_state(64).blue_first for _ in range(8)])
    assert drawn.dtype == torch.bool and 0.4 < drawn.float().mean() < 0.6


def test_block_readout_and_controls_match_rocketsim_objects_in_either_car_order(monkeypatch):
    import numpy as np

    from rocketrl.sim import rocketsim_block
    from rocketrl.sim.rocketsim_block import CX_HAS_JUMPED, GYM_CAR_WIDTH, ArenaBlock, StateLayout

    monkeypatch.setattr(rocketsim_block, "CONTROLS_CACHE_SIZE", 3)  # most rows miss the cache
    blue, orange, n = 2, 1, 4
    layout = StateLayout(blue + orange)
    state = np.zeros((n, layout.width), np.float32)
    controls = np.zeros((n, blue + orange, 8), np.float32)
    reset_rows = np.zeros((n, layout.reset_width()), np.float32)
    block = ArenaBlock(0, n, blue, orange, 0, state, controls, reset_rows)
    for k in (1, 3):  # orange joins these arenas first
        block._respawn_cars(k, blue_first=False)
    for k, rs_arena in enumerate(block.arenas):
        rs_arena.reset_kickoff(k)
    rng = np.random.default_rng(0)
    for _ in range(12):
        controls[:] = rng.uniform(-1.0, 1.0, controls.shape)
        block.step(8)
        for k, rs_arena in enumerate(block.arenas):
            gym = rs_arena.get_gym_state()
            np.testing.assert_array_equal(state[k, 0:4], gym[0])
            np.testing.assert_array_equal(state[k, layout.ball : layout.ball + 25], gym[2][0])
            for c, car in enumerate(block.cars[k]):
                row = block.raw_cars[k, c]
                assert row[1] == (0 if c < blue else 1)  # the gym row's team column: our car order holds
                np.testing.assert_array_equal(row[:GYM_CAR_WIDTH], gym[block.gym_row[k, c]][0])
                s = car.get_state()
                if not s.is_on_ground or controls[k, c, 5] > 0.5:
                    flags = [s.has_jumped, s.has_double_jumped, s.has_flipped, s.air_time_since_jump]
                    np.testing.assert_allclose(row[CX_HAS_JUMPED:], flags, rtol=0, atol=1e-6)
                applied = car.get_controls()
                want = controls[k, c]
                got = [applied.throttle, applied.steer, applied.pitch, applied.yaw, applied.roll]
                np.testing.assert_allclose(got, want[:5], rtol=0, atol=1e-6)
                assert (applied.jump, applied.boost, applied.handbrake) == tuple(bool(v > 0.5) for v in want[5:])
    assert len(block._controls_cache) == 3


@pytest.mark.parametrize("engine_name", ["rocketsim", "warp"])
def test_both_engines_keep_the_engine_contract(engine_name: str) -> None:
    """Both engines are `Engine`s: step is step_async + step_wait, one step in flight at a time, the
    state keeps the previous step until step_wait, and the checks name the setting."""
    if engine_name == "warp":
        pytest.importorskip("warp")
    from rocketrl.env.config import EnvConfig
    from rocketrl.sim.engine_base import Engine
    from rocketrl.sim.engines import make_engine

    engine = make_engine(EnvConfig(num_arenas=2, engine=engine_name, stepping="serial"), torch.device("cpu"))
    try:
        assert isinstance(engine, Engine) and engine.num_cars == 2 and engine.num_workers >= 1
        before = engine.state
        controls = torch.zeros(2, 2, 8)
        controls[..., 0] = 1.0
        engine.step_async(controls)
        assert engine.step_in_flight and engine.state is before
        with pytest.raises(RuntimeError, match="already in flight"):
            engine.step_async(controls)
        with pytest.raises(RuntimeError, match="in flight"):
            engine.reset(torch.ones(2, dtype=torch.bool), lambda k: None)
        after = engine.step_wait()
        assert not engine.step_in_flight and engine.state is after
        assert bool((after.car_vel.norm(dim=-1) > before.car_vel.norm(dim=-1)).all())  # throttle moved them
        with pytest.raises(RuntimeError, match="without a step in flight"):
            engine.step_wait()
        with pytest.raises(ValueError, match=r"controls have shape \(2, 2, 7\), expected \(2, 2, 8\)"):
            engine.step(torch.zeros(2, 2, 7))
    finally:
        engine.close()
    with pytest.raises(RuntimeError, match="was closed"):
        engine.step(controls)
    with pytest.raises(ValueError, match="tick_skip=0: must be at least 1"):
        type(engine)(1, 1, 1, tick_skip=0)
    with pytest.raises(ValueError, match="blue_size=4: must be 1 to 3"):
        type(engine)(1, 4, 1)


def test_workers_started_by_spawn_play_the_same_game_as_forked_ones(monkeypatch):
    """Where fork cannot be used (CUDA initialised in this process, or no fork on the platform) the workers
    start by spawn; they play exactly the game forked workers play."""
    from rocketrl.sim import rocketsim_workers

    assert rocketsim_workers.worker_start_method() == ("spawn" if torch.cuda.is_initialized() else "fork")
    finals = {}
    for method in ("fork", "spawn"):
        monkeypatch.setattr(rocketsim_workers, "worker_start_method", lambda method=method: method)
        with RocketSimEngine(2, 1, 1, stepping="processes", num_workers=2, seed=5) as engine:
            controls = no_controls(engine)
            controls[..., THROTTLE] = 1.0
            controls[..., STEER] = torch.tensor([[0.3, -0.6], [1.0, 0.0]])
            for _ in range(10):
                engine.step(controls)
            finals[method] = engine.state.clone()
    assert torch.equal(finals["fork"].car_pos, finals["spawn"].car_pos)
    assert torch.equal(finals["fork"].ball_pos, finals["spawn"].ball_pos)
