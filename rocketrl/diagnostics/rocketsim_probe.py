"""Where a warp car parts from RocketSim's, and what Bullet's contacts were there: a parity case replayed through
RocketSim's C++ library (scripts/rocketsim_probe, which prints Bullet's manifolds and wheels tick by tick) and
through the warp engine, compared tick by tick.

The state file holds what the probe needs to start where the `rocketsim` package's engine starts: the ball
(position, velocity, angular velocity) and each car's full CarState as the package reads it after the reset
(position, rotation rows forward/right/up, velocities, wheel contacts, jump/flip/boost/supersonic/auto-flip
timers and flags, world and car contacts, demolition, last controls), then the controls of every tick, in
whitespace-separated text. Cases: a random 1v1 state or kickoff of car_contact_parity (by index), a scripted
meeting (car_contact_parity.SCRIPTED) or a scripted wall case (car_wall_parity).

    python -m rocketrl.diagnostics.rocketsim_probe CASE [--car C] [--probe PATH] [--tolerance UU_PER_S]
    python -m rocketrl.diagnostics.rocketsim_probe --gjk N [--gjk-probe PATH] [--gjk-depth UNITS]

prints the first tick where the car's velocity differs by more than the tolerance, each threshold the error
then crosses, and both engines' contacts on the tick before and the tick of the first difference. With --gjk N
it instead compares the box-triangle contact on N random cases (rocketrl.diagnostics.gjk_parity).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import torch

from rocketrl.sim.state import ResetState

TICKS = 480
"""Ticks replayed (4 s)."""
PROBE_BUILD = Path(__file__).resolve().parents[2] / "scripts" / "rocketsim_probe" / "build"
"""Where scripts/rocketsim_probe/build.sh puts the probes by default."""


def parity_case(name: str) -> tuple[ResetState, torch.Tensor, int]:
    """(state of one arena, controls (ticks, 1, cars, 8), orange cars) of a parity case: 'random:N' or
    'kickoff:N' (car_contact_parity's random reports, seeds 1 and 0), a SCRIPTED meeting or a wall case."""
    from rocketrl.diagnostics import car_contact_parity as contacts
    from rocketrl.diagnostics import car_wall_parity as wall
    from rocketrl.env.setters import KickoffSetter, RandomStateSetter

    orange = 1
    if ":" in name:
        start, index = name.split(":")
        if start not in ("random", "kickoff"):
            raise ValueError(f"case {name!r}: use random:N, kickoff:N, a scripted meeting or a wall case")
        generator = torch.Generator().manual_seed(1 if start == "random" else 0)
        setter = KickoffSetter(1, 1) if start == "kickoff" else RandomStateSetter(1, 1)
        state = setter(contacts.RANDOM_SEQUENCES, generator)
        controls = contacts.random_controls(contacts.RANDOM_SEQUENCES, contacts.CONTACT_TIMES[-1], generator)
        i = int(index)
    elif name in contacts.SCRIPTED:
        names, state, controls = contacts.scripted_cases()
        i = names.index(name)
    else:
        names, state, controls = wall.scripted_wall_cases()
        if name not in names:
            raise ValueError(f"case {name!r} is none of {sorted(contacts.SCRIPTED) + names}")
        i = names.index(name)
        orange = 0
    one = {
        f.name: getattr(state, f.name)[i : i + 1]
        for f in dataclasses.fields(state)
        if isinstance(getattr(state, f.name), torch.Tensor)
    }
    state = dataclasses.replace(state, **one, blue_first=torch.ones(1, dtype=torch.bool))
    return state, controls[:, i : i + 1], orange


def _numbers(values) -> str:
    return " ".join(f"{float(v):.9g}" for v in values)


def write_state_file(path: Path, state: ResetState, controls: torch.Tensor, orange: int) -> None:
    """The probe's state file for `state` as the rocketsim package's engine resets it, and `controls`."""
    from rocketrl.sim.rocketsim import RocketSimEngine

    engine = RocketSimEngine(1, 1, orange, tick_skip=1, stepping="serial")
    try:
        engine.reset(torch.ones(1, dtype=torch.bool), state)
        block = engine._blocks[0]
        ball = block.arenas[0].ball.get_state()
        lines = ["ball " + _numbers([*ball.pos.as_tuple(), *ball.vel.as_tuple(), *ball.ang_vel.as_tuple()])]
        lines.append(f"cars {len(block.cars[0])}")
        for car in block.cars[0]:
            s = car.get_state()
            rot, last = s.rot_mat, s.last_controls
            fields = [
                *s.pos.as_tuple(), *rot.forward.as_tuple(), *rot.right.as_tuple(), *rot.up.as_tuple(),
                *s.vel.as_tuple(), *s.ang_vel.as_tuple(), s.is_on_ground, *s.wheels_with_contact,
                s.has_jumped, s.has_double_jumped, s.has_flipped, *s.flip_rel_torque.as_tuple(),
                s.jump_time, s.flip_time, s.is_flipping, s.is_jumping, s.air_time, s.air_time_since_jump,
                s.boost, s.time_spent_boosting, s.boosting_time, s.is_supersonic, s.supersonic_time,
                s.handbrake_val, s.is_auto_flipping, s.auto_flip_timer, s.auto_flip_torque_scale,
                s.has_world_contact, *s.world_contact_normal.as_tuple(), s.car_contact_id,
                s.car_contact_cooldown_timer, s.is_demoed, s.demo_respawn_timer,
                last.throttle, last.steer, last.pitch, last.yaw, last.roll, last.boost, last.jump, last.handbrake,
            ]  # fmt: skip
            lines.append("car " + _numbers(fields))
    finally:
        engine.close()
    lines.append(f"ticks {len(controls)}")
    lines += ["ctl " + _numbers(controls[t, 0].flatten().tolist()) for t in range(len(controls))]
    path.write_text("\n".join(lines) + "\n")


def run_probe(probe: Path, state_file: Path, car: int) -> tuple[dict[int, np.ndarray], dict[int, list[str]]]:
    """Per tick: the watched car's (position, velocity, angular velocity) (9,) and the probe's contact lines."""
    meshes = os.environ.get("ROCKETSIM_MESHES") or str(_meshes_folder())
    out = subprocess.run(
        [str(probe), str(state_file), str(car), "1"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "ROCKETSIM_MESHES": meshes},
    ).stdout
    rows: dict[int, np.ndarray] = {}
    contacts: dict[int, list[str]] = {}
    tick = 0
    for line in out.splitlines():
        if line.startswith("tick"):
            f = line.split()
            tick = int(f[1])
            rows[tick] = np.array([float(x) for x in f[3:6] + f[7:10] + f[11:14]])
            contacts[tick] = []
        else:
            contacts[tick].append(line)
    return rows, contacts


def _meshes_folder() -> Path:
    from rocketrl.sim.meshes import init_rocketsim

    return init_rocketsim()


PLANE_NORMALS = ((0.0, 0.0, 1.0), (0.0, 0.0, -1.0), (1.0, 0.0, 0.0), (-1.0, 0.0, 0.0))
"""The warp engine's arena planes: floor, ceiling, the -x and +x side walls (rocketrl.sim.warp.wheel_rays)."""


def warp_contacts(engine, car: int) -> list[str]:
    """The warp car's arena points this tick as the probe prints Bullet's: the point on the car where the point was
    made (the point on the arena + normal x distance), on the arena (uu), normal, distance (uu) and normal impulse
    (Bullet units)."""
    from rocketrl.sim.warp.layout import CAR_MESH_MANIFOLDS, MANIFOLD_POINTS

    t = engine.t
    lines = []
    for m in range(CAR_MESH_MANIFOLDS):
        for k in range(int(t["car_mesh_count"][0, car, m])):
            r = t["car_mesh_points"][0, car, m * MANIFOLD_POINTS + k].double()
            on_car = r[3:6] + r[6:9] * r[10]
            lines.append(
                f"  warp mesh {int(t['car_mesh_part'][0, car, m])} A {on_car.numpy().round(3)} "
                f"B {r[3:6].numpy().round(3)} n {r[6:9].numpy().round(4)} d {float(r[10]):.4f} "
                f"imp {float(r[9]) / 50:.4f}"
            )
    for plane in range(4):
        if int(t["car_plane_count"][0, car, plane]):
            r = t["car_plane_points"][0, car, plane].double()
            on_car = r[3:6] + torch.tensor(PLANE_NORMALS[plane], dtype=torch.float64) * r[7]
            lines.append(
                f"  warp plane {plane} A {on_car.numpy().round(3)} B {r[3:6].numpy().round(3)} "
                f"d {float(r[7]):.4f} imp {float(r[6]) / 50:.4f}"
            )
    return lines


def compare(case: str, car: int, probe: Path, tolerance: float, state_file: Path) -> str:
    """The report described in the module docstring."""
    from rocketrl.sim.warp.engine import WarpEngine

    state, controls, orange = parity_case(case)
    write_state_file(state_file, state, controls[:TICKS], orange)
    reference, reference_contacts = run_probe(probe, state_file, car)
    engine = WarpEngine(1, 1, orange, tick_skip=1)
    lines = [f"{case}, car {car}: warp against RocketSim's C++ library, tick by tick"]
    try:
        engine.reset(torch.ones(1, dtype=torch.bool), state)
        before: list[str] = []
        first = None
        worst = 0.0
        for t in range(min(TICKS, len(controls))):
            s = engine.step(controls[t])
            tick = t + 1
            ours = np.concatenate([s.car_pos[0, car], s.car_vel[0, car], s.car_ang_vel[0, car]])
            gap = np.abs(ours - reference[tick])
            dv = float(gap[3:6].max())
            if first is None and dv > tolerance:
                first = tick
                lines.append(f"first difference at tick {tick}: position {gap[:3].max():.4f} uu, velocity {dv:.4f}")
                lines += ["RocketSim, tick before:", *reference_contacts.get(tick - 1, [])]
                lines += ["warp, tick before:", *before]
                lines += [f"RocketSim, tick {tick}:", *reference_contacts[tick], f"warp, tick {tick}:"]
                lines += warp_contacts(engine, car)
            for threshold in (1.0, 10.0, 100.0):
                if worst <= threshold < dv:
                    lines.append(f"velocity difference past {threshold:g} uu/s at tick {tick}")
            worst = max(worst, dv)
            if first is None:
                before = warp_contacts(engine, car)
    finally:
        engine.close()
    if first is None:
        lines.append(f"no tick differs by more than {tolerance} uu/s")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "case", nargs="?", help="random:N, kickoff:N, a scripted meeting (side_bump, ...) or a wall case"
    )
    parser.add_argument("--car", type=int, default=0)
    parser.add_argument("--probe", type=Path, default=PROBE_BUILD / "probe", help="the built probe")
    parser.add_argument("--tolerance", type=float, default=0.02, help="velocity difference that counts (uu/s)")
    parser.add_argument("--state-file", type=Path, default=Path("rocketsim_probe_state.txt"))
    parser.add_argument("--gjk", type=int, default=0, metavar="N", help="compare the box-triangle contact on N cases")
    parser.add_argument("--gjk-probe", type=Path, default=PROBE_BUILD / "gjk_probe", help="the built gjk_probe")
    parser.add_argument(
        "--gjk-depth", type=float, default=0.01, help="how deep (Bullet units) --gjk's triangles reach into the box"
    )
    args = parser.parse_args()
    if args.gjk > 0:
        from rocketrl.diagnostics.gjk_parity import compare as compare_gjk

        if not args.gjk_probe.exists():
            raise SystemExit(f"no gjk_probe at {args.gjk_probe}: build it with bash scripts/rocketsim_probe/build.sh")
        print(json.dumps(compare_gjk(args.gjk_probe, args.gjk, args.gjk_depth), indent=2))
        return
    if args.case is None:
        parser.error("give a CASE, or --gjk N")
    if not args.probe.exists():
        raise SystemExit(f"no probe at {args.probe}: build it with bash scripts/rocketsim_probe/build.sh")
    print(compare(args.case, args.car, args.probe, args.tolerance, args.state_file))


if __name__ == "__main__":
    main()
