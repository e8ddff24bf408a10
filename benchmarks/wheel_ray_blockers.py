"""How often a car's wheel rays would meet the ball or another car, in recorded games.

RocketSim casts each wheel's suspension ray through its whole Bullet world (btDefaultVehicleRaycaster: the closest
hit, the car itself ignored), so a wheel can stand on the ball or on another car's roof; the warp engine's rays
meet only the arena (rocketrl.sim.warp.wheel_rays). This counts, in replays written by `rocketrl eval --replays
DIR` (one state every tick_skip ticks), the live car-states where some wheel ray (from its suspension connection
point along the car's -up, RocketSim's ray length) meets the ball's sphere or another live car's hitbox within
its length: an upper bound on how often the two engines' rays could differ, since the arena may lie nearer.
Prints one JSON object:

    rocketrl eval --checkpoint BOT --opponents rule_policy --num-games 20 --replays DIR
    python benchmarks/wheel_ray_blockers.py DIR [DIR ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from rocketrl.infra.bench_report import machine_info
from rocketrl.sim import arena


def _octane() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The warp engine's Octane (rocketrl.sim.warp.constants, RocketSim's figures): wheel connection points (4, 3)
    in the car's axes (forward, left, up; wheel k as wheel_rays.wheel_offset(k)), ray lengths (4,) as
    wheel_rays.ray_length(k), the hitbox's half extents (3,) and centre offset (3,), all uu."""
    from rocketrl.sim.warp import constants as k

    front, back = list(k.FRONT_WHEEL_OFFSET), list(k.BACK_WHEEL_OFFSET)
    offsets = torch.tensor([front, [front[0], -front[1], front[2]], back, [back[0], -back[1], back[2]]])
    front_ray = k.FRONT_SUSPENSION_REST + k.MAX_SUSPENSION_TRAVEL + k.FRONT_WHEEL_RADIUS - k.SUSPENSION_SUBTRACTION
    back_ray = k.BACK_SUSPENSION_REST + k.MAX_SUSPENSION_TRAVEL + k.BACK_WHEEL_RADIUS - k.SUSPENSION_SUBTRACTION
    lengths = torch.tensor([front_ray, front_ray, back_ray, back_ray])
    return offsets, lengths, torch.tensor(list(k.HITBOX_HALF)), torch.tensor(list(k.HITBOX_OFFSET))


WHEEL_OFFSETS, RAY_LENGTHS, HITBOX_HALF, HITBOX_OFFSET = _octane()


def car_axes(forward: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) rotation whose columns are the car's forward, left and up axes (world), from unit forward and
    up (..., 3)."""
    left = torch.linalg.cross(up, forward, dim=-1)
    return torch.stack([forward, left, up], dim=-1)


def wheel_rays_meeting(
    car_pos: torch.Tensor,
    forward: torch.Tensor,
    up: torch.Tensor,
    ball_pos: torch.Tensor,
    live: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Which cars have a wheel ray meeting the ball, and which one meeting another car's hitbox.

    car_pos, forward, up: (T, C, 3) float32 (uu; unit axes); ball_pos: (T, 3); live: (T, C) bool (not
    demolished). Returns two (T, C) bool tensors (ball, car), False for cars that are not live."""
    axes = car_axes(forward, up)
    starts = car_pos[:, :, None, :] + torch.einsum("tcij,wj->tcwi", axes, WHEEL_OFFSETS)  # (T, C, 4, 3)
    direction = -up[:, :, None, :].expand_as(starts)
    to_ball = starts - ball_pos[:, None, None, :]
    b = (to_ball * direction).sum(-1)
    c = (to_ball * to_ball).sum(-1) - arena.BALL_RADIUS**2
    disc = b * b - c
    t = -b - disc.clamp(min=0.0).sqrt()
    ball = ((disc >= 0.0) & (t >= 0.0) & (t <= RAY_LENGTHS)).any(-1) & live
    num_cars = car_pos.shape[1]
    car = torch.zeros_like(ball)
    for j in range(num_cars):
        centre = car_pos[:, j] + torch.einsum("tij,j->ti", axes[:, j], HITBOX_OFFSET)
        # the rays in car j's axes, then the slab test against its box
        local_start = torch.einsum("tji,tcwj->tcwi", axes[:, j], starts - centre[:, None, None, :])
        local_dir = torch.einsum("tji,tcwj->tcwi", axes[:, j], direction)
        safe = torch.where(local_dir.abs() < 1e-9, torch.full_like(local_dir, 1e-9), local_dir)
        t1 = (-HITBOX_HALF - local_start) / safe
        t2 = (HITBOX_HALF - local_start) / safe
        enter = torch.minimum(t1, t2).amax(-1)
        leave = torch.maximum(t1, t2).amin(-1)
        meets = (leave >= enter.clamp(min=0.0)) & (enter <= RAY_LENGTHS)
        meets[:, j] = False
        car |= meets.any(-1) & live & live[:, j : j + 1]
    return ball, car


def count(paths: list[Path]) -> dict:
    """Counts over the replays under `paths` (files or folders, searched for *.safetensors)."""
    from rocketrl.league.replay import load_replay

    files = sorted(f for p in paths for f in ([p] if p.is_file() else p.rglob("*.safetensors")))
    if not files:
        raise SystemExit(f"wheel_ray_blockers: no replay (*.safetensors) under {', '.join(map(str, paths))}")
    totals = {"replays": 0, "car_states": 0, "ball": 0, "car": 0}
    by_team_size: dict[int, dict[str, int]] = {}
    for file in files:
        replay = load_replay(file)
        live = ~replay.car_demolished
        ball, car = wheel_rays_meeting(
            replay.car_pos, replay.car_forward.float(), replay.car_up.float(), replay.ball_pos, live
        )
        row = by_team_size.setdefault(replay.num_cars // 2, {"replays": 0, "car_states": 0, "ball": 0, "car": 0})
        for target in (totals, row):
            target["replays"] += 1
            target["car_states"] += int(live.sum())
            target["ball"] += int(ball.sum())
            target["car"] += int(car.sum())
    for target in (totals, *by_team_size.values()):
        target["ball_share"] = target["ball"] / max(target["car_states"], 1)
        target["car_share"] = target["car"] / max(target["car_states"], 1)
    return {"paths": [str(p) for p in paths], "all": totals, "by_team_size": by_team_size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", type=Path, nargs="+", help="replay files or folders (rocketrl eval --replays)")
    args = parser.parse_args()
    report = count(args.paths)
    report["machine"] = machine_info()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
