"""Two-car parity: kickoffs, random 1v1 states and scripted meetings (bumps, a demolition, a 50/50) run
through RocketSim and the warp engine tick by tick from the same states and controls (tick_skip 1, controls
held CONTROL_HOLD ticks as with the env's tick skip).

Unlike the single-car reports (car_air_parity, car_ground_parity, car_wall_parity) everything meets here:
car-ball hits, car-car bumps and demolitions, boost pads, the arena. Errors per car and for the ball:
position (uu) and, for the cars, orientation (degrees) at CONTACT_TIMES seconds, and the position error
relative to the distance the car (or ball) travelled in RocketSim so far (the parity bound "within 1% of
the path", docs/results/engine-parity.md). Blue's car is added first in both engines (RocketSim resolves
car-car contacts in that order).
Used by tests/test_warp_car_contacts.py and benchmarks/parity.py.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from rocketrl.diagnostics.car_air_parity import orientation_error_deg, rotation_matrices, tick_states
from rocketrl.env.setters import KickoffSetter, RandomStateSetter
from rocketrl.sim.state import ResetState

TICKS_PER_SECOND = 120
CONTROL_HOLD = 8
CONTACT_TIMES = (0.5, 1.0, 4.0)
"""Seconds after the start at which errors are measured; the last is the window's end."""
RANDOM_SEQUENCES = 64
WITHIN_UU = 1.0
WITHIN_AT_SECONDS = 1.0
BODIES = ("car_0", "car_1", "ball")
END_PATH_SHARE = 0.05
"""The end target: each car within this share of its RocketSim path at CONTACT_TIMES[-1]."""
KNIFE_EDGE_NUDGES = 32
"""Nudged starts per knife-edge check (knife_edge)."""

SCRIPTED: dict[str, tuple[tuple, tuple, tuple, tuple]] = {
    # name: ((blue x, y, yaw, speed), (orange x, y, yaw, speed), (ball x, y),
    #        (blue throttle, blue boost, orange throttle, orange boost))
    "side_bump": ((-1200.0, 0.0, 0.0, 1400.0), (0.0, 0.0, math.pi / 2, 0.0), (0.0, 3000.0), (1, 0, 0, 0)),
    "head_on_bump": ((-900.0, 0.0, 0.0, 1000.0), (900.0, 0.0, math.pi, 1000.0), (0.0, 3000.0), (1, 0, 1, 0)),
    "demolition": ((-1500.0, 0.0, 0.0, 2250.0), (0.0, 0.0, math.pi / 2, 0.0), (0.0, 3000.0), (1, 1, 0, 0)),
    "fifty_fifty": ((0.0, -900.0, math.pi / 2, 1200.0), (0.0, 900.0, -math.pi / 2, 1200.0), (0.0, 0.0), (1, 1, 1, 1)),
    "hit_rolling_ball": ((0.0, -1500.0, math.pi / 2, 1000.0), (3000.0, 4000.0, 0.0, 0.0), (0.0, 0.0), (1, 1, 0, 0)),
}
"""Scripted meetings on the floor: each car's (x, y, yaw (rad), speed along its nose (uu/s)), the ball's
(x, y) at rest on the floor, and (throttle, boost) of each car held for the whole window. `demolition`
arrives supersonic (over 2200 uu/s) nose first, so RocketSim demolishes the orange car."""

SENSITIVITY_SHIFT_UU = 0.001
"""How far (uu, along x) the blue car's start is moved for the reference's own sensitivity: each scripted
meeting is also run through RocketSim from that start and measured against RocketSim from the exact one, the
error no engine short of RocketSim's own float rounding can stay under."""


def contact_paths(state: ResetState, controls: torch.Tensor) -> dict[str, dict[str, torch.Tensor]]:
    """Per engine ("rocketsim", "warp"): "pos" (ticks + 1, A, 3, 3) float64 positions of car 0, car 1 and the
    ball; "rot" (ticks + 1, A, 2, 3, 3) float64 cars' rotation matrices; "demolished" (ticks + 1, A, 2) bool;
    from the 1v1 `state` under controls (ticks, A, 2, 8), one tick a step."""
    # Blue first in both engines: RocketSim resolves car-car contacts in the order cars were added.
    state = dataclasses.replace(state, blue_first=torch.ones(state.num_arenas, dtype=torch.bool))
    out = {}
    for name, states in tick_states(state, controls, orange_size=1).items():
        out[name] = {
            "pos": torch.stack([torch.cat([s.car_pos, s.ball_pos[:, None]], dim=1).double() for s in states]),
            "rot": torch.stack([rotation_matrices(s) for s in states]),
            "demolished": torch.stack([s.car_demolished for s in states]),
        }
    return out


def _travelled(pos: torch.Tensor) -> torch.Tensor:
    """(T, A, B) distance (uu) each body has travelled up to each tick, from positions (T, A, B, 3)."""
    steps = (pos[1:] - pos[:-1]).norm(dim=-1)
    return torch.cat([torch.zeros_like(steps[:1]), steps.cumsum(0)])


def errors_at(paths: dict, ticks: int) -> dict[str, torch.Tensor]:
    """(A, 3) position errors (uu) of car 0, car 1, ball; (A, 3) the same relative to the RocketSim path
    length so far (0 where nothing moved); (A, 2) cars' orientation errors (degrees); after `ticks` ticks."""
    rs, wa = paths["rocketsim"], paths["warp"]
    position = (rs["pos"][ticks] - wa["pos"][ticks]).norm(dim=-1)
    path = _travelled(rs["pos"])[ticks]
    relative = torch.where(path > 1.0, position / path.clamp(min=1.0), torch.zeros_like(position))
    return {
        "position": position,
        "relative": relative,
        "orientation": orientation_error_deg(rs["rot"][ticks], wa["rot"][ticks]),
    }


def _summary(values: torch.Tensor) -> dict[str, float]:
    return {"median": float(values.median()), "p90": float(torch.quantile(values, 0.9)), "max": float(values.max())}


def errors_by_time(paths: dict) -> dict:
    """Per time in CONTACT_TIMES and body: median / p90 / max of the position error (uu), its share of the path,
    and the cars' orientation error (degrees); then the share of sequences with both cars within WITHIN_UU at
    WITHIN_AT_SECONDS, and the largest share of the path at 1 s and at the end."""
    report: dict = {}
    for seconds in CONTACT_TIMES:
        err = errors_at(paths, int(round(seconds * TICKS_PER_SECOND)))
        report[f"{seconds}s"] = {
            body: {
                "position_uu": _summary(err["position"][:, b]),
                "path_share": _summary(err["relative"][:, b]),
                **({"orientation_deg": _summary(err["orientation"][:, b])} if b < 2 else {}),
            }
            for b, body in enumerate(BODIES)
        }
    err = errors_at(paths, int(round(WITHIN_AT_SECONDS * TICKS_PER_SECOND)))
    report[f"share_cars_within_{WITHIN_UU}uu_at_{WITHIN_AT_SECONDS}s"] = float(
        (err["position"][:, :2] <= WITHIN_UU).all(1).float().mean()
    )
    report[f"share_cars_within_1%_of_path_at_{WITHIN_AT_SECONDS}s"] = float(
        (err["relative"][:, :2] <= 0.01).all(1).float().mean()
    )
    end = errors_at(paths, int(round(CONTACT_TIMES[-1] * TICKS_PER_SECOND)))
    report[f"share_cars_within_5%_of_path_at_{CONTACT_TIMES[-1]}s"] = float(
        (end["relative"][:, :2] <= END_PATH_SHARE).all(1).float().mean()
    )
    return report


def random_controls(count: int, seconds: float, generator: torch.Generator) -> torch.Tensor:
    """(ticks, count, 2, 8) controls for both cars, each held CONTROL_HOLD ticks: throttle forward half the
    time, else 0, -1 or uniform; steer and stick 0, +-1 or uniform; boost 1/3, handbrake 1/8, jump 1/8."""
    holds = math.ceil(seconds * TICKS_PER_SECOND / CONTROL_HOLD)
    controls = torch.zeros(holds, count, 2, 8)
    for axis in (0, 1, 2, 3, 4):
        kind = torch.randint(0, 4, (holds, count, 2), generator=generator)
        uniform = torch.rand(holds, count, 2, generator=generator) * 2.0 - 1.0
        controls[..., axis] = torch.where(
            kind == 0, 0.0, torch.where(kind == 1, 1.0, torch.where(kind == 2, -1.0, uniform))
        )
    forward = torch.rand(holds, count, 2, generator=generator) < 0.5
    controls[..., 0] = torch.where(forward, 1.0, controls[..., 0])
    controls[..., 5] = (torch.rand(holds, count, 2, generator=generator) < 1 / 8).float()
    controls[..., 6] = (torch.rand(holds, count, 2, generator=generator) < 1 / 3).float()
    controls[..., 7] = (torch.rand(holds, count, 2, generator=generator) < 1 / 8).float()
    ticks = int(round(seconds * TICKS_PER_SECOND))
    return controls.repeat_interleave(CONTROL_HOLD, dim=0)[:ticks]


def random_sequences(start: str, count: int = RANDOM_SEQUENCES, seed: int = 0) -> tuple[ResetState, torch.Tensor]:
    """`count` random 1v1 starts and their controls (ticks, count, 2, 8) of CONTACT_TIMES[-1] seconds: from
    kickoffs (`start` "kickoff": the five spawns in random order) or random states ("random": ball anywhere and
    moving, cars on the floor anywhere at any speed)."""
    generator = torch.Generator().manual_seed(seed)
    setter = KickoffSetter(1, 1) if start == "kickoff" else RandomStateSetter(1, 1)
    state = setter(count, generator)
    return state, random_controls(count, CONTACT_TIMES[-1], generator)


def random_report(start: str, count: int = RANDOM_SEQUENCES, seed: int = 0, paths: dict | None = None) -> dict:
    """Errors of the `count` random_sequences (their contact_paths, run here unless given)."""
    if paths is None:
        paths = contact_paths(*random_sequences(start, count, seed))
    demos = {name: int(p["demolished"].any(0).sum()) for name, p in paths.items()}
    return {"sequences": count, "control_hold_ticks": CONTROL_HOLD, "cars_demolished": demos} | errors_by_time(paths)


def end_path_shares(paths: dict) -> torch.Tensor:
    """(A,) the larger of the two cars' position errors at CONTACT_TIMES[-1] as a share of their RocketSim path."""
    return errors_at(paths, int(round(CONTACT_TIMES[-1] * TICKS_PER_SECOND)))["relative"][:, :2].amax(-1)


def knife_edge(state: ResetState, controls: torch.Tensor, arena: int, nudges: int = KNIFE_EDGE_NUDGES) -> dict:
    """Whether sequence `arena` of (state, controls) is a knife edge at CONTACT_TIMES[-1], and how warp meets it.

    The start is nudged by up to 2 ulps `nudges` times (rocketrl.diagnostics.cpu_arithmetic.nudged) and run
    through both engines. "rocketsim_parted": how many nudged RocketSim runs end over END_PATH_SHARE of their path
    from RocketSim's unnudged run (rounding alone sends them elsewhere); "warp_shadow_share": the unnudged warp
    run's end error (the larger car's share of the path) to the nearest RocketSim run of the ensemble."""
    from rocketrl.diagnostics.cpu_arithmetic import nudged

    ensemble = nudged(state.index([arena]), nudges + 1)
    paths = contact_paths(ensemble, controls[:, [arena] * (nudges + 1)])
    end = int(round(CONTACT_TIMES[-1] * TICKS_PER_SECOND))
    rocketsim = paths["rocketsim"]["pos"][end, :, :2]  # (M, 2 cars, 3)
    path = _travelled(paths["rocketsim"]["pos"])[end, :, :2].clamp(min=1.0)  # (M, 2)
    parted = ((rocketsim - rocketsim[0]).norm(dim=-1) / path).amax(-1) > END_PATH_SHARE
    shadow = ((rocketsim - paths["warp"]["pos"][end, 0, :2]).norm(dim=-1) / path).amax(-1)
    return {"nudges": nudges, "rocketsim_parted": int(parted.sum()), "warp_shadow_share": float(shadow.min())}


def scripted_cases(seconds: float = CONTACT_TIMES[-1]) -> tuple[list[str], ResetState, torch.Tensor]:
    """The SCRIPTED meetings: names, their 1v1 states and their controls (ticks, cases, 2, 8)."""
    names = list(SCRIPTED)
    k = len(names)
    state = ResetState(
        ball_pos=torch.zeros(k, 3), ball_vel=torch.zeros(k, 3), ball_ang_vel=torch.zeros(k, 3),
        car_pos=torch.zeros(k, 2, 3), car_vel=torch.zeros(k, 2, 3), car_ang_vel=torch.zeros(k, 2, 3),
        car_rotation=torch.zeros(k, 2, 3), car_boost=torch.full((k, 2), 100.0),
    )  # fmt: skip
    ticks = int(round(seconds * TICKS_PER_SECOND))
    controls = torch.zeros(ticks, k, 2, 8)
    for i, name in enumerate(names):
        blue, orange, ball, (blue_throttle, blue_boost, orange_throttle, orange_boost) = SCRIPTED[name]
        for c, (x, y, yaw, speed) in enumerate((blue, orange)):
            state.car_pos[i, c] = torch.tensor([x, y, 17.0])
            state.car_rotation[i, c, 1] = yaw
            state.car_vel[i, c] = torch.tensor([math.cos(yaw) * speed, math.sin(yaw) * speed, 0.0])
        state.ball_pos[i] = torch.tensor([ball[0], ball[1], 93.15])
        controls[:, i, 0, 0], controls[:, i, 0, 6] = blue_throttle, blue_boost
        controls[:, i, 1, 0], controls[:, i, 1, 6] = orange_throttle, orange_boost
    return names, state, controls


def with_blue_moved(state: ResetState, shift_uu: float) -> ResetState:
    """`state` followed by a copy of it whose blue car starts `shift_uu` further along x (2K arenas)."""
    moved = state.car_pos.clone()
    moved[:, 0, 0] += shift_uu
    both = {
        f.name: torch.cat([getattr(state, f.name), getattr(state, f.name)])
        for f in dataclasses.fields(state)
        if isinstance(getattr(state, f.name), torch.Tensor)
    }
    both["car_pos"] = torch.cat([state.car_pos, moved])
    return dataclasses.replace(state, **both)


def arenas_of(path: dict[str, torch.Tensor], start: int, stop: int) -> dict[str, torch.Tensor]:
    """One engine's paths (contact_paths) of arenas start..stop."""
    return {key: value[:, start:stop] for key, value in path.items()}


def scripted_report() -> dict:
    """Per SCRIPTED meeting: per time, each body's position error (uu) and share of its path, the cars'
    orientation errors (degrees), and under "rocketsim_moved" the same errors of RocketSim started with the blue
    car SENSITIVITY_SHIFT_UU aside against RocketSim (how far the reference parts from itself); and the tick each
    car was first demolished in each engine (None: never)."""
    names, state, controls = scripted_cases()
    k = len(names)
    all_paths = contact_paths(with_blue_moved(state, SENSITIVITY_SHIFT_UU), torch.cat([controls, controls], dim=1))
    paths = {name: arenas_of(p, 0, k) for name, p in all_paths.items()}
    # errors_at measures its "warp" paths against its "rocketsim" ones: here RocketSim moved against RocketSim.
    self_paths = {"rocketsim": paths["rocketsim"], "warp": arenas_of(all_paths["rocketsim"], k, 2 * k)}
    report: dict = {name: {"rocketsim_moved": {"shift_uu": SENSITIVITY_SHIFT_UU}} for name in names}
    moved = {name: report[name]["rocketsim_moved"] for name in names}
    for seconds in CONTACT_TIMES:
        ticks = int(round(seconds * TICKS_PER_SECOND))
        for err, into in ((errors_at(paths, ticks), report), (errors_at(self_paths, ticks), moved)):
            for i, name in enumerate(names):
                into[name][f"{seconds}s"] = {
                    body: {
                        "position_uu": float(err["position"][i, b]),
                        "path_share": float(err["relative"][i, b]),
                        **({"orientation_deg": float(err["orientation"][i, b])} if b < 2 else {}),
                    }
                    for b, body in enumerate(BODIES)
                }
    for engine, p in paths.items():
        first = p["demolished"].float().argmax(0)  # (A, 2) first tick demolished, 0 when never
        ever = p["demolished"].any(0)
        for i, name in enumerate(names):
            report[name][f"demolished_tick_{engine}"] = [int(first[i, c]) if ever[i, c] else None for c in range(2)]
    return report


def car_contact_report() -> dict:
    """{"kickoff": random kickoffs, "random": random 1v1 states, "scripted": the meetings}."""
    return {
        "kickoff": random_report("kickoff"),
        "random": random_report("random", seed=1),
        "scripted": scripted_report(),
    }
