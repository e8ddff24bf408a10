"""The warp step as phase kernels (WarpEngine(split_step=True)) plays the same game as the one-kernel step, bit
for bit: kickoffs driven into the ball (car-ball and car-car contacts, the ball's arena contact), then random
controls (jumps, flips, boost, handbrake), 1v1 and 2v2, on the CPU."""

from __future__ import annotations

import pytest
import torch

from rocketrl.sim.warp.engine import WarpEngine

ARENAS = 16
STEPS = 75  # 5 s at tick_skip 8: the kickoff meetings, then random play
KICKOFF_STEPS = 35


def _controls(step: int, engine: WarpEngine, generator: torch.Generator) -> torch.Tensor:
    """Random controls; for the first KICKOFF_STEPS, every car drives at the ball (steering by the angle to it)
    at full throttle and boost."""
    cars = engine.num_cars
    c = torch.rand(ARENAS, cars, 8, generator=generator) * 2 - 1
    c[..., 5:] = (c[..., 5:] > 0.4).float()  # jump, boost, handbrake pressed now and then
    if step < KICKOFF_STEPS:
        to_ball = engine.t["ball_pos"][:, None, :2] - engine.t["car_pos"][..., :2]
        forward = engine.t["car_fwd"][..., :2]
        turn = forward[..., 0] * to_ball[..., 1] - forward[..., 1] * to_ball[..., 0]
        c[..., :] = 0.0
        c[..., 0] = 1.0
        c[..., 1] = (3.0 * turn / to_ball.norm(dim=-1).clamp(min=1.0)).clamp(-1.0, 1.0)
        c[..., 6] = 1.0
    return c


@pytest.mark.parametrize("team_size", [1, 2])
def test_the_phase_kernels_step_the_same_game_as_the_whole_step_kernel(team_size: int) -> None:
    whole = WarpEngine(ARENAS, team_size, team_size, num_workers=1, seed=5)
    split = WarpEngine(ARENAS, team_size, team_size, num_workers=1, seed=5, split_step=True)
    generator = torch.Generator().manual_seed(team_size)
    touches = pickups = airborne = 0
    try:
        for step in range(STEPS):
            controls = _controls(step, whole, generator)
            state = whole.step(controls)
            split.step(controls)
            differing = [name for name in whole.t if not torch.equal(whole.t[name], split.t[name])]
            assert not differing, f"step {step}: {differing} differ between the two ways of stepping"
            touches += int(state.car_touched_ball.sum())
            pickups += int(state.car_boost_pickups.sum())
            airborne += int((~state.car_on_ground).sum())
        phases = dict(split.phase_seconds)
        assert not whole.phase_seconds
    finally:
        whole.close()
        split.close()
    # each phase kernel's CPU time is counted (engine_throughput's phase_share)
    assert set(phases) == {
        "begin_step_kernel",
        "car_tick_start_kernel",
        "ball_and_meetings_kernel",
        "car_tick_end_kernel",
        "end_tick_kernel",
        "end_step_kernel",
    }
    assert all(seconds > 0.0 for seconds in phases.values())
    assert phases["car_tick_start_kernel"] > phases["begin_step_kernel"]
    # the game the two agreed on had the contacts in it
    assert touches >= ARENAS, f"only {touches} car-ball touches"
    assert pickups > 0 and airborne > 0
