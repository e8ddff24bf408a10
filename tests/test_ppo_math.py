"""Tests of the pure PPO math: GAE, losses, running normalizers, return scaling and schedules.

Hand-computed cases show their arithmetic in comments; randomized cases compare against plain-loop references.
"""

from __future__ import annotations

import math

import pytest
import torch
from gae_reference import compute_gae_reference

from rocketrl.policy.normalize import ObservationNormalizer, RunningMeanStd
from rocketrl.ppo.gae import compute_gae
from rocketrl.ppo.loss import PPOLossTerms, explained_variance, normalize_advantages, ppo_losses
from rocketrl.ppo.normalize import ReturnScaler
from rocketrl.ppo.schedules import Schedule, set_learning_rate


def col(*xs: float) -> torch.Tensor:
    """[T, 1] float32 column."""
    return torch.tensor(xs, dtype=torch.float32).unsqueeze(1)


def bcol(*xs: bool) -> torch.Tensor:
    return torch.tensor(xs, dtype=torch.bool).unsqueeze(1)


# ----------------------------------------------------------------------------------------------- GAE


def test_gae_matches_hand_computed_case_with_termination():
    # gamma = 0.9, lam = 0.8 -> gamma * lam = 0.72. The episode terminates after t=1; t=2 starts a new one.
    rewards = col(1.0, 2.0, 0.5)
    values = col(0.5, 1.0, 2.0)
    next_values = col(1.0, 4.0, 3.0)  # 4.0 = V(terminal obs), must be ignored; 3.0 = V(s_3) bootstraps
    terminated = bcol(False, True, False)
    episode_end = bcol(False, True, False)
    # delta_2 = 0.5 + 0.9 * 3.0 - 2.0 = 1.2              A_2 = 1.2
    # delta_1 = 2.0 + 0.9 * 4.0 * 0 - 1.0 = 1.0          A_1 = 1.0 + 0.72 * 0 * A_2 = 1.0
    # delta_0 = 1.0 + 0.9 * 1.0 - 0.5 = 1.4              A_0 = 1.4 + 0.72 * 1.0 = 2.12
    # returns = A + V = [2.12 + 0.5, 1.0 + 1.0, 1.2 + 2.0] = [2.62, 2.0, 3.2]
    adv, ret = compute_gae(rewards, values, next_values, terminated, episode_end, gamma=0.9, lam=0.8)
    torch.testing.assert_close(adv, col(2.12, 1.0, 1.2))
    torch.testing.assert_close(ret, col(2.62, 2.0, 3.2))
    ref_adv, ref_ret = compute_gae_reference(rewards, values, next_values, terminated, episode_end, 0.9, 0.8)
    torch.testing.assert_close(ref_adv, adv)
    torch.testing.assert_close(ref_ret, ret)


def test_gae_bootstraps_on_truncation_not_termination():
    # Two agents, identical except: agent 0 is truncated after t=0, agent 1 terminated after t=0.
    rewards = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
    values = torch.tensor([[0.5, 0.5], [1.0, 1.0]])
    next_values = torch.tensor([[2.0, 2.0], [1.0, 1.0]])  # row 0: V(final obs); row 1: V(s_2)
    terminated = torch.tensor([[False, True], [False, False]])
    episode_end = torch.tensor([[True, True], [False, False]])
    # gamma = 0.9, lam = 0.8
    # t=1 (both): delta = 0 + 0.9 * 1.0 - 1.0 = -0.1 -> A_1 = -0.1
    # t=0 truncated:  delta = 1 + 0.9 * 2.0 - 0.5 = 2.3, no carry -> A_0 = 2.3
    # t=0 terminated: delta = 1 + 0 - 0.5 = 0.5, no carry        -> A_0 = 0.5
    adv, ret = compute_gae(rewards, values, next_values, terminated, episode_end, gamma=0.9, lam=0.8)
    torch.testing.assert_close(adv, torch.tensor([[2.3, 0.5], [-0.1, -0.1]]))
    torch.testing.assert_close(ret, adv + values)


def test_gae_matches_reference_loop_on_random_rollout():
    g = torch.Generator().manual_seed(0)
    steps, agents = 64, 16
    rewards = torch.randn(steps, agents, generator=g)
    values = torch.randn(steps, agents, generator=g)
    next_values = torch.randn(steps, agents, generator=g)
    episode_end = torch.rand(steps, agents, generator=g) < 0.05
    terminated = episode_end & (torch.rand(steps, agents, generator=g) < 0.5)
    assert episode_end.any() and terminated.any() and (episode_end & ~terminated).any()
    adv, ret = compute_gae(rewards, values, next_values, terminated, episode_end, gamma=0.99, lam=0.95)
    ref_adv, ref_ret = compute_gae_reference(rewards, values, next_values, terminated, episode_end, 0.99, 0.95)
    assert adv.shape == ret.shape == (steps, agents)
    torch.testing.assert_close(adv, ref_adv, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ret, ref_ret, rtol=1e-5, atol=1e-5)


def test_gae_with_lambda_one_and_no_episode_ends_is_discounted_return_minus_value():
    g = torch.Generator().manual_seed(1)
    steps, agents, gamma = 20, 3, 0.95
    rewards = torch.randn(steps, agents, generator=g, dtype=torch.float64)
    values = torch.randn(steps + 1, agents, generator=g, dtype=torch.float64)  # V(s_0) .. V(s_T)
    no_end = torch.zeros(steps, agents, dtype=torch.bool)
    adv, ret = compute_gae(rewards, values[:-1], values[1:], no_end, no_end, gamma=gamma, lam=1.0)
    # G_t = r_t + gamma * G_{t+1}, G_T = V(s_T)
    discounted = torch.empty(steps, agents, dtype=torch.float64)
    g_next = values[-1]
    for t in reversed(range(steps)):
        g_next = rewards[t] + gamma * g_next
        discounted[t] = g_next
    torch.testing.assert_close(adv, discounted - values[:-1])
    torch.testing.assert_close(ret, discounted)


def test_gae_rejects_mismatched_shapes():
    x = torch.zeros(4, 2)
    with pytest.raises(ValueError, match="shape"):
        compute_gae(x, x, torch.zeros(4, 3), x.bool(), x.bool(), 0.99, 0.95)


# -------------------------------------------------------------------------------------------- Losses


def _losses(new_lp, old_lp, adv, clip=0.2, new_v=None, old_v=None, ret=None, ent=None, vclip=None) -> PPOLossTerms:
    n = new_lp.shape[0]
    zeros = torch.zeros(n)
    return ppo_losses(
        new_lp,
        old_lp,
        adv,
        zeros if new_v is None else new_v,
        zeros if old_v is None else old_v,
        zeros if ret is None else ret,
        zeros if ent is None else ent,
        clip_coef=clip,
        value_clip_coef=vclip,
    )


def test_ratio_one_gives_minus_mean_advantage_zero_kl_zero_clipfrac():
    logp = torch.tensor([-1.0, -2.0, -0.5, -3.0])
    adv = torch.tensor([1.0, -2.0, 0.5, 4.0])
    terms = _losses(logp, logp.clone(), adv)
    torch.testing.assert_close(terms.policy, -adv.mean())
    assert terms.approx_kl.item() == 0.0
    assert terms.clipfrac.item() == 0.0
    for t in (terms.policy, terms.value, terms.entropy, terms.approx_kl, terms.clipfrac):
        assert t.dim() == 0


def test_policy_loss_takes_clipped_branch_for_positive_and_unclipped_for_negative_advantage():
    # ratio = 1.5, clip 0.2 -> clipped ratio 1.2.
    # A = +2: max(-2 * 1.5, -2 * 1.2) = max(-3.0, -2.4) = -2.4 (clipped: no extra credit beyond 1.2)
    # A = -2: max( 2 * 1.5,  2 * 1.2) = max( 3.0,  2.4) =  3.0 (unclipped: the pessimistic bound)
    # policy = mean(-2.4, 3.0) = 0.3; approx_kl = (1.5 - 1) - ln 1.5 = 0.0945348...; clipfrac = 1
    new_lp = torch.full((2,), math.log(1.5))
    old_lp = torch.zeros(2)
    terms = _losses(new_lp, old_lp, torch.tensor([2.0, -2.0]), clip=0.2)
    torch.testing.assert_close(terms.policy, torch.tensor(0.3))
    torch.testing.assert_close(terms.approx_kl, torch.tensor(0.5 - math.log(1.5)))
    torch.testing.assert_close(terms.clipfrac, torch.tensor(1.0))


def test_policy_loss_gradient_is_zero_on_the_clipped_branch():
    new_lp = torch.full((2,), math.log(1.5), requires_grad=True)
    terms = _losses(new_lp, torch.zeros(2), torch.tensor([2.0, -2.0]), clip=0.2)
    terms.policy.backward()
    # A=+2 clipped -> no gradient; A=-2 unclipped -> d/dlogp mean(2 * ratio) = 0.5 * 2 * 1.5 = 1.5
    torch.testing.assert_close(new_lp.grad, torch.tensor([0.0, 1.5]))
    assert not terms.approx_kl.requires_grad and not terms.clipfrac.requires_grad


def test_value_loss_with_and_without_clipping():
    new_v = torch.tensor([1.0, 3.0])
    old_v = torch.tensor([0.0, 2.8])
    ret = torch.tensor([2.0, 2.0])
    lp = torch.zeros(2)
    # Unclipped: (V - R)^2 = [1, 1] -> 0.5 * 1 = 0.5
    terms = _losses(lp, lp, torch.zeros(2), new_v=new_v, old_v=old_v, ret=ret, vclip=None)
    torch.testing.assert_close(terms.value, torch.tensor(0.5))
    # vc = 0.5: V_clip = V_old + clip(V - V_old, -0.5, 0.5) = [0 + 0.5, 2.8 + 0.2] = [0.5, 3.0]
    # (V_clip - R)^2 = [2.25, 1.0]; max with [1, 1] -> [2.25, 1.0]; 0.5 * mean = 0.5 * 1.625 = 0.8125
    terms = _losses(lp, lp, torch.zeros(2), new_v=new_v, old_v=old_v, ret=ret, vclip=0.5)
    torch.testing.assert_close(terms.value, torch.tensor(0.8125))


def test_entropy_term_is_mean_entropy():
    lp = torch.zeros(3)
    terms = _losses(lp, lp, torch.zeros(3), ent=torch.tensor([0.5, 1.0, 3.0]))
    torch.testing.assert_close(terms.entropy, torch.tensor(1.5))


def test_explained_variance_is_one_for_perfect_and_zero_for_constant_values():
    g = torch.Generator().manual_seed(2)
    returns = torch.randn(1000, generator=g)
    torch.testing.assert_close(explained_variance(returns.clone(), returns), torch.tensor(1.0))
    ev_const = explained_variance(torch.full_like(returns, 0.7), returns)
    assert ev_const.dim() == 0 and abs(ev_const.item()) < 1e-5
    # Constant returns: nothing to explain -> 0 by convention, not NaN.
    assert explained_variance(returns, torch.ones(1000)).item() == 0.0


def test_normalize_advantages_zero_mean_unit_std():
    g = torch.Generator().manual_seed(3)
    adv = torch.randn(512, generator=g) * 5.0 + 3.0
    out = normalize_advantages(adv)
    assert abs(out.mean().item()) < 1e-5
    assert abs(out.std(correction=0).item() - 1.0) < 1e-5
    assert normalize_advantages(torch.tensor([4.0])).item() == 0.0  # single sample: 0, not NaN


# ------------------------------------------------------------------------------------------ Normalizer


def test_running_mean_std_batch_merge_matches_full_data_statistics():
    g = torch.Generator().manual_seed(4)
    rms = RunningMeanStd((3,), "cpu")
    batches = [torch.randn(n, 3, generator=g) * torch.tensor([1.0, 2.0, 0.5]) + torch.tensor([1.0, -2.0, 0.0])
               for n in (7, 300, 1, 512, 64)]  # fmt: skip
    for b in batches:
        rms.update(b)
    data = torch.cat(batches).double()
    torch.testing.assert_close(rms.mean, data.mean(0), rtol=0, atol=1e-5)
    torch.testing.assert_close(rms.var, data.var(0, unbiased=False), rtol=0, atol=1e-5)
    assert rms.count.item() == pytest.approx(884 + 1e-4)
    assert rms.mean.dtype == torch.float64


def test_running_mean_std_ignores_empty_batch():
    rms = RunningMeanStd((2,), "cpu")
    rms.update(torch.randn(10, 2))
    before = rms.state_dict()
    rms.update(torch.zeros(0, 2))
    for k, v in rms.state_dict().items():
        assert torch.equal(v, before[k])


def test_normalize_gives_zero_mean_unit_variance_and_clips():
    g = torch.Generator().manual_seed(5)
    rms = RunningMeanStd((4,), "cpu")
    x = torch.randn(4096, 4, generator=g) * 7.0 + 3.0
    rms.update(x)
    y = rms.normalize(x, clip=None)
    assert y.dtype == torch.float32
    assert y.mean(0).abs().max().item() < 1e-4
    assert (y.var(0, unbiased=False) - 1.0).abs().max().item() < 1e-4
    clipped = rms.normalize(torch.full((2, 4), 1e6), clip=5.0)
    assert torch.equal(clipped, torch.full((2, 4), 5.0))
    assert torch.equal(rms.normalize(torch.full((1, 4), -1e6), clip=5.0), torch.full((1, 4), -5.0))


def test_running_mean_std_state_dict_round_trip_is_exact_and_to_device():
    g = torch.Generator().manual_seed(6)
    rms = RunningMeanStd((3,), "cpu")
    rms.update(torch.randn(50, 3, generator=g))
    saved = rms.state_dict()
    rms.update(torch.randn(50, 3, generator=g) + 10.0)  # state_dict holds copies: unaffected
    other = RunningMeanStd((3,), "cpu")
    other.load_state_dict(saved)
    for k in ("mean", "var", "count"):
        assert torch.equal(other.state_dict()[k], saved[k])
        assert isinstance(saved[k], torch.Tensor)
    assert other.to("cpu") is other and other.mean.device.type == "cpu"
    with pytest.raises(ValueError, match="shape"):
        RunningMeanStd((2,), "cpu").load_state_dict(saved)


def test_observation_normalizer_updates_over_last_dim_and_frozen_does_not_change():
    g = torch.Generator().manual_seed(7)
    norm = ObservationNormalizer(5, "cpu")
    obs = torch.randn(8, 2, 5, generator=g) * 3.0 + 1.0  # (A, C, obs_size)
    out = norm(obs)
    assert out.shape == obs.shape
    torch.testing.assert_close(norm.rms.mean, obs.reshape(-1, 5).double().mean(0), rtol=0, atol=1e-5)
    saved = norm.state_dict()
    norm.frozen = True
    frozen_out = norm(torch.randn(8, 2, 5, generator=g) + 100.0)
    for k, v in norm.state_dict().items():
        assert torch.equal(v, saved[k])
    assert frozen_out.abs().max().item() <= 10.0  # clip = 10 by default
    restored = ObservationNormalizer(5, "cpu")
    restored.load_state_dict(saved)
    torch.testing.assert_close(restored.normalize(obs), norm.normalize(obs), rtol=0, atol=0)


# ---------------------------------------------------------------------------------------- ReturnScaler


def test_return_scaler_hand_case_with_episode_end_resetting_the_return():
    scaler = ReturnScaler(num_envs=2, gamma=0.5, device="cpu")
    # step 0: r = [1, 2]   ret = [1, 2]           stats of {1, 2}: var = 0.25
    #         scaled = r / sqrt(0.25) = [2, 4]
    out0 = scaler.update_and_scale(torch.tensor([1.0, 2.0]), torch.tensor([False, False]))
    # step 1: r = [1, 0]   ret = [0.5 * 1 + 1, 0.5 * 2 + 0] = [1.5, 1.0]; env 0 ends after this step
    #         stats of {1, 2, 1.5, 1}: mean 1.375, var = (0.140625 + 0.390625 + 0.015625 + 0.140625) / 4 = 0.171875
    #         scaled = [1 / sqrt(0.171875), 0] = [2.41209, 0]; then ret[0] -> 0: ret = [0, 1]
    out1 = scaler.update_and_scale(torch.tensor([1.0, 0.0]), torch.tensor([True, False]))
    torch.testing.assert_close(scaler.state_dict()["running_return"], torch.tensor([0.0, 1.0], dtype=torch.float64))
    # step 2: r = [2, 2]   ret = [0 + 2, 0.5 * 1 + 2] = [2, 2.5]
    #         stats of {1, 2, 1.5, 1, 2, 2.5}: mean 10/6, var = 18.5/6 - (10/6)^2 = 0.305556
    #         scaled = 2 / sqrt(0.305556) = 3.61814 for both
    out2 = scaler.update_and_scale(torch.tensor([2.0, 2.0]), torch.tensor([False, False]))
    # rtol 1e-3: the statistics start from a pseudo-count of 1e-4 (mean 0, var 1).
    torch.testing.assert_close(out0, torch.tensor([2.0, 4.0]), rtol=1e-3, atol=0)
    torch.testing.assert_close(out1, torch.tensor([2.41209, 0.0]), rtol=1e-3, atol=0)
    torch.testing.assert_close(out2, torch.tensor([3.61814, 3.61814]), rtol=1e-3, atol=0)
    assert out2.dtype == torch.float32
    state = scaler.state_dict()
    assert set(state) == {"mean", "var", "count", "running_return"}
    torch.testing.assert_close(state["running_return"], torch.tensor([2.0, 2.5], dtype=torch.float64))
    assert state["var"].item() == pytest.approx(0.305556, rel=1e-3)


def test_return_scaler_state_dict_restores_running_return_and_clips():
    scaler = ReturnScaler(num_envs=3, gamma=0.9, device="cpu", clip=2.0)
    scaler.update_and_scale(torch.tensor([1.0, -1.0, 0.5]), torch.zeros(3, dtype=torch.bool))
    other = ReturnScaler(num_envs=3, gamma=0.9, device="cpu", clip=2.0)
    other.load_state_dict(scaler.state_dict())
    assert torch.equal(other.running_return, scaler.running_return)
    r, end = torch.tensor([100.0, -100.0, 0.0]), torch.zeros(3, dtype=torch.bool)
    assert torch.equal(other.update_and_scale(r, end), scaler.update_and_scale(r, end))
    assert torch.equal(scaler.scale(torch.tensor([1e6, -1e6, 0.0])), torch.tensor([2.0, -2.0, 0.0]))


# ------------------------------------------------------------------------------------------ Schedules


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        (Schedule(3.0), (3.0, 3.0, 3.0)),
        (Schedule(1.0, "linear", 0.0), (1.0, 0.5, 0.0)),
        # 1 * (0.01 / 1) ** 0.5 = 0.1
        (Schedule(1.0, "exponential", 0.01), (1.0, 0.1, 0.01)),
        # 0 + 0.5 * (1 - 0) * (1 + cos(pi / 2)) = 0.5
        (Schedule(1.0, "cosine", 0.0), (1.0, 0.5, 0.0)),
        # 0.2 + 0.5 * (1 - 0.2) * (1 + 0) = 0.6
        (Schedule(start=1.0, kind="cosine", end=0.2), (1.0, 0.6, 0.2)),
    ],
)
def test_schedule_values_at_start_middle_end(schedule: Schedule, expected: tuple[float, float, float]):
    for p, want in zip((0.0, 0.5, 1.0), expected):
        assert schedule.value(p) == pytest.approx(want, abs=1e-12)


def test_schedule_clamps_progress_outside_unit_interval():
    s = Schedule(1.0, "linear", 0.0)
    assert s.value(-0.5) == 1.0
    assert s.value(2.0) == 0.0


def test_schedule_end_defaults():
    assert Schedule(2.0).end == 2.0
    assert Schedule(2.0, "linear").end == pytest.approx(0.2)
    assert Schedule(2.0, "linear").value(1.0) == pytest.approx(0.2)


def test_schedule_unknown_kind_error_names_kind():
    with pytest.raises(ValueError, match="kind") as err:
        Schedule(1.0, "step")
    assert "linear" in str(err.value) and "'step'" in str(err.value)


def test_exponential_schedule_requires_positive_end():
    with pytest.raises(ValueError, match="Schedule.end"):
        Schedule(1.0, "exponential", 0.0)
    with pytest.raises(ValueError, match="Schedule.end"):
        Schedule(1.0, "exponential", -1.0)


def test_set_learning_rate_sets_every_param_group():
    p1, p2 = torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([{"params": [p1]}, {"params": [p2], "lr": 1.0}], lr=3e-4)
    set_learning_rate(opt, 1e-5)
    assert [g["lr"] for g in opt.param_groups] == [1e-5, 1e-5]
