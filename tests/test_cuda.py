"""Training on a CUDA device (mixed precision, compiled network and env layer), and the warp engine on CUDA
against the same engine on the CPU: the kernels are one source compiled twice, so
the same arenas, seeds and controls must play the same game. Float contraction and the order of GPU sums
differ from the CPU's, so states are compared within bounds, not bit for bit; contacts amplify such
differences over seconds, so the bounds are tight after one step and looser later. Training on warp-on-CUDA
runs end to end. Skipped without a CUDA device."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

ARENAS = 64


@pytest.mark.parametrize("amp,compiled", [("bf16", True), ("fp16", False), ("off", False)])
def test_training_on_cuda_with_mixed_precision(tmp_path, amp, compiled):
    """RocketSim arenas, the network and the update on the GPU: three updates run in the precision asked for
    (fp16 through the gradient scaler), with the network and the env layer compiled or not, and every weight
    stays finite."""
    from rocketrl.config import load_config
    from rocketrl.ppo.trainer import Trainer

    batch = 8 * 2 * 64
    cfg = load_config(None, [
        "--env.num-arenas", "8", "--env.num-workers", "2", "--ppo.rollout-steps", "64", "--ppo.minibatches", "2",
        "--run.device", "cuda", "--speed.amp", amp, "--speed.compile", str(compiled).lower(),
        "--env.compile", str(compiled).lower(), "--run.timesteps", str(3 * batch),
        "--run.logdir", str(tmp_path), "--run.name", amp,
    ])  # fmt: skip
    trainer = Trainer(cfg)
    try:
        assert trainer.device.type == "cuda"
        assert trainer.amp_mode == amp, trainer.amp_reason
        trainer.learn()
        assert trainer.counters.global_step == 3 * batch
        assert trainer.counters.updates == 3
        for name, weight in trainer.model.named_parameters():
            assert weight.device.type == "cuda" and torch.isfinite(weight).all(), name
    finally:
        trainer.close()


def _controls(step: int, arenas: int, cars: int) -> torch.Tensor:
    """Varied controls (throttle, steer, jumps, boost, handbrake) that change every step, the same on any device."""
    gen = torch.Generator().manual_seed(1000 + step)
    c = torch.rand(arenas, cars, 8, generator=gen) * 2.0 - 1.0
    c[..., 5:] = (c[..., 5:] > 0.3).float()  # jump, boost, handbrake as buttons
    return c


def _play(device: str, steps: int, blue: int, orange: int, **engine_options: bool) -> list[dict[str, torch.Tensor]]:
    """States after every step of `steps` steps from the seeded kickoffs (engine_options: WarpEngine's)."""
    pytest.importorskip("warp")
    from rocketrl.sim.warp.engine import WarpEngine

    out = []
    with WarpEngine(ARENAS, blue, orange, device=device, seed=3, num_workers=1, **engine_options) as engine:
        engine.reset_kickoff_native(torch.ones(ARENAS, dtype=torch.bool, device=engine.device), seed=3)
        for step in range(steps):
            state = engine.step(_controls(step, ARENAS, blue + orange).to(engine.device))
            out.append(
                {
                    "car_pos": state.car_pos.cpu(),
                    "ball_pos": state.ball_pos.cpu(),
                    "car_forward": state.car_forward.cpu(),
                    "goal_scored": state.goal_scored.cpu(),
                }
            )
    return out


@pytest.mark.parametrize("team", [1, 2])
def test_cuda_steps_the_same_game_as_the_cpu(team):
    steps = 45  # 3 s at tick skip 8
    cpu, cuda = _play("cpu", steps, team, team), _play("cuda", steps, team, team)
    first = (cpu[0]["car_pos"] - cuda[0]["car_pos"]).norm(dim=-1)
    assert first.max() < 0.01, f"after one step a car is {first.max():.4f} uu from its CPU twin"
    ball_first = (cpu[0]["ball_pos"] - cuda[0]["ball_pos"]).norm(dim=-1)
    assert ball_first.max() < 0.01
    at_1s = (cpu[14]["car_pos"] - cuda[14]["car_pos"]).norm(dim=-1).amax(dim=1)  # (A,) worst car per arena
    assert (at_1s < 1.0).float().mean() >= 0.9, f"at 1 s only {(at_1s < 1.0).float().mean():.0%} of arenas within 1 uu"
    end = (cpu[-1]["car_pos"] - cuda[-1]["car_pos"]).norm(dim=-1).amax(dim=1)
    assert (end < 1.0).float().mean() >= 0.75, f"at 3 s only {(end < 1.0).float().mean():.0%} of arenas within 1 uu"
    moved = (cuda[-1]["car_pos"] - cuda[0]["car_pos"]).norm(dim=-1)
    assert moved.median() > 300.0, "the cars drove"


@pytest.mark.parametrize("team", [1, 2])
def test_phase_kernels_replayed_as_a_cuda_graph_step_the_same_game(team):
    """WarpEngine(split_step=True, cuda_graph=True) against the one-kernel step, both on CUDA: the same functions
    in the same order per arena, so at most the compiler's float contractions differ (bounds of the CPU test)."""
    steps = 45
    whole = _play("cuda", steps, team, team)
    split = _play("cuda", steps, team, team, split_step=True, cuda_graph=True)
    first = (whole[0]["car_pos"] - split[0]["car_pos"]).norm(dim=-1)
    assert first.max() < 0.01, f"after one step a car is {first.max():.4f} uu from its twin"
    at_1s = (whole[14]["car_pos"] - split[14]["car_pos"]).norm(dim=-1).amax(dim=1)
    assert (at_1s < 1.0).float().mean() >= 0.9, f"at 1 s only {(at_1s < 1.0).float().mean():.0%} within 1 uu"
    moved = (split[-1]["car_pos"] - split[0]["car_pos"]).norm(dim=-1)
    assert moved.median() > 300.0, "the graph replayed every step: the cars drove"


def test_training_on_warp_cuda_runs_and_resumes(tmp_path):
    """A short run with the engine, network and update on the GPU writes checkpoints, and a second run resumes
    from the last one at its step count and goes on."""
    pytest.importorskip("warp")
    from rocketrl.config import load_config
    from rocketrl.ppo.trainer import Trainer

    batch = 256 * 2 * 32  # arenas x cars x rollout steps

    def config(updates: int):
        return load_config(None, [
            "--env.engine", "warp", "--env.num-arenas", "256", "--ppo.rollout-steps", "32",
            "--run.device", "cuda", "--run.timesteps", str(updates * batch),
            "--run.checkpoint-interval", str(batch), "--run.logdir", str(tmp_path), "--run.name", "cuda",
        ])  # fmt: skip

    first = Trainer(config(2))
    try:
        assert first.device.type == "cuda"
        first.learn()
    finally:
        first.close()
    assert first.counters.global_step == 2 * batch
    second = Trainer(config(3))
    try:
        second.resume("latest")
        assert second.counters.global_step == 2 * batch
        second.learn()
    finally:
        second.close()
    assert second.counters.global_step == 3 * batch
