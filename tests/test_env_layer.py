"""Tests of the batched game layer: setters, observations, actions, rewards, done conditions, BatchedEnv.

Most tests build BatchState objects by hand (`make_state`) and need no physics; the RocketSim engine is
used only where physics matters (kickoff against RocketSim's own kickoff, Euler convention, BatchedEnv).
"""

from __future__ import annotations

import math
from dataclasses import fields
from pathlib import Path

import pytest
import torch

from rocketrl.env.actions import (
    ContinuousAction,
    InvalidActionError,
    LookupTableAction,
    lookup_table,
    make_action_parser,
)
from rocketrl.env.batched import BatchedEnv
from rocketrl.env.config import EnvConfig, default_rewards_path
from rocketrl.env.done import DoneConditions
from rocketrl.env.obs import OBS_SIZE, DefaultObs
from rocketrl.env.rewards import (
    REWARD_TERMS,
    RewardConfig,
    RewardFunction,
    aerial_touch_height,
    align_ball_goal,
    boost_held,
    boost_pickup,
    conceding_touch,
    demolition,
    dodge_touch,
    face_ball,
    goal,
    in_air,
    save,
    shot,
    touch,
    touch_ball_to_goal,
    touch_strength,
    velocity_ball_to_goal,
    velocity_player_to_ball,
)
from rocketrl.env.setters import (
    DodgeShotSetter,
    KickoffSetter,
    RandomStateSetter,
    WeightedSetter,
    jitter_spawns,
    make_setter,
)
from rocketrl.sim.arena import (
    BACK_WALL_Y,
    BALL_REST_Z,
    CAR_SPAWN_REST_Z,
    CEILING_Z,
    GOAL_HEIGHT,
    KICKOFF_BOOST,
    KICKOFF_SPAWNS_BLUE,
    NUM_BOOST_PADS,
    SIDE_WALL_X,
    TICK_TIME,
)
from rocketrl.sim.rocketsim import RocketSimEngine
from rocketrl.sim.state import BatchState, ResetState, euler_to_forward_up, kickoff_reset_state

REPO = Path(__file__).resolve().parents[1]
GOAL_Z = GOAL_HEIGHT / 2
STEP_SECONDS = 8 * TICK_TIME
SPAWNS = torch.tensor(KICKOFF_SPAWNS_BLUE, dtype=torch.float32)  # (5, 3): x, y, yaw


# ------------------------------------------------------------------------------------------ helpers
def make_state(a: int, blue: int, orange: int, **overrides: torch.Tensor) -> BatchState:
    """A BatchState of `a` arenas: cars on the ground in their own half facing the other goal, ball
    at rest on the centre spot, every pad active, no events, no score, nobody touched the ball."""
    n = blue + orange
    team = torch.tensor([0] * blue + [1] * orange, dtype=torch.int64)
    sign = (1.0 - 2.0 * team.float()).view(1, n)  # +1 blue, -1 orange
    car_pos = torch.zeros(a, n, 3)
    car_pos[..., 0] = 300.0 * torch.arange(n, dtype=torch.float32)
    car_pos[..., 1] = -2000.0 * sign
    car_pos[..., 2] = CAR_SPAWN_REST_Z
    forward = torch.zeros(a, n, 3)
    forward[..., 1] = sign
    up = torch.zeros(a, n, 3)
    up[..., 2] = 1.0
    values = dict(
        ball_pos=torch.tensor([0.0, 0.0, BALL_REST_Z]).repeat(a, 1),
        ball_vel=torch.zeros(a, 3),
        ball_ang_vel=torch.zeros(a, 3),
        car_pos=car_pos,
        car_vel=torch.zeros(a, n, 3),
        car_ang_vel=torch.zeros(a, n, 3),
        car_forward=forward,
        car_up=up,
        car_boost=torch.full((a, n), KICKOFF_BOOST),
        car_on_ground=torch.ones(a, n, dtype=torch.bool),
        car_has_jump=torch.ones(a, n, dtype=torch.bool),
        car_has_flip=torch.zeros(a, n, dtype=torch.bool),
        car_demolished=torch.zeros(a, n, dtype=torch.bool),
        car_team=team.expand(a, n).clone(),
        pad_active=torch.ones(a, NUM_BOOST_PADS, dtype=torch.bool),
        pad_timer=torch.zeros(a, NUM_BOOST_PADS),
        blue_score=torch.zeros(a, dtype=torch.int64),
        orange_score=torch.zeros(a, dtype=torch.int64),
        goal_scored=torch.full((a,), -1, dtype=torch.int64),
        car_touched_ball=torch.zeros(a, n, dtype=torch.bool),
        car_was_demolished=torch.zeros(a, n, dtype=torch.bool),
        car_demolitions=torch.zeros(a, n, dtype=torch.int64),
        car_boost_pickups=torch.zeros(a, n, dtype=torch.int64),
        ball_last_touch=torch.full((a,), -1, dtype=torch.int64),
    )
    unknown = set(overrides) - set(values)
    assert not unknown, f"make_state: unknown fields {unknown}"
    values.update(overrides)
    return BatchState(**values)


def random_state(a: int, blue: int, orange: int, gen: torch.Generator) -> BatchState:
    """Every field random (but of the right kind), to exercise every observation entry."""
    n = blue + orange

    def rand(*shape: int, low: float, high: float) -> torch.Tensor:
        return low + (high - low) * torch.rand(*shape, generator=gen)

    def flag(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=gen) < 0.5

    def vec(*shape: int, scale: float) -> torch.Tensor:
        return torch.randn(*shape, 3, generator=gen) * scale

    rotation = rand(a, n, 3, low=-math.pi, high=math.pi)
    forward, up = euler_to_forward_up(rotation)
    pos = torch.stack([rand(a, n, low=-4000, high=4000), rand(a, n, low=-5000, high=5000)], dim=-1)
    car_pos = torch.cat([pos, rand(a, n, 1, low=17, high=2000)], dim=-1)
    ball_pos = torch.stack(
        [rand(a, low=-4000, high=4000), rand(a, low=-5000, high=5000), rand(a, low=93, high=2000)], dim=-1
    )
    return make_state(
        a,
        blue,
        orange,
        ball_pos=ball_pos,
        ball_vel=vec(a, scale=1500.0),
        ball_ang_vel=vec(a, scale=3.0),
        car_pos=car_pos,
        car_vel=vec(a, n, scale=1000.0),
        car_ang_vel=vec(a, n, scale=2.0),
        car_forward=forward,
        car_up=up,
        car_boost=rand(a, n, low=0, high=100),
        car_on_ground=flag(a, n),
        car_has_jump=flag(a, n),
        car_has_flip=flag(a, n),
        car_demolished=flag(a, n),
        pad_active=flag(a, NUM_BOOST_PADS),
        pad_timer=rand(a, NUM_BOOST_PADS, low=0, high=10),
        blue_score=torch.randint(0, 5, (a,), generator=gen),
        orange_score=torch.randint(0, 5, (a,), generator=gen),
        goal_scored=torch.randint(-1, 2, (a,), generator=gen),
        car_touched_ball=flag(a, n),
        car_was_demolished=flag(a, n),
        car_demolitions=torch.randint(0, 2, (a, n), generator=gen),
        car_boost_pickups=torch.randint(0, 2, (a, n), generator=gen),
        ball_last_touch=torch.randint(-1, n, (a,), generator=gen),
    )


def mirror_state(state: BatchState, blue: int) -> BatchState:
    """The same situation seen from the other side: every vector rotated by pi about z, the orange cars
    of `state` become the blue cars (in order) and vice versa, pads in mirrored order, scores swapped."""
    n = state.num_cars
    assert n == 2 * blue, "mirroring swaps the teams, so both must have the same size"
    perm = torch.tensor(list(range(blue, n)) + list(range(blue)))  # new car j = old car perm[j]
    inverse = torch.argsort(perm)  # old car c -> new index
    flip = torch.tensor([-1.0, -1.0, 1.0])

    def cars(t: torch.Tensor) -> torch.Tensor:
        return t[:, perm]

    last = state.ball_last_touch
    return BatchState(
        ball_pos=state.ball_pos * flip,
        ball_vel=state.ball_vel * flip,
        ball_ang_vel=state.ball_ang_vel * flip,
        car_pos=cars(state.car_pos) * flip,
        car_vel=cars(state.car_vel) * flip,
        car_ang_vel=cars(state.car_ang_vel) * flip,
        car_forward=cars(state.car_forward) * flip,
        car_up=cars(state.car_up) * flip,
        car_boost=cars(state.car_boost),
        car_on_ground=cars(state.car_on_ground),
        car_has_jump=cars(state.car_has_jump),
        car_has_flip=cars(state.car_has_flip),
        car_demolished=cars(state.car_demolished),
        car_team=state.car_team.clone(),  # blue first, orange after, as always
        pad_active=state.pad_active.flip(-1),
        pad_timer=state.pad_timer.flip(-1),
        blue_score=state.orange_score.clone(),
        orange_score=state.blue_score.clone(),
        goal_scored=torch.where(state.goal_scored >= 0, 1 - state.goal_scored, state.goal_scored),
        car_touched_ball=cars(state.car_touched_ball),
        car_was_demolished=cars(state.car_was_demolished),
        car_demolitions=cars(state.car_demolitions),
        car_boost_pickups=cars(state.car_boost_pickups),
        ball_last_touch=torch.where(last >= 0, inverse[last.clamp_min(0)], last),
    )


def state_from_reset(reset: ResetState, blue: int, orange: int) -> BatchState:
    """The BatchState an engine would report right after applying `reset` (no physics)."""
    forward, up = euler_to_forward_up(reset.car_rotation)
    return make_state(
        reset.num_arenas,
        blue,
        orange,
        ball_pos=reset.ball_pos,
        ball_vel=reset.ball_vel,
        ball_ang_vel=reset.ball_ang_vel,
        car_pos=reset.car_pos,
        car_vel=reset.car_vel,
        car_ang_vel=reset.car_ang_vel,
        car_forward=forward,
        car_up=up,
        car_boost=reset.car_boost,
    )


def wrap(angle: torch.Tensor) -> torch.Tensor:
    """Angle difference folded into [-pi, pi)."""
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


def assert_states_equal(a: BatchState, b: BatchState) -> None:
    for f in fields(BatchState):
        x, y = getattr(a, f.name), getattr(b, f.name)
        assert x.shape == y.shape and x.dtype == y.dtype, f.name
        assert torch.equal(x, y), f"BatchState.{f.name} changed"


def spawn_index(xy: torch.Tensor, mirrored: bool = False) -> torch.Tensor:
    """Index into KICKOFF_SPAWNS_BLUE of each (..., 2) position (-1 if none), mirrored for orange."""
    spawns = -SPAWNS[:, :2] if mirrored else SPAWNS[:, :2]
    match = ((xy.unsqueeze(-2) - spawns).abs() < 1e-3).all(-1)  # (..., 5)
    return torch.where(match.any(-1), match.float().argmax(-1), torch.full(match.shape[:-1], -1))


# ========================================================================================= 1. setters
class TestKickoffSetter:
    def test_blue_cars_on_the_five_real_spawns_with_kickoff_boost(self):
        reset = KickoffSetter(3, 3)(64, torch.Generator().manual_seed(0))
        reset.validate(6)
        blue = reset.car_pos[:, :3]
        index = spawn_index(blue[..., :2])
        assert (index >= 0).all(), "a blue car is not on a real kickoff spawn"
        assert torch.equal(blue[..., :2], SPAWNS[index][..., :2])  # exactly, not approximately
        assert (reset.car_pos[..., 2] == CAR_SPAWN_REST_Z).all()
        assert torch.allclose(wrap(reset.car_rotation[:, :3, 1] - SPAWNS[index][..., 2]), torch.zeros(64, 3), atol=1e-6)
        assert (reset.car_rotation[..., 0] == 0).all() and (reset.car_rotation[..., 2] == 0).all()
        assert torch.allclose(reset.car_boost, torch.full((64, 6), 100.0 / 3.0))
        assert torch.equal(reset.ball_pos, torch.tensor([[0.0, 0.0, BALL_REST_Z]]).expand(64, 3))
        for name in ("ball_vel", "ball_ang_vel", "car_vel", "car_ang_vel"):
            assert (getattr(reset, name) == 0).all(), name

    def test_orange_cars_on_pi_rotated_spawns_with_yaw_plus_pi(self):
        reset = KickoffSetter(3, 3)(64, torch.Generator().manual_seed(1))
        blue_index = spawn_index(reset.car_pos[:, :3, :2])
        orange_index = spawn_index(reset.car_pos[:, 3:, :2], mirrored=True)
        assert (orange_index >= 0).all(), "an orange car is not on a pi-rotated kickoff spawn"
        # As in Rocket League, orange car i faces blue car i from the mirrored spawn.
        assert torch.equal(orange_index, blue_index)
        expected_yaw = SPAWNS[orange_index][..., 2] + math.pi
        assert torch.allclose(wrap(reset.car_rotation[:, 3:, 1] - expected_yaw), torch.zeros(64, 3), atol=1e-6)
        assert torch.allclose(reset.car_rotation[:, 3:, 1], wrap(reset.car_rotation[:, 3:, 1]))  # in [-pi, pi)

    @pytest.mark.parametrize("blue, orange", [(3, 3), (2, 3), (1, 3), (3, 0)])
    def test_no_two_cars_of_a_team_share_a_spawn(self, blue, orange):
        reset = KickoffSetter(blue, orange)(64, torch.Generator().manual_seed(2))
        blue_index = spawn_index(reset.car_pos[:, :blue, :2])
        orange_index = spawn_index(reset.car_pos[:, blue:, :2], mirrored=True)
        assert (blue_index >= 0).all() and (orange_index >= 0).all()
        for index in (blue_index, orange_index):
            for row in index.tolist():
                assert len(set(row)) == len(row), f"two cars share a spawn: {row}"

    def test_each_arena_draws_its_own_order(self):
        reset = KickoffSetter(3, 3)(64, torch.Generator().manual_seed(3))
        orders = {tuple(row) for row in spawn_index(reset.car_pos[:, :3, :2]).tolist()}
        assert len(orders) >= 10, f"only {len(orders)} different spawn orders over 64 arenas"
        first = set(spawn_index(reset.car_pos[:, 0, :2]).tolist())
        assert first == set(range(5)), "the first blue car should use every spawn over 64 arenas"

    def test_deterministic_for_a_seeded_generator(self):
        setter = KickoffSetter(2, 2)
        a = setter(32, torch.Generator().manual_seed(7))
        b = setter(32, torch.Generator().manual_seed(7))
        c = setter(32, torch.Generator().manual_seed(8))
        for name in vars(a):
            if getattr(a, name) is None:  # an optional field the setter leaves to the env
                assert getattr(b, name) is None, name
                continue
            assert torch.equal(getattr(a, name), getattr(b, name)), name
        assert not torch.equal(a.car_pos, c.car_pos)


class TestKickoffJitter:
    def test_each_car_moves_within_the_jitter_and_nothing_else_changes(self):
        exact = KickoffSetter(3, 3)(64, torch.Generator().manual_seed(4))
        moved = KickoffSetter(3, 3, jitter=5.0)(64, torch.Generator().manual_seed(4))  # same spawn order
        offset = moved.car_pos - exact.car_pos
        assert offset[..., :2].abs().max() <= 5.0 and offset[..., :2].abs().max() > 4.0
        assert (offset[..., 2] == 0).all()
        assert len(torch.unique(offset[..., 0])) == 64 * 6, "every car draws its own offset"
        for name in ("ball_pos", "ball_vel", "car_vel", "car_rotation", "car_boost"):
            assert torch.equal(getattr(moved, name), getattr(exact, name)), name

    def test_zero_jitter_is_the_exact_kickoff_and_keeps_the_random_stream(self):
        gen_a, gen_b = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
        assert torch.equal(KickoffSetter(2, 2, jitter=0.0)(16, gen_a).car_pos, KickoffSetter(2, 2)(16, gen_b).car_pos)
        assert torch.equal(torch.rand(4, generator=gen_a), torch.rand(4, generator=gen_b))

    @pytest.mark.parametrize("jitter", [-1.0, 101.0, float("nan")])
    def test_out_of_range_jitter_is_an_error(self, jitter):
        with pytest.raises(ValueError, match=r"kickoff jitter .* must lie in \[0, 100\]"):
            KickoffSetter(1, 1, jitter=jitter)
        with pytest.raises(ValueError, match="env.kickoff_jitter"):
            EnvConfig(kickoff_jitter=jitter)

    def test_env_config_reaches_the_setter(self):
        setter = make_setter({"kickoff": 0.5, "random": 0.5}, 1, 1, kickoff_jitter=3.0)
        assert isinstance(setter, WeightedSetter) and setter.setters[0].jitter == 3.0

    def test_exact_kickoffs_replay_exactly_and_jittered_ones_do_not(self):
        """The reason for jitter: physics is deterministic, so the same spawn and the same controls give
        the same kickoff in every arena; moving the cars a few uu gives each arena its own."""
        a = 4
        full_throttle_boost = torch.zeros(a, 2, 8)
        full_throttle_boost[..., 0] = 1.0
        full_throttle_boost[..., 6] = 1.0

        def ball_after_kickoff(jitter: float) -> torch.Tensor:
            order = torch.tensor([4, 0, 1, 2, 3]).expand(a, 5)  # every arena: both cars straight back, blue first
            state = kickoff_reset_state(order, 1, 1)
            state.blue_first = torch.ones(a, dtype=torch.bool)
            if jitter:
                jitter_spawns(state, jitter, torch.Generator().manual_seed(0))
            with RocketSimEngine(a, 1, 1, stepping="serial", num_workers=1) as engine:
                engine.reset(torch.ones(a, dtype=torch.bool), state)
                for _ in range(60):  # 4 s: the cars meet at the ball at about 2.5 s and it flies up
                    engine.step(full_throttle_boost)
                return engine.state.ball_pos.clone()

        exact = ball_after_kickoff(0.0)
        assert (exact == exact[0]).all(), "the same kickoff should replay bit for bit"
        jittered = ball_after_kickoff(5.0)
        spread = (jittered - jittered.mean(0)).norm(dim=-1)
        assert spread.max() > 50.0, f"5 uu of jitter moved the ball by at most {spread.max():.1f} uu after 4 s"


def test_kickoff_setter_matches_rocketsim_native_kickoff():
    """Every car RocketSim's own kickoff places is on a position our setter can produce, with the same
    forward/up vectors (read back through the engine) and the same boost and ball."""
    blue = orange = 3
    a = 8
    with RocketSimEngine(a, blue, orange, stepping="serial", num_workers=1) as engine:
        everything = torch.ones(a, dtype=torch.bool)
        # Our setter through the engine: remember forward/up per (team, spawn).
        ours: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor]] = {}
        gen = torch.Generator().manual_seed(0)
        for _ in range(4):
            state = engine.reset(everything, lambda k: KickoffSetter(blue, orange)(k, gen))
            assert torch.allclose(state.car_boost, torch.full((a, 6), KICKOFF_BOOST))
            for team, cars in ((0, slice(0, blue)), (1, slice(blue, blue + orange))):
                index = spawn_index(state.car_pos[:, cars, :2], mirrored=team == 1)
                assert (index >= 0).all()
                for i, f, u in zip(
                    index.flatten().tolist(),
                    state.car_forward[:, cars].reshape(-1, 3),
                    state.car_up[:, cars].reshape(-1, 3),
                ):
                    ours[(team, i)] = (f, u)
        assert len(ours) == 10, "our setter should have covered all five spawns of each team"

        for seed in range(5):
            native = engine.reset_kickoff_native(everything, seed=seed)
            assert torch.allclose(native.ball_pos, torch.tensor([0.0, 0.0, BALL_REST_Z]).expand(a, 3))
            assert torch.allclose(native.car_boost, torch.full((a, 6), KICKOFF_BOOST), atol=1e-3)
            assert torch.allclose(native.car_pos[..., 2], torch.full((a, 6), CAR_SPAWN_REST_Z), atol=1e-3)
            for team, cars in ((0, slice(0, blue)), (1, slice(blue, blue + orange))):
                index = spawn_index(native.car_pos[:, cars, :2], mirrored=team == 1)
                assert (index >= 0).all(), f"RocketSim kickoff (seed {seed}) used a spawn our setter cannot make"
                for arena in range(a):
                    for c in range(blue):
                        f, u = ours[(team, int(index[arena, c]))]
                        car = cars.start + c
                        torch.testing.assert_close(native.car_forward[arena, car], f, atol=1e-3, rtol=0)
                        torch.testing.assert_close(native.car_up[arena, car], u, atol=1e-3, rtol=0)


def test_euler_to_forward_up_matches_rocketsim():
    gen = torch.Generator().manual_seed(0)
    with RocketSimEngine(4, 2, 2, stepping="serial", num_workers=1) as engine:
        reset = RandomStateSetter(2, 2)(4, gen)
        reset.car_rotation = (torch.rand(4, 4, 3, generator=gen) - 0.5) * torch.tensor([3.0, 6.2, 6.2])
        state = engine.reset(torch.ones(4, dtype=torch.bool), reset)
        forward, up = euler_to_forward_up(reset.car_rotation)
        torch.testing.assert_close(state.car_forward, forward, atol=1e-5, rtol=0)
        torch.testing.assert_close(state.car_up, up, atol=1e-5, rtol=0)


def test_random_state_setter_gives_valid_states_inside_the_field():
    reset = RandomStateSetter(3, 3)(256, torch.Generator().manual_seed(0))
    reset.validate(6)
    for name, value in vars(reset).items():
        assert value is None or torch.isfinite(value.float()).all(), name
    for pos in (reset.ball_pos, reset.car_pos.reshape(-1, 3)):
        assert (pos[:, 0].abs() < SIDE_WALL_X).all()
        assert (pos[:, 1].abs() < BACK_WALL_Y).all()
        assert ((pos[:, 2] > 0) & (pos[:, 2] < CEILING_Z)).all()
    assert ((reset.car_boost >= 0) & (reset.car_boost <= 100)).all()
    assert reset.car_boost.std() > 10  # actually random
    assert (reset.car_vel.norm(dim=-1) <= 2300 + 1e-3).all()
    assert (reset.ball_vel.norm(dim=-1) <= 2000 + 1e-3).all()


def _dodge_shot_starts(k: int, blue: int, orange: int) -> tuple[ResetState, torch.Tensor]:
    """(reset, (K,) index of the car set up for the shot: the one off the floor; the others rest on it)."""
    reset = DodgeShotSetter(blue, orange)(k, torch.Generator().manual_seed(4))
    off_floor = reset.car_pos[..., 2] > CAR_SPAWN_REST_Z + 1.0
    assert torch.equal(off_floor.sum(dim=1), torch.ones(k, dtype=torch.long))  # exactly one per arena
    return reset, off_floor.float().argmax(dim=1)


@pytest.mark.parametrize(("blue", "orange"), [(1, 1), (2, 2), (3, 1)])
def test_dodge_shot_setter_puts_one_car_airborne_behind_the_ball_on_the_way_to_its_goal(blue, orange):
    reset, car = _dodge_shot_starts(512, blue, orange)
    reset.validate(blue + orange)
    rows = torch.arange(512)
    for pos in (reset.ball_pos, reset.car_pos.reshape(-1, 3)):
        assert (pos[:, 0].abs() < SIDE_WALL_X - 300).all() and (pos[:, 1].abs() < BACK_WALL_Y - 300).all()
    assert ((reset.ball_pos[:, 2] >= BALL_REST_Z) & (reset.ball_pos[:, 2] <= BALL_REST_Z + 120)).all()
    shooter = reset.car_pos[rows, car]
    assert ((shooter[:, 2] >= 40) & (shooter[:, 2] <= 140)).all()  # off the floor (a car at rest: 17 uu)
    gap = (reset.ball_pos - shooter)[:, :2]
    assert ((gap.norm(dim=-1) >= 250 - 1e-3) & (gap.norm(dim=-1) <= 650 + 1e-3)).all()
    goal_y = torch.where(car < blue, BACK_WALL_Y, -BACK_WALL_Y)  # blue attacks +y
    to_goal = torch.stack([-reset.ball_pos[:, 0], goal_y - reset.ball_pos[:, 1]], -1)
    cos_line = (gap * to_goal).sum(-1) / (gap.norm(dim=-1) * to_goal.norm(dim=-1))
    assert (cos_line >= math.cos(0.6) - 1e-4).all()  # car -> ball points within 0.6 rad of ball -> goal
    velocity = reset.car_vel[rows, car]
    assert ((velocity[:, :2].norm(dim=-1) >= 500 - 1e-3) & (velocity[:, :2].norm(dim=-1) <= 1800 + 1e-3)).all()
    cos_heading = (velocity[:, :2] * gap).sum(-1) / (velocity[:, :2].norm(dim=-1) * gap.norm(dim=-1))
    assert (cos_heading >= math.cos(0.2) - 1e-4).all()  # driving at the ball
    assert torch.equal(reset.car_rotation[rows, car, 0], torch.zeros(512))  # level: pitch and roll 0
    # both teams get the shots
    assert 0.3 < float((car < blue).float().mean()) < 0.8


def test_a_dodge_from_a_dodge_shot_start_sends_the_ball_harder_toward_the_goal():
    """In RocketSim: jump with the stick forward in the first step (a dodge, since the airborne car's flip is
    unused), then drive on, against driving on alone. The dodge sends the ball faster toward the goal the car
    attacks (measured 1,520 against 1,094 uu/s median on these 64 arenas)."""
    k = 64
    reset, car = _dodge_shot_starts(k, 1, 1)
    rows = torch.arange(k)
    toward_goal = {}
    for dodge in (True, False):
        with RocketSimEngine(k, 1, 1, stepping="serial", num_workers=1) as engine:
            start = engine.reset(torch.ones(k, dtype=torch.bool), reset)
            # the state read before any tick already shows the shooter airborne with its flip, the other car
            # (upright on the floor) on the ground, as the warp engine reads them
            other = 1 - car
            assert not bool(start.car_on_ground[rows, car].any()) and bool(start.car_has_flip[rows, car].all())
            assert bool(start.car_on_ground[rows, other].all()) and bool(start.car_has_jump[rows, other].all())
            for step in range(12):
                controls = torch.zeros(k, 2, 8)
                controls[rows, car, 0] = 1.0  # throttle
                if dodge and step == 0:
                    controls[rows, car, 2] = -1.0  # stick forward
                    controls[rows, car, 5] = 1.0  # jump
                state = engine.step(controls)
                if step == 0:
                    assert not bool(state.car_on_ground[rows, car].any())  # still in the air after 8 ticks
        toward_goal[dodge] = state.ball_vel[:, 1] * torch.where(car == 0, 1.0, -1.0)
    assert float(toward_goal[True].median()) > float(toward_goal[False].median()) + 300.0
    assert float((toward_goal[True] > 0).float().mean()) > 0.85


class TestWeightedSetter:
    def test_zero_weight_for_random_gives_only_kickoffs(self):
        setter = WeightedSetter([KickoffSetter(2, 2), RandomStateSetter(2, 2)], [1.0, 0.0])
        reset = setter(64, torch.Generator().manual_seed(0))
        assert torch.equal(reset.ball_pos, torch.tensor([[0.0, 0.0, BALL_REST_Z]]).expand(64, 3))
        assert (spawn_index(reset.car_pos[:, :2, :2]) >= 0).all()
        assert (spawn_index(reset.car_pos[:, 2:, :2], mirrored=True) >= 0).all()
        assert isinstance(make_setter({"kickoff": 1.0, "random": 0.0}, 2, 2), KickoffSetter)

    def test_mixture_gives_both_kinds_in_their_rows(self):
        setter = WeightedSetter([KickoffSetter(1, 1), RandomStateSetter(1, 1)], [1.0, 1.0])
        reset = setter(64, torch.Generator().manual_seed(0))
        reset.validate(2)
        kickoff = (reset.ball_pos == torch.tensor([0.0, 0.0, BALL_REST_Z])).all(-1)
        assert 10 < int(kickoff.sum()) < 54
        assert (spawn_index(reset.car_pos[kickoff, :1, :2]) >= 0).all()
        assert (reset.car_boost[kickoff] == KICKOFF_BOOST).all()
        assert (reset.ball_vel[~kickoff].norm(dim=-1) > 0).all()

    @pytest.mark.parametrize("weights", [[], [1.0], [-1.0, 2.0], [0.0, 0.0]])
    def test_bad_weights_raise(self, weights):
        setters = [KickoffSetter(1, 1), RandomStateSetter(1, 1)][: max(len(weights), 2)] if weights else []
        with pytest.raises(ValueError):
            WeightedSetter(setters, weights)

    @pytest.mark.parametrize("bad", [float("nan"), float("inf")])
    def test_non_finite_weights_raise(self, bad):
        with pytest.raises(ValueError):
            WeightedSetter([KickoffSetter(1, 1), RandomStateSetter(1, 1)], [bad, 1.0])

    def test_make_setter_unknown_name_is_named(self):
        with pytest.raises(ValueError, match="'kickof'"):
            make_setter({"kickof": 1.0}, 1, 1)
        with pytest.raises(ValueError, match="positive weight"):
            make_setter({"kickoff": 0.0}, 1, 1)

    def test_make_setter_rejects_negative_weight(self):
        with pytest.raises(ValueError):
            make_setter({"kickoff": 1.0, "random": -0.5}, 1, 1)


# ===================================================================================== 2. observations
def hand_built_1v1() -> tuple[BatchState, torch.Tensor]:
    state = make_state(1, 1, 1)
    state.ball_pos[0] = torch.tensor([230.0, -460.0, 1150.0])
    state.ball_vel[0] = torch.tensor([2300.0, 0.0, -1150.0])
    state.ball_ang_vel[0] = torch.tensor([6.0, 0.0, -3.0])
    state.car_pos[0] = torch.tensor([[1000.0, -2000.0, 17.0], [-500.0, 3000.0, 300.0]])
    state.car_vel[0] = torch.tensor([[500.0, 0.0, 0.0], [0.0, -1150.0, 230.0]])
    state.car_ang_vel[0] = torch.tensor([[0.0, 0.0, 1.1], [0.55, 0.0, 0.0]])
    state.car_forward[0] = torch.tensor([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    state.car_boost[0] = torch.tensor([40.0, 80.0])
    state.car_on_ground[0] = torch.tensor([True, False])
    state.car_has_jump[0] = torch.tensor([True, False])
    state.car_has_flip[0] = torch.tensor([False, True])
    state.pad_active[0, [0, 5]] = False
    controls = torch.tensor([[[1.0, -0.5, 0.0, -0.5, 0.0, 1.0, 1.0, 0.0], [0.5, 1.0, -1.0, 1.0, 0.25, 0.0, 0.0, 1.0]]])
    return state, controls


def test_obs_shape():
    for blue, orange in ((1, 1), (2, 2), (3, 3), (1, 0), (1, 3)):
        builder = DefaultObs(blue, orange)
        obs = builder.build(make_state(5, blue, orange), torch.zeros(5, blue + orange, 8))
        assert obs.shape == (5, blue + orange, 180) == (5, blue + orange, OBS_SIZE) == (5, blue + orange, builder.size)


def test_obs_layout_1v1_blue_agent():
    state, controls = hand_built_1v1()
    o = DefaultObs(1, 1).build(state, controls)[0, 0]
    s = 1 / 2300

    def close(lo: int, hi: int, values: list[float]) -> None:
        torch.testing.assert_close(o[lo:hi], torch.tensor(values), atol=1e-6, rtol=0, msg=f"obs[{lo}:{hi}]")

    close(0, 3, [0.1, -0.2, 0.5])  # ball position / 2300
    close(3, 6, [1.0, 0.0, -0.5])  # ball velocity / 2300
    close(6, 9, [1.0, 0.0, -0.5])  # ball angular velocity / 6
    close(9, 17, controls[0, 0].tolist())  # previous controls
    pads = torch.ones(34)
    pads[[0, 5]] = 0
    close(17, 51, pads.tolist())
    close(51, 54, [1000 * s, -2000 * s, 17 * s])  # position
    close(54, 57, [500 * s, 0.0, 0.0])  # velocity
    close(57, 60, [0.0, 0.0, 0.2])  # angular velocity / 5.5
    close(60, 63, [1.0, 0.0, 0.0])  # forward
    close(63, 66, [0.0, 0.0, 1.0])  # up
    close(66, 67, [0.4])  # boost / 100
    close(67, 71, [1.0, 1.0, 0.0, 0.0])  # on ground, has jump, has flip, demolished
    close(71, 74, [-770 * s, 1540 * s, 1133 * s])  # ball - car
    close(74, 77, [1800 * s, 0.0, -1150 * s])  # ball vel - car vel
    close(77, 80, [-1000 * s, (BACK_WALL_Y + 2000) * s, (GOAL_Z - 17) * s])  # orange goal - car
    close(80, 120, [0.0] * 40)  # two empty teammate slots
    opp = 80 + 2 * 20
    close(opp, opp + 3, [-1500 * s, 5000 * s, 283 * s])  # opponent - self position
    close(opp + 3, opp + 6, [-500 * s, -1150 * s, 230 * s])  # opponent - self velocity
    close(opp + 6, opp + 9, [0.0, -0.5, 0.1])  # opponent velocity
    close(opp + 9, opp + 12, [0.0, -1.0, 0.0])  # forward
    close(opp + 12, opp + 15, [0.0, 0.0, 1.0])  # up
    close(opp + 15, opp + 20, [0.8, 0.0, 1.0, 0.0, 1.0])  # boost, on ground, has flip, demolished, present
    assert opp + 19 == 139
    close(140, 180, [0.0] * 40)  # two empty opponent slots


def test_obs_named_places_read_the_hand_built_state():
    """The named places of env/obs.py (read by RulePolicy, the scripted bots and imitation) hold what the
    layout says: the hand-built 1v1 state read back through them."""
    from rocketrl.env import obs as layout

    state, controls = hand_built_1v1()
    o = DefaultObs(1, 1).build(state, controls)[0, 0]
    torch.testing.assert_close(o[layout.BALL_POS] * 2300, state.ball_pos[0])
    torch.testing.assert_close(o[layout.BALL_VEL] * 2300, state.ball_vel[0])
    assert o[layout.PREV_JUMP] == controls[0, 0, 5] == 1.0
    assert o[layout.PADS].tolist() == state.pad_active[0].float().tolist()
    torch.testing.assert_close(o[layout.CAR_POS] * 2300, state.car_pos[0, 0])
    torch.testing.assert_close(o[layout.CAR_VEL] * 2300, state.car_vel[0, 0])
    torch.testing.assert_close(o[layout.CAR_ANG_VEL] * 5.5, state.car_ang_vel[0, 0])
    torch.testing.assert_close(o[layout.CAR_FORWARD], state.car_forward[0, 0])
    torch.testing.assert_close(o[layout.CAR_UP], state.car_up[0, 0])
    assert o[layout.CAR_BOOST] * 100 == pytest.approx(40.0)
    flags = [layout.CAR_ON_GROUND, layout.CAR_HAS_JUMP, layout.CAR_HAS_FLIP, layout.CAR_DEMOLISHED]
    assert [o[i].item() for i in flags] == [1.0, 1.0, 0.0, 0.0]
    # In the car's own frame the ball is 770 uu behind it, 1,540 uu to its left and 1,133 uu above it.
    torch.testing.assert_close(o[layout.BALL_IN_CAR_FRAME] * 2300, torch.tensor([-770.0, 1540.0, 1133.0]))
    torch.testing.assert_close(o[layout.BALL_VEL_IN_CAR_FRAME] * 2300, torch.tensor([1800.0, 0.0, -1150.0]))
    others = o[layout.OTHERS].reshape(layout.NUM_OTHER_SLOTS, layout.OTHER_SIZE)
    opponent = others[layout.MAX_TEAMMATES]  # the first opponent slot
    torch.testing.assert_close(opponent[layout.OTHER_REL_POS] * 2300, state.car_pos[0, 1] - state.car_pos[0, 0])
    assert opponent[layout.OTHER_PRESENT] == 1.0 and opponent[layout.OTHER_DEMOLISHED] == 0.0
    assert others[0, layout.OTHER_PRESENT] == 0.0  # no teammate in 1v1


def test_obs_field_names_agree_with_the_named_places():
    """field_name (how reports name an observation float) says what the named places and the layout hold."""
    from rocketrl.env import obs as layout

    assert [layout.field_name(i) for i in range(3)] == ["ball.pos.x", "ball.pos.y", "ball.pos.z"]
    assert layout.field_name(layout.PREV_JUMP) == "prev.jump"
    assert layout.field_name(layout.PADS.start) == "pad[0]" and layout.field_name(layout.PADS.stop - 1) == "pad[33]"
    assert layout.field_name(layout.CAR_VEL.start) == "car.vel.x" and layout.field_name(layout.CAR_BOOST) == "car.boost"
    names = [layout.CAR_ON_GROUND, layout.CAR_HAS_JUMP, layout.CAR_HAS_FLIP, layout.CAR_DEMOLISHED]
    assert [layout.field_name(i) for i in names] == ["car.on_ground", "car.has_jump", "car.has_flip", "car.demolished"]
    assert layout.field_name(layout.BALL_IN_CAR_FRAME.start) == "car.ball_rel_pos.fwd"
    assert layout.field_name(layout.BALL_VEL_IN_CAR_FRAME.stop - 1) == "car.ball_rel_vel.up"
    first_opponent = layout.OTHERS.start + layout.MAX_TEAMMATES * layout.OTHER_SIZE
    assert layout.field_name(first_opponent) == "other[2].rel_pos.x"
    assert layout.field_name(first_opponent + layout.OTHER_DEMOLISHED) == "other[2].demolished"
    assert layout.field_name(OBS_SIZE - 1) == "other[4].present"
    assert len({layout.field_name(i) for i in range(OBS_SIZE)}) == OBS_SIZE
    with pytest.raises(IndexError, match="observation index 180"):
        layout.field_name(OBS_SIZE)


def test_obs_layout_1v1_orange_agent_is_mirrored():
    state, controls = hand_built_1v1()
    o = DefaultObs(1, 1).build(state, controls)[0, 1]
    s = 1 / 2300

    def close(lo: int, hi: int, values: list[float]) -> None:
        torch.testing.assert_close(o[lo:hi], torch.tensor(values), atol=1e-6, rtol=0, msg=f"obs[{lo}:{hi}]")

    close(0, 3, [-0.1, 0.2, 0.5])
    close(3, 6, [-1.0, 0.0, -0.5])
    close(6, 9, [-1.0, 0.0, -0.5])
    close(9, 17, controls[0, 1].tolist())  # controls are car-relative: not mirrored
    pads = torch.ones(34)
    pads[[33, 28]] = 0  # pad i <-> pad 33 - i
    close(17, 51, pads.tolist())
    close(51, 54, [500 * s, -3000 * s, 300 * s])
    close(54, 57, [0.0, 1150 * s, 230 * s])
    close(57, 60, [-0.1, 0.0, 0.0])
    close(60, 63, [0.0, 1.0, 0.0])
    close(66, 71, [0.8, 0.0, 0.0, 1.0, 0.0])
    close(77, 80, [-500 * s, (BACK_WALL_Y + 3000) * s, (GOAL_Z - 300) * s])  # blue goal, seen from blue side
    close(80, 120, [0.0] * 40)
    close(120, 123, [-1500 * s, 5000 * s, -283 * s])
    close(139, 140, [1.0])
    close(140, 180, [0.0] * 40)


@pytest.mark.parametrize("team_size", [1, 2, 3])
def test_obs_mirror_symmetry(team_size):
    """obs(M(S))[blue i] == obs(S)[orange i] and obs(M(S))[orange i] == obs(S)[blue i]."""
    gen = torch.Generator().manual_seed(team_size)
    b, n = team_size, 2 * team_size
    state = random_state(16, b, b, gen)
    controls = (torch.rand(16, n, 8, generator=gen) * 2 - 1).round()
    mirrored = mirror_state(state, b)
    perm = list(range(b, n)) + list(range(b))
    builder = DefaultObs(b, b)
    obs = builder.build(state, controls)
    obs_m = builder.build(mirrored, controls[:, perm])
    assert not torch.allclose(obs[:, :b], obs[:, b:], atol=1e-3)  # the check below is not trivial
    torch.testing.assert_close(obs_m[:, :b], obs[:, b:], atol=1e-5, rtol=0)
    torch.testing.assert_close(obs_m[:, b:], obs[:, :b], atol=1e-5, rtol=0)


def test_obs_teammates_then_opponents_in_car_order():
    state = random_state(2, 3, 3, torch.Generator().manual_seed(5))
    obs = DefaultObs(3, 3).build(state, torch.zeros(2, 6, 8))
    s = 1 / 2300
    for agent, others in ((0, [1, 2, 3, 4, 5]), (1, [0, 2, 3, 4, 5]), (4, [3, 5, 0, 1, 2])):
        for slot, other in enumerate(others):
            rel = (state.car_pos[:, other] - state.car_pos[:, agent]) * s
            if agent >= 3:
                rel = rel * torch.tensor([-1.0, -1.0, 1.0])
            base = 80 + 20 * slot
            torch.testing.assert_close(obs[:, agent, base : base + 3], rel, atol=1e-5, rtol=0)
            assert (obs[:, agent, base + 19] == 1).all()


def test_obs_values_in_sane_range():
    gen = torch.Generator().manual_seed(0)
    builder = DefaultObs(3, 3)
    controls = torch.ones(64, 6, 8)
    for setter in (KickoffSetter(3, 3), RandomStateSetter(3, 3)):
        obs = builder.build(state_from_reset(setter(64, gen), 3, 3), controls)
        assert torch.isfinite(obs).all()
        assert obs.abs().max() < 10, type(setter).__name__


# ========================================================================================== 3. actions
class TestLookupTable:
    def test_shape_unique_values(self):
        table = lookup_table()
        assert table.shape == (90, 8)
        assert torch.unique(table, dim=0).shape[0] == 90, "duplicate rows"
        assert set(table.unique().tolist()) <= {-1.0, 0.0, 1.0}

    def test_known_rows(self):
        table = lookup_table()
        assert table[0].tolist() == [-1, -1, 0, -1, 0, 0, 0, 0]
        rows = {tuple(r) for r in table.tolist()}
        assert (1, 0, 0, 0, 0, 0, 1, 0) in rows  # full throttle + boost, straight
        assert (0, 0, 0, 0, 0, 0, 0, 0) in rows  # coast
        jump = table[:, 5] == 1
        assert (table[jump, 3] == 0).all(), "a jump row carries yaw"
        ground = (table[:, 2] == 0) & (table[:, 4] == 0) & (table[:, 5] == 0)
        assert int(ground.sum()) == 24
        assert torch.equal(ground, torch.arange(90) < 24), "the 24 ground rows come first"
        assert (table[table[:, 6] == 1, 0] == 1).all(), "boosting rows must have throttle 1"

    def test_indices_map_to_table_rows(self):
        parser = LookupTableAction()
        index = torch.tensor([[0, 89], [17, 42], [5, 5]])
        controls = parser.parse(index, 3, 2)
        assert controls.shape == (3, 2, 8)
        assert torch.equal(controls, lookup_table()[index])
        assert torch.equal(parser.parse(index.unsqueeze(-1), 3, 2), controls)  # (A, C, 1) accepted
        assert torch.equal(parser.parse(index.float(), 3, 2), controls)  # whole floats accepted
        assert torch.equal(parser.parse(index.to(torch.int32), 3, 2), controls)


def test_continuous_action_clips_and_thresholds():
    raw = torch.tensor([[[2.0, -3.0, 0.5, -0.25, 1.0, 0.1, -0.1, 0.0], [-1.5, 0.0, 0.0, 7.0, -7.0, -2.0, 3.0, 1e-3]]])
    controls = ContinuousAction().parse(raw, 1, 2)
    expected = torch.tensor([[[1.0, -1.0, 0.5, -0.25, 1.0, 1.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 1.0, -1.0, 0.0, 1.0, 1.0]]])
    assert controls.dtype == torch.float32
    assert torch.equal(controls, expected)
    assert torch.equal(ContinuousAction().parse(raw.double(), 1, 2), expected)


@pytest.mark.parametrize(
    "actions, match",
    [
        (torch.zeros(2, 3, dtype=torch.long), "shape"),
        (torch.zeros(3, 2, 2, dtype=torch.long), "shape"),
        (torch.zeros(6, dtype=torch.long), "shape"),
        (torch.tensor([[0.0, float("nan")], [1.0, 2.0], [3.0, 4.0]]), "NaN"),
        (torch.tensor([[0.0, float("inf")], [1.0, 2.0], [3.0, 4.0]]), "NaN"),
        (torch.tensor([[0, 90], [1, 2], [3, 4]]), r"90.*0\.\.89"),
        (torch.tensor([[0, -1], [1, 2], [3, 4]]), r"-1.*0\.\.89"),
        (torch.tensor([[0.5, 1.0], [1.0, 2.0], [3.0, 4.0]]), "whole"),
        (torch.zeros(3, 2, dtype=torch.bool), "bool"),
    ],
)
def test_discrete_bad_input_raises_invalid_action_error(actions, match):
    with pytest.raises(InvalidActionError, match=match) as info:
        LookupTableAction().parse(actions, 3, 2)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "actions, match",
    [
        (torch.zeros(3, 2), "shape"),
        (torch.zeros(3, 2, 7), "shape"),
        (torch.full((3, 2, 8), float("nan")), "NaN"),
        (torch.full((3, 2, 8), float("-inf")), "NaN"),
        (torch.zeros(3, 2, 8, dtype=torch.long), "dtype"),
        (torch.zeros(3, 2, 8, dtype=torch.bool), "dtype"),
    ],
)
def test_continuous_bad_input_raises_invalid_action_error(actions, match):
    with pytest.raises(InvalidActionError, match=match):
        ContinuousAction().parse(actions, 3, 2)


def test_make_action_parser_kinds():
    assert isinstance(make_action_parser("discrete"), LookupTableAction)
    assert isinstance(make_action_parser("continuous"), ContinuousAction)
    with pytest.raises(ValueError, match="'bogus'"):
        make_action_parser("bogus")


@pytest.mark.parametrize("kind", ["discrete", "continuous"])
def test_batched_env_bad_actions_never_reach_the_engine(kind):
    with BatchedEnv(num_arenas=2, stepping="serial", num_workers=1, action=kind) as env:
        env.reset()
        good = torch.full((2, 2), 20) if kind == "discrete" else torch.ones(2, 2, 8)
        for _ in range(3):
            env.step(good)
        before = env.state.clone()
        steps, controls = env.done.steps.clone(), env.prev_controls.clone()
        if kind == "discrete":
            bad = [torch.full((2, 2), 90), torch.full((2, 2), -1), torch.zeros(2, 3, dtype=torch.long)]
            bad += [torch.full((2, 2), float("nan")), torch.full((2, 2), 0.5), torch.zeros(2, 2, dtype=torch.bool)]
        else:
            bad = [torch.zeros(2, 2, 7), torch.full((2, 2, 8), float("nan")), torch.zeros(2, 2, 8, dtype=torch.long)]
        for actions in bad:
            with pytest.raises(InvalidActionError):
                env.step(actions)
            assert_states_equal(env.state, before)
            assert torch.equal(env.done.steps, steps) and torch.equal(env.prev_controls, controls)
        env.step(good)  # still usable
        assert (env.done.steps == steps + 1).all()


# ========================================================================================== 4. rewards
def test_goal_reward():
    state = make_state(3, 2, 2, goal_scored=torch.tensor([-1, 0, 1]))
    r = goal(state, state)
    assert torch.equal(r, torch.tensor([[0.0, 0, 0, 0], [1, 1, -1, -1], [-1, -1, 1, 1]]))


def test_touch_reward():
    state = make_state(2, 1, 1, car_touched_ball=torch.tensor([[True, False], [True, True]]))
    assert torch.equal(touch(state, state), torch.tensor([[1.0, 0.0], [1.0, 1.0]]))


def test_touch_strength_reward_scales_with_the_ball_velocity_change():
    prev = make_state(3, 1, 1)
    state = make_state(3, 1, 1, car_touched_ball=torch.tensor([[True, False], [False, True], [False, False]]))
    prev.ball_vel[:] = torch.tensor([0.0, 1000.0, 0.0])
    state.ball_vel[0] = torch.tensor([0.0, 4000.0, 0.0])  # a shot: +3000 uu/s
    state.ball_vel[1] = torch.tensor([0.0, 1000.0, 120.0])  # a push: 120 uu/s
    state.ball_vel[2] = torch.tensor([0.0, -9000.0, 0.0])  # no touch: nothing, however large the change
    r = touch_strength(prev, state)
    torch.testing.assert_close(r, torch.tensor([[0.5, 0.0], [0.0, 0.02], [0.0, 0.0]]), atol=1e-6, rtol=0)
    state.car_touched_ball[2, 0] = True
    assert touch_strength(prev, state)[2, 0].item() == 1.0  # capped


def test_double_commit_penalises_the_farther_of_two_teammates_closing_on_the_ball():
    from rocketrl.env.rewards import double_commit

    # 2v2, ball at rest at the origin. Blue 0 at 300 uu and blue 1 at 600 uu, both driving at it at 1000 uu/s:
    # blue 1 is the second car of a double commit. Orange 2 commits alone; orange 3 sits 2000 uu away.
    state = make_state(3, 2, 2)
    state.ball_pos[:] = torch.tensor([0.0, 0.0, 93.0])
    state.car_pos[:] = torch.tensor([[0.0, -300.0, 93.0], [0.0, -600.0, 93.0], [0.0, 500.0, 93.0], [0.0, 2000.0, 93.0]])
    state.car_vel[:] = torch.tensor([[0.0, 1000.0, 0.0], [0.0, 1000.0, 0.0], [0.0, -1000.0, 0.0], [0.0, -1000.0, 0.0]])
    state.car_vel[1, 1] = torch.tensor([0.0, 200.0, 0.0])  # arena 1: blue 1 closes at 200 uu/s, under 300: no commit
    state.car_demolished[2, 0] = True  # arena 2: the nearer blue car is demolished, so blue 1 commits alone
    r = double_commit(state, state)
    assert torch.equal(r, torch.tensor([[0.0, -1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]))
    one = make_state(1, 1, 1)
    one.ball_pos[:] = torch.tensor([0.0, 0.0, 93.0])
    one.car_pos[:] = torch.tensor([[0.0, -300.0, 93.0], [0.0, 300.0, 93.0]])
    one.car_vel[:] = torch.tensor([[0.0, 1000.0, 0.0], [0.0, -1000.0, 0.0]])
    assert torch.equal(double_commit(one, one), torch.zeros(1, 2))  # opponents never double commit


def test_first_man_to_ball_pays_only_the_car_of_each_team_nearest_the_ball():
    from rocketrl.env.rewards import first_man_to_ball

    # 2v2, ball at the origin. Blue 0 at 300 uu and blue 1 at 600 uu, both driving at it at 1150 uu/s (half speed):
    # only blue 0 is paid. Orange 2 (2000 uu) and orange 3 (500 uu, driving away at full speed): orange 3 is first.
    state = make_state(3, 2, 2)
    state.ball_pos[:] = torch.tensor([0.0, 0.0, 17.0])
    state.car_pos[:] = torch.tensor([[0.0, -300.0, 17.0], [0.0, -600.0, 17.0], [0.0, 2000.0, 17.0], [0.0, 500.0, 17.0]])
    state.car_vel[:] = torch.tensor([[0.0, 1150.0, 0.0], [0.0, 1150.0, 0.0], [0.0, -1150.0, 0.0], [0.0, 2300.0, 0.0]])
    state.car_demolished[1, 0] = True  # arena 1: blue 0 is demolished, so blue 1 is its team's first man
    state.car_pos[2, 1] = torch.tensor([300.0, 0.0, 17.0])  # arena 2: blue 1 as near as blue 0: the lower index
    r = first_man_to_ball(state, state)
    assert torch.allclose(r[0], torch.tensor([0.5, 0.0, 0.0, -1.0]))
    assert torch.allclose(r[1], torch.tensor([0.0, 0.5, 0.0, -1.0]))
    assert torch.allclose(r[2], torch.tensor([0.5, 0.0, 0.0, -1.0]))
    one = make_state(1, 1, 1)
    one.car_pos[:] = torch.tensor([[0.0, -300.0, 17.0], [0.0, 300.0, 17.0]])
    one.car_vel[:] = torch.tensor([[0.0, 1150.0, 0.0], [0.0, -2300.0, 0.0]])
    assert torch.equal(first_man_to_ball(one, one), velocity_player_to_ball(one, one))  # 1v1: every car is first


def test_nobody_back_penalises_a_team_with_no_car_goal_side_of_the_ball():
    from rocketrl.env.rewards import nobody_back

    # 2v2, ball at y = 1000. Blue defends -y: blue 0 at y = 2000 and blue 1 at y = 500, so blue 1 is goal-side.
    # Orange defends +y: orange 2 at y = 0 and orange 3 at y = 800 are both beyond the ball: nobody back.
    state = make_state(3, 2, 2)
    state.ball_pos[:] = torch.tensor([0.0, 1000.0, 93.0])
    state.car_pos[:] = torch.tensor([[0.0, 2000.0, 17.0], [0.0, 500.0, 17.0], [0.0, 0.0, 17.0], [0.0, 800.0, 17.0]])
    state.car_demolished[1, 1] = True  # arena 1: blue's only goal-side car is demolished: nobody back for blue
    state.car_pos[2, 3] = torch.tensor([0.0, 1500.0, 17.0])  # arena 2: orange 3 is goal-side (+y of the ball)
    r = nobody_back(state, state)
    assert torch.equal(r, torch.tensor([[0.0, 0.0, -1.0, -1.0], [-1.0, -1.0, -1.0, -1.0], [0.0, 0.0, 0.0, 0.0]]))


def test_velocity_player_to_ball_reward():
    state = make_state(1, 1, 1)
    state.car_pos[0, 0] = torch.tensor([0.0, 0.0, 17.0])
    state.car_vel[0, 0] = torch.tensor([1150.0, 0.0, 0.0])
    state.ball_pos[0] = torch.tensor([1000.0, 0.0, 93.15])
    # car 1 drives straight away from the ball at full speed
    state.car_pos[0, 1] = torch.tensor([1000.0, 2000.0, 93.15])
    state.car_vel[0, 1] = torch.tensor([0.0, 2300.0, 0.0])
    r = velocity_player_to_ball(state, state)
    dz = 93.15 - 17.0
    expected = 0.5 * 1000.0 / math.sqrt(1000.0**2 + dz**2)
    assert r[0, 0].item() == pytest.approx(expected, abs=1e-6)
    assert r[0, 1].item() == pytest.approx(-1.0, abs=1e-6)


def test_velocity_ball_to_goal_reward_signs_opposite_for_the_teams():
    state = make_state(1, 1, 1)
    state.ball_vel[0] = torch.tensor([0.0, 3000.0, 0.0])
    r = velocity_ball_to_goal(state, state)
    dy, dz = BACK_WALL_Y, GOAL_Z - BALL_REST_Z
    expected = 3000.0 * dy / math.hypot(dy, dz) / 6000.0
    assert r[0, 0].item() == pytest.approx(expected, abs=1e-6)
    assert r[0, 1].item() == pytest.approx(-expected, abs=1e-6)


def test_align_ball_goal_reward_is_one_goal_side_and_minus_one_beaten():
    state = make_state(1, 1, 1)
    state.ball_pos[0] = torch.tensor([0.0, 0.0, GOAL_Z])
    state.car_pos[0] = torch.tensor([[0.0, -3000.0, GOAL_Z], [0.0, -3000.0, GOAL_Z]])
    r = align_ball_goal(state, state)
    # Both cars on the goal-to-goal line at y = -3000: blue is between its goal and the ball (1), orange
    # has the ball between itself and its own goal (-1).
    torch.testing.assert_close(r, torch.tensor([[1.0, -1.0]]), atol=1e-6, rtol=0)
    # Off the line: blue at (1000, -3000), ball at the centre; each cosine by hand.
    state.car_pos[0, 0] = torch.tensor([1000.0, -3000.0, GOAL_Z])
    to_ball = torch.tensor([-1000.0, 3000.0]) / math.hypot(1000.0, 3000.0)
    from_own_goal = torch.tensor([1000.0, BACK_WALL_Y - 3000.0]) / math.hypot(1000.0, BACK_WALL_Y - 3000.0)
    to_attacked = torch.tensor([-1000.0, BACK_WALL_Y + 3000.0]) / math.hypot(1000.0, BACK_WALL_Y + 3000.0)
    expected = 0.5 * (float(to_ball @ from_own_goal) + float(to_ball @ to_attacked))
    assert align_ball_goal(state, state)[0, 0].item() == pytest.approx(expected, abs=1e-6)


def test_align_ball_goal_reward_is_mirror_symmetric():
    gen = torch.Generator().manual_seed(11)
    state = random_state(8, 2, 2, gen)
    mirrored = mirror_state(state, 2)
    r, r_m = align_ball_goal(state, state), align_ball_goal(mirrored, mirrored)
    torch.testing.assert_close(r_m, torch.cat([r[:, 2:], r[:, :2]], dim=1), atol=1e-5, rtol=0)


def test_face_ball_reward():
    state = make_state(1, 1, 2)
    state.ball_pos[0] = torch.tensor([-1000.0, 0.0, 17.0])
    state.car_pos[0] = torch.tensor([[0.0, 0.0, 17.0], [-2000.0, 0.0, 17.0], [-1000.0, -500.0, 17.0]])
    state.car_forward[0] = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    r = face_ball(state, state)
    torch.testing.assert_close(r, torch.tensor([[-1.0, 1.0, 0.0]]), atol=1e-6, rtol=0)


def test_in_air_reward_pays_cars_off_the_ground_only():
    state = make_state(
        1,
        2,
        2,
        car_on_ground=torch.tensor([[True, False, False, True]]),
        car_demolished=torch.tensor([[False, False, True, False]]),
    )
    torch.testing.assert_close(in_air(state, state), torch.tensor([[0.0, 1.0, 0.0, 0.0]]))


def test_boost_rewards():
    prev = make_state(1, 2, 2, car_boost=torch.tensor([[20.0, 50.0, 0.0, 10.0]]))
    # Car 0 takes a small pad (+12), car 1 spends 10, car 2 respawns with 33 after a demolition (no pad), car 3 takes a
    # pad that tops it up from 10 to 100: only pads pay, by the boost gained.
    state = make_state(
        1,
        2,
        2,
        car_boost=torch.tensor([[32.0, 40.0, 33.0, 100.0]]),
        car_boost_pickups=torch.tensor([[1, 0, 0, 1]]),
    )
    torch.testing.assert_close(boost_pickup(prev, state), torch.tensor([[0.12, 0.0, 0.0, 0.9]]))
    held = make_state(1, 2, 2, car_boost=torch.tensor([[0.0, 25.0, 64.0, 100.0]]))
    torch.testing.assert_close(boost_held(held, held), torch.tensor([[0.0, 0.5, 0.8, 1.0]]))


def test_demolition_reward():
    state = make_state(
        1,
        2,
        2,
        car_demolitions=torch.tensor([[1, 0, 2, 0]]),
        car_was_demolished=torch.tensor([[False, True, False, False]]),
    )
    assert torch.equal(demolition(state, state), torch.tensor([[1.0, -1.0, 2.0, 0.0]]))


def test_aerial_touch_height_reward():
    state = make_state(1, 2, 1)
    state.ball_pos[0] = torch.tensor([0.0, 0.0, 1022.0])
    state.car_touched_ball[0] = torch.tensor([True, True, False])
    state.car_on_ground[0] = torch.tensor([False, True, False])
    r = aerial_touch_height(state, state)
    torch.testing.assert_close(r, torch.tensor([[0.5, 0.0, 0.0]]))


def test_shot_reward():
    prev = make_state(3, 1, 1)
    state = make_state(3, 1, 1)
    # arena 0: blue touch puts the ball on target at the orange goal
    state.ball_vel[0] = torch.tensor([0.0, 2000.0, 0.0])
    state.car_touched_ball[0] = torch.tensor([True, False])
    # arena 1: ball was already on target before the touch
    prev.ball_vel[1] = torch.tensor([0.0, 1500.0, 0.0])
    state.ball_vel[1] = torch.tensor([0.0, 2000.0, 0.0])
    state.car_touched_ball[1] = torch.tensor([True, True])
    # arena 2: touched towards the orange goal but wide of the post
    state.ball_vel[2] = torch.tensor([1000.0, 2000.0, 0.0])
    state.car_touched_ball[2] = torch.tensor([True, False])
    assert torch.equal(shot(prev, state), torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]))
    # the mirrored shot by orange
    prev_o, state_o = make_state(1, 1, 1), make_state(1, 1, 1)
    state_o.ball_vel[0] = torch.tensor([0.0, -2000.0, 0.0])
    state_o.car_touched_ball[0] = torch.tensor([True, True])
    assert torch.equal(shot(prev_o, state_o), torch.tensor([[0.0, 1.0]]))


def test_save_reward():
    prev = make_state(3, 1, 1)
    state = make_state(3, 1, 1)
    for s in (prev, state):
        s.ball_pos[:] = torch.tensor([0.0, -3000.0, BALL_REST_Z])
    prev.ball_vel[:] = torch.tensor([0.0, -2000.0, 0.0])  # heading into the blue goal
    state.ball_vel[:] = torch.tensor([0.0, 1500.0, 0.0])  # cleared
    state.car_touched_ball[0] = torch.tensor([True, False])  # blue keeper saves
    state.car_touched_ball[1] = torch.tensor([False, True])  # orange touch: not its own goal
    state.car_touched_ball[2] = torch.tensor([True, False])
    state.ball_vel[2] = torch.tensor([0.0, -1000.0, 0.0])  # still going in
    assert torch.equal(save(prev, state), torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]))


def test_touch_ball_to_goal_pays_the_velocity_change_toward_the_attacked_goal_signed():
    prev = make_state(4, 1, 1)
    state = make_state(4, 1, 1)
    for s in (prev, state):
        s.ball_pos[:] = torch.tensor([0.0, 0.0, GOAL_Z])  # level with both goal centres: their directions are +-y
    prev.ball_vel[:] = torch.tensor([0.0, 1000.0, 0.0])
    state.ball_vel[0] = torch.tensor([0.0, 4000.0, 0.0])  # blue shoots: +3000 uu/s toward the orange goal
    state.car_touched_ball[0] = torch.tensor([True, False])
    state.ball_vel[1] = torch.tensor([0.0, -2000.0, 0.0])  # blue sends it 3000 uu/s toward its own goal
    state.car_touched_ball[1] = torch.tensor([True, False])
    state.ball_vel[2] = torch.tensor([0.0, -2000.0, 0.0])  # the same change made by orange: toward the blue goal
    state.car_touched_ball[2] = torch.tensor([False, True])
    state.ball_vel[3] = torch.tensor([1200.0, 1000.0, 0.0])  # a sideways push: nothing toward either goal
    state.car_touched_ball[3] = torch.tensor([True, False])
    r = touch_ball_to_goal(prev, state)
    expected = torch.tensor([[0.5, 0.0], [-0.5, 0.0], [0.0, 0.5], [0.0, 0.0]])
    torch.testing.assert_close(r, expected, atol=1e-6, rtol=0)
    state.ball_vel[0] = torch.tensor([0.0, -9000.0, 0.0])  # -10000 uu/s: clipped
    assert touch_ball_to_goal(prev, state)[0, 0].item() == -1.0
    state.car_touched_ball[:] = False  # no touch, no reward, whatever the ball does
    assert torch.equal(touch_ball_to_goal(prev, state), torch.zeros(4, 2))


def test_dodge_touch_pays_only_airborne_touches_made_with_the_dodge_spent():
    prev = make_state(4, 1, 1)
    state = make_state(4, 1, 1)
    for s in (prev, state):
        s.ball_pos[:] = torch.tensor([0.0, 0.0, GOAL_Z])  # level with both goal centres: their directions are +-y
    state.ball_vel[:] = torch.tensor([0.0, 3000.0, 0.0])  # every touch sends the ball 3000 uu/s toward orange
    state.car_touched_ball[:, 0] = True  # blue touches in every arena
    state.car_on_ground[:] = torch.tensor([[False, True], [False, True], [True, True], [False, True]])
    state.car_has_flip[:] = torch.tensor([[False, False], [True, False], [False, False], [False, False]])
    # arena 0: a dodge into the ball; 1: in the air with the dodge in hand; 2: on the ground;
    # 3: a dodge that sends the ball toward the own goal (nothing, never negative)
    state.ball_vel[3] = torch.tensor([0.0, -3000.0, 0.0])
    r = dodge_touch(prev, state)
    torch.testing.assert_close(r, torch.tensor([[0.5, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]), atol=1e-6, rtol=0)
    state.car_touched_ball[:] = False
    assert torch.equal(dodge_touch(prev, state), torch.zeros(4, 2))


def test_conceding_touch_marks_a_touch_that_puts_the_ball_on_target_at_the_own_goal():
    prev = make_state(3, 1, 1)
    state = make_state(3, 1, 1)
    for s in (prev, state):
        s.ball_pos[:] = torch.tensor([0.0, -3000.0, BALL_REST_Z])
    state.ball_vel[:] = torch.tensor([0.0, -2000.0, 0.0])  # now heading into the blue goal
    state.car_touched_ball[0] = torch.tensor([True, False])  # blue's touch did it
    state.car_touched_ball[1] = torch.tensor([False, True])  # orange's touch: a shot, not a conceding touch
    prev.ball_vel[2] = torch.tensor([0.0, -1500.0, 0.0])  # already on target: blue's touch failed to save it
    state.car_touched_ball[2] = torch.tensor([True, False])
    assert torch.equal(conceding_touch(prev, state), torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]))
    assert torch.equal(shot(prev, state)[1], torch.tensor([0.0, 1.0]))
    # the mirror: orange touches the ball into its own goal
    prev_o, state_o = make_state(1, 1, 1), make_state(1, 1, 1)
    state_o.ball_vel[0] = torch.tensor([0.0, 2000.0, 0.0])
    state_o.car_touched_ball[0] = torch.tensor([False, True])
    assert torch.equal(conceding_touch(prev_o, state_o), torch.tensor([[0.0, 1.0]]))


def test_shot_and_save_are_pure_functions_of_the_tensors():
    prev, state = make_state(1, 1, 1), make_state(1, 1, 1)
    state.ball_vel[0] = torch.tensor([0.0, 2000.0, 0.0])
    state.car_touched_ball[0] = torch.tensor([True, False])
    assert torch.equal(shot(prev, state), torch.tensor([[1.0, 0.0]]))
    state.ball_vel[0] = torch.tensor([0.0, 0.0, 0.0])  # same object, new values: no longer on target
    assert torch.equal(shot(prev, state), torch.tensor([[0.0, 0.0]]))


def reward_pair_2v2() -> tuple[BatchState, BatchState]:
    prev = make_state(2, 2, 2, car_boost=torch.tensor([[0.0, 10.0, 20.0, 90.0], [50.0, 50.0, 50.0, 50.0]]))
    state = make_state(
        2,
        2,
        2,
        car_boost=torch.tensor([[0.0, 25.0, 64.0, 100.0], [36.0, 49.0, 81.0, 16.0]]),
        car_touched_ball=torch.tensor([[True, False, False, True], [False, True, False, False]]),
    )
    return prev, state


def test_reward_function_weights_and_sum():
    prev, state = reward_pair_2v2()
    fn = RewardFunction(RewardConfig(weights={"touch": 2.0, "boost_held": 3.0, "goal": 0.0}), 2, 2)
    assert fn.names == ("touch", "boost_held")
    r = fn(prev, state)
    expected = 2.0 * touch(prev, state) + 3.0 * boost_held(prev, state)
    torch.testing.assert_close(r, expected)
    means = fn.term_means()
    assert set(means) == {"touch", "boost_held"}
    assert means["touch"] == pytest.approx(touch(prev, state).mean().item())
    assert means["boost_held"] == pytest.approx(boost_held(prev, state).mean().item())


def test_reward_weights_move_linearly_to_weights_end_over_training():
    prev, state = reward_pair_2v2()
    state.goal_scored[:] = torch.tensor([1, -1])
    config = RewardConfig(weights={"touch": 2.0, "boost_held": 3.0}, weights_end={"boost_held": 1.0, "goal": 4.0})
    fn = RewardFunction(config, 2, 2)
    assert fn.names == ("touch", "boost_held", "goal") and fn.scheduled
    by_term = {"touch": touch(prev, state), "boost_held": boost_held(prev, state), "goal": goal(prev, state)}
    for progress, weights in ((0.0, (2.0, 3.0, 0.0)), (0.5, (2.0, 2.0, 2.0)), (1.0, (2.0, 1.0, 4.0)), (1.7, (2, 1, 4))):
        fn.set_progress(progress)
        assert fn.weights == pytest.approx(weights)
        expected = sum(w * by_term[name] for name, w in zip(fn.names, weights))
        torch.testing.assert_close(fn(prev, state), expected)
    assert fn.scheduled_weights(0.25) == pytest.approx({"boost_held": 2.5, "goal": 1.0})  # touch does not change
    fixed = RewardFunction(RewardConfig(weights={"touch": 2.0}), 2, 2)
    fixed.set_progress(0.9)
    assert not fixed.scheduled and fixed.weights == [2.0] and fixed.scheduled_weights(0.9) == {}


def test_reward_function_sparse_keeps_only_goal():
    prev, state = reward_pair_2v2()
    state.goal_scored[:] = torch.tensor([1, -1])
    weights = {"goal": 10.0, "touch": 0.5, "boost_held": 1.0}
    fn = RewardFunction(RewardConfig(weights=weights, mode="sparse"), 2, 2)
    assert fn.names == ("goal",)
    torch.testing.assert_close(fn(prev, state), torch.tensor([[-10.0, -10.0, 10.0, 10.0], [0.0, 0.0, 0.0, 0.0]]))
    assert list(fn.term_means()) == ["goal"]


def test_reward_function_team_spirit_and_zero_sum():
    prev, state = reward_pair_2v2()
    raw = boost_held(prev, state)  # distinct per car
    s = 0.5

    def spirit(r: torch.Tensor) -> torch.Tensor:
        blue, orange = r[:, :2], r[:, 2:]
        return torch.cat(
            [(1 - s) * blue + s * blue.mean(1, keepdim=True), (1 - s) * orange + s * orange.mean(1, keepdim=True)], 1
        )

    def zero_sum(r: torch.Tensor) -> torch.Tensor:
        blue, orange = r[:, :2], r[:, 2:]
        return torch.cat([blue - orange.mean(1, keepdim=True), orange - blue.mean(1, keepdim=True)], 1)

    weights = {"boost_held": 1.0}
    cases = [
        (RewardConfig(weights=weights, team_spirit=s), spirit(raw)),
        (RewardConfig(weights=weights, zero_sum=True), zero_sum(raw)),
        (RewardConfig(weights=weights, team_spirit=s, zero_sum=True), zero_sum(spirit(raw))),
        (RewardConfig(weights=weights), raw),
    ]
    for config, expected in cases:
        torch.testing.assert_close(RewardFunction(config, 2, 2)(prev, state), expected, msg=str(config))
    # spot value: arena 0 blue car 1: 0.5 * 0.5 + 0.5 * mean(0, 0.5)
    assert RewardFunction(cases[0][0], 2, 2)(prev, state)[0, 1].item() == pytest.approx(0.375)
    # zero-sum: each team's total is minus the other's when the teams have the same size
    zs = RewardFunction(cases[1][0], 2, 2)(prev, state)
    torch.testing.assert_close(zs[:, :2].sum(1), -zs[:, 2:].sum(1))


def test_reward_function_with_every_term():
    prev, state = reward_pair_2v2()
    config = RewardConfig(weights={name: 1.0 for name in REWARD_TERMS})
    fn = RewardFunction(config, 2, 2)
    r = fn(prev, state)
    expected = sum(term(prev, state) for term in REWARD_TERMS.values())
    torch.testing.assert_close(r, expected)
    assert set(fn.term_means()) == set(REWARD_TERMS)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"weights": {"speed": 1.0}}, "speed"),
        ({"weights": {"touch": "a lot"}}, "touch.*number"),
        ({"weights": {"touch": True}}, "touch.*number"),
        ({"mode": "medium"}, "medium"),
        ({"team_spirit": 1.5}, "team_spirit"),
        ({"team_spirit": -0.1}, "team_spirit"),
        ({"weights_end": {"speed": 1.0}}, "weights_end.speed is not a reward term"),
        ({"weights_end": {"touch": "less"}}, "weights_end.touch must be a finite number"),
        ({"weights_end": {"touch": float("nan")}}, "weights_end.touch must be a finite number"),
        ({"weights_end": [0.1]}, "weights_end must be a mapping"),
    ],
)
def test_reward_config_rejects_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RewardConfig(**kwargs)


def test_reward_config_from_yaml_and_from_dict():
    config = RewardConfig.from_yaml(REPO / "configs" / "rewards.yaml")
    assert config.mode == "dense" and config.team_spirit == 0.0 and config.zero_sum is False
    assert config.weights["goal"] == 10.0 and config.weights["touch"] == 0.5
    assert set(config.weights) <= set(REWARD_TERMS)
    packaged = RewardConfig.from_yaml(default_rewards_path())
    assert packaged.weights == config.weights
    with pytest.raises(ValueError, match="spirit"):
        RewardConfig.from_dict({"spirit": 0.5})


# ==================================================================================== 5. done conditions
def test_goal_terminates_not_truncates():
    done = DoneConditions(3, STEP_SECONDS)
    state = make_state(3, 1, 1, goal_scored=torch.tensor([-1, 0, 1]))
    terminated, truncated = done.update(state)
    assert terminated.tolist() == [False, True, True]
    assert truncated.tolist() == [False, False, False]
    assert terminated.dtype == truncated.dtype == torch.bool


@pytest.mark.parametrize("tick_skip, episode_seconds", [(8, 1.0), (8, 2.0), (4, 1.0), (6, 0.5), (8, 10.0)])
def test_time_limit_truncates_exactly_at_the_step(tick_skip, episode_seconds):
    step_seconds = tick_skip * TICK_TIME
    limit = round(episode_seconds / (tick_skip / 120))
    done = DoneConditions(2, step_seconds, episode_seconds=episode_seconds, no_touch_seconds=0.0)
    state = make_state(2, 1, 1)
    for step in range(1, limit + 1):
        terminated, truncated = done.update(state)
        assert not terminated.any()
        assert bool(truncated.all()) == (step == limit), f"step {step} of {limit}"
        assert bool(truncated.any()) == (step == limit)


def test_no_touch_limit_and_touch_resets_it():
    done = DoneConditions(2, STEP_SECONDS, episode_seconds=0.0, no_touch_seconds=1.0)  # 15 steps
    idle = make_state(2, 1, 1)
    touched = make_state(2, 1, 1, car_touched_ball=torch.tensor([[False, False], [False, True]]))
    history = []
    for step in range(1, 26):
        _, truncated = done.update(touched if step == 10 else idle)
        history.append(truncated.tolist())
    assert all(h == [False, False] for h in history[:14])
    assert history[14] == [True, False]  # arena 0: 15 steps without a touch
    assert all(h[1] is False for h in history[:24])
    assert history[24][1] is True  # arena 1: touched at step 10, 15 steps later


def test_goal_on_the_time_limit_step_is_terminated_only():
    done = DoneConditions(2, STEP_SECONDS, episode_seconds=1.0, no_touch_seconds=1.0)
    for _ in range(14):
        done.update(make_state(2, 1, 1))
    terminated, truncated = done.update(make_state(2, 1, 1, goal_scored=torch.tensor([1, -1])))
    assert terminated.tolist() == [True, False]
    assert truncated.tolist() == [False, True]


def test_done_reset_restarts_only_masked_arenas():
    done = DoneConditions(3, STEP_SECONDS, episode_seconds=1.0, no_touch_seconds=0.0)
    for _ in range(5):
        done.update(make_state(3, 1, 1))
    done.reset(torch.tensor([True, False, True]))
    assert done.steps.tolist() == [0, 5, 0]
    assert done.steps_since_touch.tolist() == [0, 5, 0]
    for _ in range(10):
        _, truncated = done.update(make_state(3, 1, 1))
    assert truncated.tolist() == [False, True, False]


def test_tiny_positive_limits_still_truncate():
    done = DoneConditions(1, STEP_SECONDS, episode_seconds=0.02, no_touch_seconds=0.0)
    _, truncated = done.update(make_state(1, 1, 1))
    assert truncated.all()


def test_done_rejects_negative_limits():
    with pytest.raises(ValueError, match="episode_seconds"):
        DoneConditions(1, STEP_SECONDS, episode_seconds=-1.0)
    with pytest.raises(ValueError, match="no_touch_seconds"):
        DoneConditions(1, STEP_SECONDS, no_touch_seconds=-1.0)


# ================================================================================== 6. BatchedEnv end to end
def test_batched_env_shapes():
    with BatchedEnv(num_arenas=3, blue_size=2, orange_size=2, stepping="serial", num_workers=1) as env:
        obs = env.reset()
        assert obs.shape == (3, 4, 180) and env.obs_size == 180
        result = env.step(torch.randint(0, 90, (3, 4)))
        assert result.obs.shape == result.final_obs.shape == (3, 4, 180)
        assert result.reward.shape == (3, 4)
        assert result.terminated.shape == result.truncated.shape == (3,)
        assert result.terminated.dtype == result.truncated.dtype == torch.bool
        assert result.episodes == {}
        assert torch.equal(result.final_obs, result.obs)
        assert torch.isfinite(result.obs).all() and torch.isfinite(result.reward).all()


def test_batched_env_step_before_reset_raises():
    with BatchedEnv(num_arenas=1, stepping="serial", num_workers=1) as env:
        with pytest.raises(RuntimeError, match="reset"):
            env.step(torch.zeros(1, 2, dtype=torch.long))


def test_batched_env_truncates_together_and_auto_resets():
    a, n = 3, 2
    with BatchedEnv(
        num_arenas=a, stepping="serial", num_workers=1, episode_seconds=1.0, state_setter={"kickoff": 1.0}, seed=3
    ) as env:
        env.reset()
        gen = torch.Generator().manual_seed(0)
        returns = torch.zeros(a, n)
        table = lookup_table()
        for episode in range(2):
            returns.zero_()
            for step in range(1, 16):
                actions = torch.randint(0, 90, (a, n), generator=gen)
                result = env.step(actions)
                returns += result.reward
                assert not result.terminated.any()
                if step < 15:
                    assert not result.truncated.any(), f"episode {episode} truncated early at step {step}"
                    assert result.episodes == {}
                    continue
                assert result.truncated.all(), "every arena should truncate at step 15"
                ep = result.episodes
                assert ep["arena"].tolist() == list(range(a))
                assert ep["length"].tolist() == [15] * a
                assert ep["return"].shape == (a, n) and ep["touches"].shape == (a, n)
                torch.testing.assert_close(ep["return"], returns, atol=1e-5, rtol=1e-5)
                assert ep["goals_blue"].tolist() == [0] * a and ep["goals_orange"].tolist() == [0] * a
                # final_obs: the last observation of the episode, with this step's controls in it
                torch.testing.assert_close(result.final_obs[..., 9:17], table[actions])
                assert not torch.allclose(result.final_obs, result.obs)
                # obs: the fresh kickoff, with no previous controls
                state = env.state
                fresh = env.obs_builder.build(state, torch.zeros(a, n, 8))
                torch.testing.assert_close(result.obs, fresh)
                assert (result.obs[..., 9:17] == 0).all()
                # engine: kickoff start, counters cleared
                assert (state.ball_last_touch == -1).all() and (state.goal_scored == -1).all()
                assert not state.car_touched_ball.any()
                assert torch.allclose(state.ball_pos, torch.tensor([0.0, 0.0, BALL_REST_Z]).expand(a, 3))
                assert (state.ball_vel == 0).all() and (state.car_vel == 0).all()
                assert torch.allclose(state.car_pos[..., 2], torch.full((a, n), CAR_SPAWN_REST_Z), atol=1e-3)
                assert state.car_on_ground.all() and state.pad_active.all()
                assert torch.allclose(state.car_boost, torch.full((a, n), KICKOFF_BOOST))
                assert (spawn_index(state.car_pos[:, :1, :2]) >= 0).all()
                assert (spawn_index(state.car_pos[:, 1:, :2], mirrored=True) >= 0).all()
                assert env.done.steps.tolist() == [0] * a
                assert (env.episode_return == 0).all()


def test_batched_env_random_setter_auto_reset_state_is_a_start_state():
    with BatchedEnv(
        num_arenas=2,
        stepping="serial",
        num_workers=1,
        episode_seconds=0.2,
        state_setter={"kickoff": 1.0, "random": 1.0},
        action="continuous",
    ) as env:
        env.reset()
        for _ in range(3):
            result = env.step(torch.zeros(2, 2, 8))
        assert (result.terminated | result.truncated).all()
        state = env.state
        assert (state.ball_last_touch == -1).all() and not state.car_touched_ball.any()
        assert torch.allclose(state.car_pos[..., 2], torch.full((2, 2), CAR_SPAWN_REST_Z), atol=1e-3)
        assert (state.car_pos[..., 0].abs() < SIDE_WALL_X).all() and (state.car_pos[..., 1].abs() < BACK_WALL_Y).all()


def test_env_config_validation():
    with pytest.raises(ValueError, match="num_arena"):
        EnvConfig.from_dict({"num_arena": 2})
    with pytest.raises(ValueError, match="'joystick'"):
        EnvConfig(action="joystick")
    with pytest.raises(ValueError, match="'joystick'"):
        BatchedEnv(num_arenas=1, stepping="serial", num_workers=1, action="joystick")
    with pytest.raises(ValueError, match="num_arenas"):
        EnvConfig(num_arenas=0)
    config = EnvConfig.from_dict({"num_arenas": 2, "episode_seconds": 1.0})
    assert config.num_arenas == 2 and config.episode_seconds == 1.0 and config.action == "discrete"


def test_batched_env_is_deterministic_for_a_seed():
    def rollout(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        with BatchedEnv(num_arenas=2, stepping="serial", num_workers=1, seed=seed) as env:
            obs = [env.reset()]
            rewards = []
            gen = torch.Generator().manual_seed(0)
            for _ in range(10):
                result = env.step(torch.randint(0, 90, (2, 2), generator=gen))
                obs.append(result.obs)
                rewards.append(result.reward)
            return torch.stack(obs), torch.stack(rewards)

    obs_a, rew_a = rollout(11)
    obs_b, rew_b = rollout(11)
    assert torch.equal(obs_a, obs_b) and torch.equal(rew_a, rew_b)
    obs_c, _ = rollout(12)
    assert not torch.equal(obs_a, obs_c)


def test_obs_gives_the_ball_in_the_cars_own_frame():
    """Self block 71:74 is ball - car as (forward, left, up) of the car, for either team."""
    s = 1 / 2300
    # Blue car at (0, -2000, 17) faces +y (make_state); orange car at (300, 2000, 17) faces -y.
    ball = torch.tensor([[-500.0, -1000.0, 300.0]])
    state = make_state(1, 1, 1, ball_pos=ball)
    obs = DefaultObs(1, 1).build(state, torch.zeros(1, 2, 8))
    # Blue: ahead by 1000, left (world -x for a car facing +y) by 500, up by 283.
    torch.testing.assert_close(obs[0, 0, 71:74], torch.tensor([1000 * s, 500 * s, 283 * s]), atol=1e-6, rtol=0)
    # Orange faces -y: the ball is 3000 ahead and, as its left is world +x, 800 to its right.
    torch.testing.assert_close(obs[0, 1, 71:74], torch.tensor([3000 * s, -800 * s, 283 * s]), atol=1e-6, rtol=0)
