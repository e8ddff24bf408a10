"""The warp engine's car on the flat floor against RocketSim's, tick by tick: the same states and controls
through both (tick_skip 1) for 2 s, cars in the middle of the field so that only the floor matters."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("warp")

from rocketrl.diagnostics import car_ground_parity as ground  # noqa: E402
from rocketrl.diagnostics.car_air_parity import car_paths, orientation_error_deg  # noqa: E402

POSITION_BOUND_UU = 0.02
"""Largest distance between the two cars at any tick over 2 s: float32 rounding (measured: 0.013 uu on the
scripted cases, coasting 1,500 uu; 0.008 uu on the random ones)."""
ORIENTATION_BOUND_DEG = 0.001
"""Largest angle between the two cars' orientations at any tick (measured: 0.0003 degrees scripted, 0.0004
random)."""


def _worst_gaps(state, controls) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(A,) whether each case stays on the floor away from walls, ball and hitbox contacts in RocketSim,
    (A,) its largest position gap (uu) and (A,) its largest orientation gap (degrees) over every tick."""
    paths = car_paths(state, controls)
    (pos_r, rot_r), (pos_w, rot_w) = paths["rocketsim"], paths["warp"]
    position = (pos_r - pos_w).norm(dim=-1).max(dim=0).values
    orientation = orientation_error_deg(rot_r, rot_w).max(dim=0).values
    return ground.on_floor_only(pos_r, rot_r), position, orientation


def test_scripted_floor_cases_follow_rocketsim_tick_by_tick():
    """Settling at rest, full throttle, boost, steering circles (full, half, quarter, with boost), coasting,
    braking into reverse, reversing, powerslides with and without throttle, a short hop from rest and a full
    jump while driving: within the bounds of RocketSim's car at every tick for 2 s."""
    names, state, controls = ground.scripted_ground_cases()
    kept, position, orientation = _worst_gaps(state, controls)
    for name, ok, gap, angle in zip(names, kept.tolist(), position.tolist(), orientation.tolist(), strict=True):
        assert ok, f"{name}: RocketSim's car left the floor's middle or touched the floor with its hitbox"
        assert gap < POSITION_BOUND_UU, f"{name}: {gap:.4g} uu from RocketSim's car at some tick"
        assert angle < ORIENTATION_BOUND_DEG, f"{name}: {angle:.4g} degrees from RocketSim's car at some tick"


def test_random_floor_sequences_follow_rocketsim_tick_by_tick():
    """Random throttle, steer, boost, handbrake, stick and at most one jump per car, held 8 ticks each: the
    sequences that stay on the floor's middle (most of them) within the bounds at every tick for 2 s."""
    state, controls = ground.random_ground_cases(24, seed=1)
    kept, position, orientation = _worst_gaps(state, controls)
    assert int(kept.sum()) >= 16, f"only {int(kept.sum())} of 24 random cases stay on the floor's middle"
    assert float(position[kept].max()) < POSITION_BOUND_UU, position[kept].tolist()
    assert float(orientation[kept].max()) < ORIENTATION_BOUND_DEG, orientation[kept].tolist()


def test_jump_takeoff_counts_the_car_on_the_ground_as_rocketsim_does():
    """Jumping from rest and while driving, the car is on the ground at the same ticks in both engines:
    RocketSim keeps it there while 3 or more wheel rays still reach the floor after the jump impulse."""
    from rocketrl.sim.rocketsim import RocketSimEngine
    from rocketrl.sim.warp.engine import WarpEngine

    names, state, controls = ground.scripted_ground_cases(seconds=1.0)
    cases = [names.index("jump_from_rest"), names.index("full_jump_while_driving")]
    state = ground.select_cases(state, cases)
    controls = controls[:, cases]
    flags = []
    for engine in (RocketSimEngine(2, 1, 0, tick_skip=1, stepping="serial"), WarpEngine(2, 1, 0, tick_skip=1)):
        try:
            engine.reset(torch.ones(2, dtype=torch.bool), state)
            flags.append(torch.stack([engine.step(c).car_on_ground[:, 0] for c in controls]))
        finally:
            engine.close()
    rocketsim, warp = flags
    assert bool(rocketsim[:2].all()), "RocketSim's car should still be on the ground right after the jump"
    assert not bool(rocketsim.all(0).any()), "RocketSim's car should leave the ground"
    assert torch.equal(rocketsim, warp), (rocketsim.int().T.tolist(), warp.int().T.tolist())
