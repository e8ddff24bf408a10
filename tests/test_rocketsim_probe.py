"""The RocketSim probe's state file (rocketrl.diagnostics.rocketsim_probe): what scripts/rocketsim_probe/probe.cpp
reads, line by line and field by field, from the rocketsim package's state after the reset."""

from __future__ import annotations

import pytest

pytest.importorskip("RocketSim")

from rocketrl.diagnostics.rocketsim_probe import parity_case, write_state_file  # noqa: E402

CAR_FIELDS = 3 + 9 + 3 + 3 + 1 + 4 + 3 + 3 + 2 + 2 + 5 + 1 + 2 + 1 + 2 + 1 + 3 + 2 + 1 + 1 + 8
"""probe.cpp's reads per car: position, rotation rows, velocity, angular velocity, on ground, 4 wheels, 3 jump
flags, flip torque, jump and flip times, 2 flags, air times, boost and its 2 timers, supersonic flag and time,
handbrake, auto-flip flag, its 2 values, world contact flag and normal, car contact id and cooldown, demolished
flag, respawn timer, last controls (5 axes, 3 buttons)."""


@pytest.mark.parametrize("case, cars", [("random:13", 2), ("side_bump", 2), ("back_wall_drive_down", 1)])
def test_the_state_file_holds_the_reset_state_and_every_tick(tmp_path, case, cars):
    state, controls, orange = parity_case(case)
    path = tmp_path / "state.txt"
    write_state_file(path, state, controls[:10], orange)
    lines = path.read_text().splitlines()
    ball = lines[0].split()
    assert ball[0] == "ball" and len(ball) == 10
    assert [float(x) for x in ball[1:4]] == pytest.approx(state.ball_pos[0].tolist(), abs=0.01)
    assert lines[1] == f"cars {cars}"
    for c in range(cars):
        fields = lines[2 + c].split()
        assert fields[0] == "car" and len(fields) == 1 + CAR_FIELDS
        assert [float(x) for x in fields[1:4]] == pytest.approx(state.car_pos[0, c].tolist(), abs=0.01)
    assert lines[2 + cars] == "ticks 10"
    steps = lines[3 + cars :]
    assert len(steps) == 10 and all(s.split()[0] == "ctl" and len(s.split()) == 1 + 8 * cars for s in steps)
    assert [float(x) for x in steps[0].split()[1:]] == pytest.approx(controls[0, 0].flatten().tolist())


def test_an_unknown_case_names_the_cases():
    with pytest.raises(ValueError, match="side_bump"):
        parity_case("no_such_case")


def test_the_gjk_cases_lie_where_they_are_meant_to():
    """rocketrl.diagnostics.gjk_parity's cases: a level triangle under a flat box (axis-aligned, then yawed), then
    triangles near the box's surface, from the given depth inside its core to 0.06 units out."""
    import numpy as np

    gjk_parity = pytest.importorskip("rocketrl.diagnostics.gjk_parity")
    centres, bases, tris = gjk_parity.random_cases(40, depth=0.3, seed=3)
    assert centres.shape == (40, 3) and bases.shape == (40, 3, 3) and tris.shape == (40, 3, 3)
    identity = np.broadcast_to(np.eye(3), (40, 3, 3))
    np.testing.assert_allclose(np.einsum("nij,nkj->nik", bases, bases), identity, atol=1e-9)  # rotations
    flat = np.arange(40) % 4 < 2
    assert (np.ptp(tris[flat, :, 2], axis=1) == 0.0).all()  # level triangles
    np.testing.assert_array_equal(bases[::4], identity[::4])  # axis-aligned boxes
    assert (bases[flat, 2, 2] == 1.0).all()  # yawed only
