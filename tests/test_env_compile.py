"""EnvConfig.compile: the fused env layer computes exactly what the eager one does."""

import torch

from rocketrl.env.batched import BatchedEnv


def _rollout(
    compile_layer: bool, steps: int = 6, rewards: str | None = None, orange_size: int = 1
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    cars = 2 + orange_size
    env = BatchedEnv(
        num_arenas=3,
        blue_size=2,
        orange_size=orange_size,
        rewards=rewards,
        stepping="serial",
        num_workers=1,
        seed=7,
        compile=compile_layer,
        episode_seconds=0.3,  # an auto-reset inside the rollout (after 5 steps)
    )
    generator = torch.Generator().manual_seed(3)
    try:
        out = [(env.reset(), torch.zeros(3, cars))]
        for _ in range(steps):
            result = env.step(torch.randint(0, 90, (3, cars), generator=generator))
            out.append((result.obs, result.reward))
        if compile_layer:  # the compiled path really ran: no fallback to eager
            assert env._layer.active and env._layer.compiled_ran
        return out
    finally:
        env.close()


def test_compiled_env_layer_matches_eager_observations_and_rewards():
    eager, compiled = _rollout(False), _rollout(True)
    for (obs_e, rew_e), (obs_c, rew_c) in zip(eager, compiled, strict=True):
        torch.testing.assert_close(obs_c, obs_e, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(rew_c, rew_e, atol=1e-5, rtol=1e-5)


def test_compiled_env_layer_matches_eager_for_every_reward_term_in_2v2(tmp_path):
    """Every term at weight 1 (the team terms compare teammates, so 2v2), team spirit and zero-sum on."""
    from rocketrl.env.rewards import REWARD_TERMS

    weights = "\n".join(f"  {name}: 1.0" for name in REWARD_TERMS)
    path = tmp_path / "every_term.yaml"
    path.write_text(f"team_spirit: 0.5\nzero_sum: true\nweights:\n{weights}\n")
    eager, compiled = (
        _rollout(False, rewards=str(path), orange_size=2),
        _rollout(True, rewards=str(path), orange_size=2),
    )
    for (obs_e, rew_e), (obs_c, rew_c) in zip(eager, compiled, strict=True):
        torch.testing.assert_close(obs_c, obs_e, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(rew_c, rew_e, atol=1e-5, rtol=1e-5)


def test_compiled_env_layer_follows_the_reward_weights_schedule(tmp_path):
    """A weight scheduled from 1 to -1 (rewards.weights_end) pays the term at progress 0, nothing at 0.5 and
    its negation at 1, in the compiled layer too (the weights change in place, never baked into the graph)."""
    rewards = tmp_path / "rewards.yaml"
    rewards.write_text("weights: {velocity_player_to_ball: 1.0}\nweights_end: {velocity_player_to_ball: -1.0}\n")
    env = BatchedEnv(
        num_arenas=2, blue_size=1, orange_size=1, stepping="serial", num_workers=1, seed=7, compile=True,
        rewards=str(rewards), state_setter={"kickoff": 1.0},
    )  # fmt: skip
    throttle = torch.full((2, 2), 16)  # lookup-table row 16: full throttle, straight: from kickoff, at the ball
    try:
        env.reset()
        for _ in range(3):
            start = env.step(throttle).reward
        env.reward_fn.set_progress(0.5)
        middle = env.step(throttle).reward
        env.reward_fn.set_progress(1.0)
        before = env.state
        end = env.step(throttle)
        assert env._layer.active and env._layer.compiled_ran
    finally:
        env.close()
    assert (start.abs() > 0.01).all()
    assert middle.abs().max() == 0
    from rocketrl.env.rewards import velocity_player_to_ball

    torch.testing.assert_close(end.reward, -velocity_player_to_ball(before, end.state), atol=1e-6, rtol=1e-6)
