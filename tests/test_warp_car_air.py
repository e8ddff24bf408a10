"""The warp engine's airborne car against RocketSim's, tick by tick: the same states and controls through
both (tick_skip 1), cars high in the arena so that nothing touches them for the whole second."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("warp")

from rocketrl.diagnostics import car_air_parity as air  # noqa: E402

POSITION_BOUND_UU = 0.01
"""Largest distance between the two cars at any tick: float32 rounding (measured: 0.002 uu on these cases,
0.009 uu over the benchmark's 128 random sequences)."""
ORIENTATION_BOUND_DEG = 0.002
"""Largest angle between the two cars' orientations at any tick (measured: 0.00025 degrees on these
cases, 0.0007 degrees over the benchmark's 128 random sequences)."""


def _worst_gaps(state, controls) -> tuple[torch.Tensor, torch.Tensor]:
    """(A,) largest position gap (uu) and (A,) largest orientation gap (degrees) over every tick."""
    paths = air.car_paths(state, controls)
    assert bool(air.inside_safe_box(paths["rocketsim"][0]).all()), "a car left the contact-free box"
    (pos_r, rot_r), (pos_w, rot_w) = paths["rocketsim"], paths["warp"]
    position = (pos_r - pos_w).norm(dim=-1).max(dim=0).values
    orientation = air.orientation_error_deg(rot_r, rot_w).max(dim=0).values
    return position, orientation


def test_airborne_cars_follow_rocketsim_tick_by_tick():
    """Random airborne cars (stick, throttle, boost and jump presses held 8 ticks each, flips and double
    jumps from the air among them) stay within the bounds of RocketSim's at every tick for 1 s."""
    state, controls = air.random_air_cases(12, seed=1)
    position, orientation = _worst_gaps(state, controls)
    assert float(position.max()) < POSITION_BOUND_UU, position.tolist()
    assert float(orientation.max()) < ORIENTATION_BOUND_DEG, orientation.tolist()


def test_flips_and_double_jump_from_the_air_follow_rocketsim_tick_by_tick():
    """Every scripted case (drop, boost, air roll, flips forward / back / side / diagonal, a flip cancel,
    a double jump) within the same bounds at every tick for 1 s."""
    names, state, controls = air.scripted_air_cases()
    position, orientation = _worst_gaps(state, controls)
    for name, gap, angle in zip(names, position.tolist(), orientation.tolist(), strict=True):
        assert gap < POSITION_BOUND_UU, f"{name}: {gap:.4g} uu from RocketSim's car at some tick"
        assert angle < ORIENTATION_BOUND_DEG, f"{name}: {angle:.4g} degrees from RocketSim's car at some tick"
