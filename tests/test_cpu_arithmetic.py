"""One result per CPU maker: the warp engine's CPU state after a fixed game is the one recorded on a CPU of this
one's maker, bit for bit, whatever target its kernels are built for; Warp keeps one CPU's kernel objects from
another; RocketSim's CPU dependence is rounding (rocketrl.diagnostics.cpu_arithmetic)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

wp = pytest.importorskip("warp")

from rocketrl.diagnostics import cpu_arithmetic  # noqa: E402
from rocketrl.diagnostics.car_ground_parity import select_cases  # noqa: E402
from rocketrl.sim.state import ResetState  # noqa: E402

DATA = Path(__file__).parent / "data"
KNIFE_EDGES = ("back_wall_drive_down", "side_wall_boost_steer", "side_wall_coast")
"""Wall cases whose outcome rounding can tip (tests/test_warp_car_wall.py: KNIFE_EDGE, and UNTIL, where a wheel ray
lands within a hair of a facet edge)."""
ROCKETSIM_ROUNDING_UU = 0.02
"""Largest distance between RocketSim's runs of one scripted wall case under two arithmetics over 4 s, knife edges
aside (measured: 0.012 uu, steer_up_side_wall, Intel Xeon against rsqrtss exact)."""


@pytest.fixture(scope="module")
def native_digest() -> str:
    return cpu_arithmetic.state_digest(cpu_arithmetic.fixed_game())


def test_fixed_game_is_the_recorded_state_bit_for_bit(native_digest):
    """The digest recorded on a CPU of this one's maker (tests/data/warp_fixed_game.json names the CPU) is this
    CPU's, for the same Warp (its LLVM builds the kernels; another Warp release may round otherwise and is
    re-recorded). Intel and AMD CPUs step the game to different bits, so each maker has its own digest."""
    recorded = json.loads((DATA / "warp_fixed_game.json").read_text())
    if recorded["warp"] != wp.config.version:
        pytest.skip(f"recorded with Warp {recorded['warp']}, here {wp.config.version}: benchmarks/cpu_determinism.py")
    here = cpu_arithmetic.cpu_summary()
    entry = cpu_arithmetic.recorded_digest(recorded, here["vendor"])
    if entry is None:
        pytest.skip(f"no digest recorded on a {here['vendor']} CPU: python benchmarks/cpu_determinism.py --record")
    assert native_digest == entry["digest"], (
        f"recorded on {entry['recorded_on']}, differs on {here} (a change to the engine's physics re-records it on"
        " each maker's CPU: python benchmarks/cpu_determinism.py --record tests/data)"
    )


def test_both_x86_64_makers_have_a_recorded_digest():
    """The suite checks the fixed game's bits on Intel and on AMD CPUs alike: each maker has a recorded digest."""
    recorded = json.loads((DATA / "warp_fixed_game.json").read_text())
    for vendor in ("GenuineIntel", "AuthenticAMD"):
        entry = cpu_arithmetic.recorded_digest(recorded, vendor)
        assert entry is not None and len(entry["digest"]) == 64, vendor
    assert cpu_arithmetic.recorded_digest(recorded, "unknown") is None


def test_a_generic_x86_64_build_gives_the_native_bits(native_digest):
    """Kernels built for baseline x86-64 (SSE2, no FMA) step the fixed game to the same bits as the host build."""
    code = "from rocketrl.diagnostics import cpu_arithmetic as c; print(c.state_digest(c.fixed_game()))"
    env = {**os.environ, "ROCKETRL_WARP_CPU_TARGET": "generic"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == native_digest


def test_kernel_objects_are_kept_apart_per_cpu_target():
    """Warp names each cached CPU object by its target (for -march=native, the host's instruction sets), so a
    cache shared between machines never loads one CPU's build on another; the engine's module has its object."""
    from rocketrl.sim.warp import kernels
    from rocketrl.sim.warp.engine import WarpEngine

    WarpEngine(1, 1, 1, device="cpu").close()
    native = wp.get_cpu_kernel_cache_key(cpu_compiler_flags=kernels.cpu_compiler_flags("native"))
    generic = wp.get_cpu_kernel_cache_key(cpu_compiler_flags=kernels.cpu_compiler_flags("generic"))
    assert native != generic
    target_hash = native.rsplit("-", 1)[-1]
    objects = list(Path(wp.config.kernel_cache_dir).glob(f"wp_rocketrl.sim.warp.kernels_*/*cpu{target_hash}*.o"))
    assert objects, f"no kernel object for target {target_hash} in {wp.config.kernel_cache_dir}"
    assert "instruction_sets" in cpu_arithmetic.kernel_target()


def test_rocketsim_differs_between_cpus_by_rounding_only():
    """RocketSim's recorded runs under each arithmetic (tests/data/rocketsim_wall_paths.json) and its run here
    differ by rounding alone: within ROCKETSIM_ROUNDING_UU over 4 s on every scripted wall case but the knife
    edges. On a CPU of another maker this checks its RocketSim against the recorded CPU's."""
    from rocketrl.diagnostics import car_wall_parity as wall
    from rocketrl.sim.rocketsim import RocketSimEngine

    names, state, controls = wall.scripted_wall_cases()
    engine = RocketSimEngine(state.num_arenas, 1, 0, tick_skip=1, stepping="serial")
    try:
        states = [engine.reset(torch.ones(state.num_arenas, dtype=torch.bool), state)]
        states += [engine.step(c) for c in controls]
    finally:
        engine.close()
    here = torch.stack([s.car_pos[:, 0] for s in states]).numpy()
    with np.load(DATA / "rocketsim_wall_paths.npz") as recorded:
        runs = {key.removesuffix("_pos"): recorded[key] for key in recorded.files if key.endswith("_pos")}
    assert {"native", "exact_rsqrt"} <= set(runs), sorted(runs)
    keep = [i for i, n in enumerate(names) if n not in KNIFE_EDGES]
    for name, pos in runs.items():
        gap = np.linalg.norm(pos[:, keep].astype(np.float64) - here[:, keep], axis=-1).max()
        assert gap < ROCKETSIM_ROUNDING_UU, f"{name}: {gap:.4g} uu from RocketSim here"
    # The recorded arithmetics themselves differ (the CPU dependence is real, from the first ticks).
    assert not np.array_equal(runs["native"], runs["exact_rsqrt"])


def test_rocketsim_normalises_with_the_cpus_rsqrt_estimate():
    """The cause, where it is: RocketSim's machine code holds SSE `rsqrtss` (Bullet's vector normalise), whose
    last bits are the CPU maker's own."""
    assert cpu_arithmetic.rsqrt_sites(cpu_arithmetic.rocketsim_library()) > 0


def test_nudged_starts_move_only_the_cars_and_by_ulps():
    state = ResetState(
        ball_pos=torch.zeros(1, 3), ball_vel=torch.zeros(1, 3), ball_ang_vel=torch.zeros(1, 3),
        car_pos=torch.tensor([[[100.0, -2000.0, 17.0]]]), car_vel=torch.zeros(1, 1, 3),
        car_ang_vel=torch.zeros(1, 1, 3), car_rotation=torch.zeros(1, 1, 3), car_boost=torch.full((1, 1), 33.0),
    )  # fmt: skip
    ensemble = cpu_arithmetic.nudged(state, 16, ulps=2)
    assert ensemble.num_arenas == 16 and torch.equal(ensemble.car_pos[0], state.car_pos[0])
    ulp = torch.tensor([100.0, -2000.0, 17.0]).abs().log2().floor().exp2() * 2.0**-23  # float32 spacing here
    moved = (ensemble.car_pos - state.car_pos).abs() / ulp
    assert float(moved.max()) <= 2.0 and float(moved.max()) > 0.0
    assert torch.equal(ensemble.car_boost, state.car_boost.expand(16, 1)) and torch.equal(
        ensemble.ball_pos[3], state.ball_pos[0]
    )
    assert select_cases(ensemble, [5]).num_arenas == 1


def test_shadow_gap_is_the_largest_distance_to_each_member():
    path = torch.zeros(4, 3)
    ensemble = torch.zeros(4, 2, 3)
    ensemble[2, 0, 0] = 3.0  # member 0 strays 3 uu at tick 2
    ensemble[:, 1, 1] = 0.5  # member 1 is 0.5 uu away throughout
    assert cpu_arithmetic.shadow_gaps(path, ensemble).tolist() == [3.0, 0.5]
