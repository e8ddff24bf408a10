"""The Gymnasium, PettingZoo and vector faces of BatchedEnv (rocketrl/env/gym.py)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode
from pettingzoo.test import parallel_api_test

from rocketrl.env.actions import InvalidActionError, lookup_table
from rocketrl.env.gym import RocketSimEnv, RocketSimParallelEnv, RocketSimVectorEnv
from rocketrl.sim.arena import BACK_WALL_Y, BALL_REST_Z, CAR_SPAWN_REST_Z, DEFAULT_TICK_SKIP, TICK_TIME
from rocketrl.sim.state import ResetState

KICKOFF = {"kickoff": 1.0}
STEP_SECONDS = DEFAULT_TICK_SKIP * TICK_TIME


def table_index(throttle: float, steer: float, boost: float, jump: float = 0.0, handbrake: float = 0.0) -> int:
    """Row of the lookup table with these controls (pitch, yaw, roll as on the ground rows)."""
    row = torch.tensor([throttle, steer, 0.0, steer, 0.0, jump, boost, handbrake])
    return int(torch.nonzero((lookup_table() == row).all(dim=1)).flatten()[0])


NOOP = table_index(0, 0, 0)
FULL_BOOST = table_index(1, 0, 1)
FULL_THROTTLE_CONTROLS = np.array([1, 0, 0, 0, 0, 0, 0, 0], dtype=np.float32)


@contextmanager
def strict_warnings() -> Iterator[None]:
    """Every warning is an error, except gymnasium's advice against infinite Box bounds (the
    observation space is Box(-inf, inf) by design)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=r".*Box observation space (minimum|maximum) value is -?infinity")
        yield


def goal_bound_state(num_cars: int) -> ResetState:
    """One arena: the ball rolling fast into the orange goal (blue scores within one step), cars
    parked at midfield."""
    car_pos = torch.tensor([[-1000.0 + 500.0 * c, 0.0, CAR_SPAWN_REST_Z] for c in range(num_cars)])
    return ResetState(
        ball_pos=torch.tensor([[0.0, BACK_WALL_Y - 50.0, BALL_REST_Z]]),
        ball_vel=torch.tensor([[0.0, 4000.0, 0.0]]),
        ball_ang_vel=torch.zeros(1, 3),
        car_pos=car_pos.unsqueeze(0),
        car_vel=torch.zeros(1, num_cars, 3),
        car_ang_vel=torch.zeros(1, num_cars, 3),
        car_rotation=torch.zeros(1, num_cars, 3),
        car_boost=torch.full((1, num_cars), 33.0),
    )


# ----------------------------------------------------------------------------------------- RocketSimEnv
@pytest.mark.parametrize("action", ["discrete", "continuous"])
def test_check_env_passes_and_spaces(action: str) -> None:
    env = RocketSimEnv(action=action)
    try:
        assert env.observation_space == spaces.Box(-np.inf, np.inf, (180,), np.float32)
        if action == "discrete":
            assert env.action_space == spaces.Discrete(90)
        else:
            assert env.action_space == spaces.Box(-1.0, 1.0, (8,), np.float32)
        with strict_warnings():
            check_env(env.unwrapped, skip_render_check=True)  # render_modes is empty: nothing to render
    finally:
        env.close()
    env.close()  # closing twice is fine


def _trajectory(env: RocketSimEnv, seed: int, actions: list[int]) -> np.ndarray:
    obs, _ = env.reset(seed=seed)
    seq = [obs]
    for action in actions:
        obs, _, terminated, truncated, _ = env.step(action)
        seq.append(obs)
        if terminated or truncated:
            break
    return np.stack(seq)


def test_same_seed_same_trajectory_different_seed_different_start() -> None:
    actions = np.random.default_rng(0).integers(0, 90, size=20).tolist()
    env, other = RocketSimEnv(state_setter={"random": 1.0}), RocketSimEnv(state_setter={"random": 1.0})
    try:
        first = _trajectory(env, 11, actions)
        again = _trajectory(env, 11, actions)  # same env, after it was stepped
        fresh = _trajectory(other, 11, actions)  # another env
        assert first.dtype == np.float32 and first.shape[1] == 180
        np.testing.assert_array_equal(first, again)
        np.testing.assert_array_equal(first, fresh)
        obs_12, _ = env.reset(seed=12)
        assert not np.array_equal(obs_12, first[0])
        # Unseeded resets continue the seeded stream: reproducible too.
        env.reset(seed=3)
        other.reset(seed=3)
        np.testing.assert_array_equal(env.reset()[0], other.reset()[0])
    finally:
        env.close()
        other.close()


@pytest.mark.parametrize("action", ["discrete", "continuous"])
def test_opponents_stand_still_by_default(action: str) -> None:
    env = RocketSimEnv(action=action, state_setter=KICKOFF)
    drive = FULL_BOOST if action == "discrete" else np.array([1, 0, 0, 0, 0, 0, 1, 0], dtype=np.float32)
    try:
        env.reset(seed=0)
        start = env.batched.state.car_pos[0].clone()
        for step in range(20):
            env.step(drive)
            orange_speed = float(env.batched.state.car_vel[0, 1].norm())
            # A freshly spawned car settles on its suspension at ~1.6 uu/s during the first step
            # (RocketSim's own kickoff does the same); after that it is at rest.
            limit = 2.0 if step == 0 else 1.0
            assert orange_speed < limit, f"the orange car moves at {orange_speed} uu/s without an opponent policy"
        moved = (env.batched.state.car_pos[0] - start).norm(dim=-1)
        assert moved[0] > 500.0, "the learner should have driven away"
        assert moved[1] < 1.0
    finally:
        env.close()


def test_opponent_policy_is_called_and_drives_the_other_cars() -> None:
    calls: list[tuple[tuple[int, ...], np.dtype]] = []

    def policy(obs: np.ndarray) -> np.ndarray:
        calls.append((obs.shape, obs.dtype))
        return np.full(len(obs), FULL_BOOST)

    env = RocketSimEnv(blue_size=2, orange_size=2, opponent_policy=policy, state_setter=KICKOFF)
    try:
        env.reset(seed=1)
        start = env.batched.state.car_pos[0].clone()
        for _ in range(20):
            env.step(NOOP)
        assert calls == [((3, 180), np.dtype(np.float32))] * 20
        moved = (env.batched.state.car_pos[0] - start).norm(dim=-1)
        assert moved[0] < 1.0, "the learner held still"
        assert (moved[1:] > 300.0).all(), f"the policy's cars should all move: {moved.tolist()}"
    finally:
        env.close()


def test_goal_terminates_with_positive_reward_and_final_observation() -> None:
    env = RocketSimEnv(state_setter=KICKOFF)
    try:
        env.reset(seed=0)
        env.batched.engine.reset(torch.tensor([True]), goal_bound_state(2))
        obs, reward, terminated, truncated, info = env.step(NOOP)
        assert terminated and not truncated
        assert reward > 0.0
        assert info["episode_stats"]["goals_blue"] == 1 and info["episode_stats"]["goals_orange"] == 0
        assert obs[1] * 2300.0 > BACK_WALL_Y, "the final observation shows the ball in the goal"
        with pytest.raises(RuntimeError, match="reset"):
            env.step(NOOP)
        obs, info = env.reset()
        assert info == {}
        np.testing.assert_allclose(obs[0:3], [0.0, 0.0, BALL_REST_Z / 2300.0], atol=1e-6)  # kickoff again
        env.step(NOOP)
    finally:
        env.close()


def test_time_limit_truncates() -> None:
    episode_seconds = 1.0
    limit = round(episode_seconds / STEP_SECONDS)
    assert limit == 15
    env = RocketSimEnv(episode_seconds=episode_seconds, state_setter=KICKOFF)
    try:
        env.reset(seed=0)
        for _ in range(limit - 1):
            _, _, terminated, truncated, info = env.step(NOOP)
            assert not terminated and not truncated and info == {}
        _, _, terminated, truncated, info = env.step(NOOP)
        assert truncated and not terminated
        assert info["episode_stats"]["length"] == limit
        obs, _ = env.reset(seed=4)
        assert obs.shape == (180,)
    finally:
        env.close()


def test_bad_actions_raise_clear_errors() -> None:
    env = RocketSimEnv(action="continuous")
    try:
        env.reset(seed=0)
        nan_action = FULL_THROTTLE_CONTROLS.copy()
        nan_action[2] = np.nan
        with pytest.raises(InvalidActionError, match="NaN"):
            env.step(nan_action)
        with pytest.raises(InvalidActionError, match=r"shape \(7,\)"):
            env.step(np.zeros(7, dtype=np.float32))
    finally:
        env.close()
    env = RocketSimEnv(action="discrete")
    try:
        with pytest.raises(RuntimeError, match="reset"):
            env.step(0)
        env.reset(seed=0)
        with pytest.raises(InvalidActionError, match="index 90 is out of range; valid indices are 0..89"):
            env.step(90)
        with pytest.raises(InvalidActionError, match="index -1 is out of range"):
            env.step(np.int64(-1))
        with pytest.raises(InvalidActionError, match="whole numbers"):
            env.step(2.5)
        with pytest.raises(InvalidActionError, match="expected numbers"):
            env.step("left")
        env.step(np.array([3]))  # the env still works after rejected actions
    finally:
        env.close()
    bad_policy = RocketSimEnv(opponent_policy=lambda obs: np.full(len(obs), 500))
    try:
        bad_policy.reset(seed=0)
        with pytest.raises(InvalidActionError, match="opponent_policy returned invalid actions.*500"):
            bad_policy.step(0)
    finally:
        bad_policy.close()


def test_stable_baselines3_ppo_learns_briefly() -> None:
    sb3 = pytest.importorskip("stable_baselines3")
    env = RocketSimEnv(episode_seconds=2.0)
    try:
        model = sb3.PPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu")
        model.learn(total_timesteps=256)
        assert model.num_timesteps >= 256
        action, _ = model.predict(env.reset(seed=0)[0], deterministic=True)
        assert env.action_space.contains(int(action))
    finally:
        env.close()


# ----------------------------------------------------------------------------------------- PettingZoo
@pytest.mark.parametrize(("blue", "orange"), [(1, 1), (2, 2)])
def test_parallel_api_test_passes(blue: int, orange: int) -> None:
    env = RocketSimParallelEnv(blue_size=blue, orange_size=orange, episode_seconds=1.0)
    try:
        assert env.possible_agents == [f"blue_{i}" for i in range(blue)] + [f"orange_{i}" for i in range(orange)]
        assert env.metadata["name"] == "rocketrl_soccar_v0"
        with strict_warnings():
            parallel_api_test(env, num_cycles=40)  # episodes end after 15 steps: agents are removed
    finally:
        env.close()


def test_parallel_episode_end_removes_agents_and_returns_final_obs() -> None:
    env = RocketSimParallelEnv(blue_size=1, orange_size=1, action="continuous", state_setter=KICKOFF)
    try:
        obs, infos = env.reset(seed=0)
        assert set(obs) == set(infos) == {"blue_0", "orange_0"}
        # Orange sees the field mirrored: both cars see themselves on the same (mirrored) kickoff spawn.
        np.testing.assert_allclose(obs["blue_0"][51:54], obs["orange_0"][51:54], atol=1e-6)
        assert obs["blue_0"][52] < 0.0
        env.batched.engine.reset(torch.tensor([True]), goal_bound_state(2))
        still = np.zeros(8, dtype=np.float32)
        obs, rewards, terms, truncs, infos = env.step({"blue_0": still, "orange_0": still})
        assert env.agents == []
        assert terms == {"blue_0": True, "orange_0": True} and truncs == {"blue_0": False, "orange_0": False}
        assert rewards["blue_0"] > 0.0 > rewards["orange_0"]
        assert obs["blue_0"][1] * 2300.0 > BACK_WALL_Y and obs["orange_0"][1] * 2300.0 < -BACK_WALL_Y
        assert infos["orange_0"]["episode_stats"]["goals_blue"] == 1
        with pytest.raises(RuntimeError, match="reset"):
            env.step({"blue_0": still, "orange_0": still})
        env.reset()
        with pytest.raises(InvalidActionError, match=r"missing \['orange_0'\]"):
            env.step({"blue_0": still})
        with pytest.raises(InvalidActionError, match="NaN"):
            env.step({"blue_0": still, "orange_0": np.full(8, np.nan, dtype=np.float32)})
    finally:
        env.close()


# ----------------------------------------------------------------------------------------- vector
def test_vector_env_shapes_and_same_step_autoreset() -> None:
    env = RocketSimVectorEnv(num_envs=3, stepping="serial", episode_seconds=1.0, state_setter=KICKOFF)
    try:
        assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
        assert env.single_observation_space == spaces.Box(-np.inf, np.inf, (180,), np.float32)
        assert env.single_action_space == spaces.Discrete(90)
        assert env.observation_space.shape == (3, 180) and env.action_space == spaces.MultiDiscrete([90] * 3)
        obs, infos = env.reset(seed=0)
        assert obs.shape == (3, 180) and obs.dtype == np.float32 and infos == {}
        assert env.observation_space.contains(obs)
        env.action_space.seed(0)
        obs, rewards, terms, truncs, infos = env.step(env.action_space.sample())
        assert obs.shape == (3, 180) and rewards.shape == terms.shape == truncs.shape == (3,)
        assert terms.dtype == truncs.dtype == np.bool_ and infos == {}

        # Arena 1 scores: only it ends and is reset within the step.
        env.batched.engine.reset(torch.tensor([False, True, False]), goal_bound_state(2))
        obs, rewards, terms, truncs, infos = env.step(np.full(3, NOOP))
        assert terms.tolist() == [False, True, False] and not truncs.any()
        assert infos["_final_obs"].tolist() == [False, True, False]
        assert infos["final_obs"][0] is None and infos["final_obs"][1].shape == (180,)
        assert infos["final_obs"][1][1] * 2300.0 > BACK_WALL_Y  # the ball in the goal
        np.testing.assert_allclose(obs[1, 0:3], [0.0, 0.0, BALL_REST_Z / 2300.0], atol=1e-6)  # a new kickoff
        assert infos["final_info"]["episode_stats"]["goals_blue"].tolist() == [0, 1, 0]
        assert infos["final_info"]["episode_stats"]["_goals_blue"].tolist() == [False, True, False]
        assert infos["_final_info"].tolist() == [False, True, False]
        assert rewards[1] > 0.0

        # Arenas 0 and 2 run out of time at their step 15 (2 done, 12 quiet, then the 15th).
        for _ in range(12):
            *_, terms, truncs, infos = env.step(np.full(3, NOOP))
            assert not (terms | truncs).any()
        *_, terms, truncs, infos = env.step(np.full(3, NOOP))
        assert truncs.tolist() == [True, False, True] and not terms.any()
        assert infos["final_info"]["episode_stats"]["length"].tolist() == [15, 0, 15]

        with pytest.raises(InvalidActionError, match="out of range"):
            env.step(np.array([0, 95, 0]))
        with pytest.raises(InvalidActionError, match=r"shape \(2,\)"):
            env.step(np.array([0, 1]))
    finally:
        env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step(np.zeros(3, dtype=np.int64))


def test_vector_env_continuous_with_opponent_policy() -> None:
    seen: list[tuple[int, ...]] = []

    def policy(obs: np.ndarray) -> np.ndarray:
        seen.append(obs.shape)
        return np.tile(FULL_THROTTLE_CONTROLS, (len(obs), 1))

    env = RocketSimVectorEnv(
        num_envs=2, blue_size=1, orange_size=2, action="continuous", opponent_policy=policy, stepping="serial"
    )
    try:
        assert env.action_space == spaces.Box(-1.0, 1.0, (2, 8), np.float32)
        obs, _ = env.reset(seed=[1, 2])
        again, _ = env.reset(seed=[1, 2])
        np.testing.assert_array_equal(obs, again)
        for _ in range(10):
            env.step(np.zeros((2, 8), dtype=np.float32))
        assert seen == [(4, 180)] * 10
        speed = env.batched.state.car_vel.norm(dim=-1)  # (arenas, cars)
        assert (speed[:, 0] < 1.0).all() and (speed[:, 1:] > 100.0).all()
        with pytest.raises(InvalidActionError, match="NaN"):
            env.step(np.full((2, 8), np.nan, dtype=np.float32))
    finally:
        env.close()
