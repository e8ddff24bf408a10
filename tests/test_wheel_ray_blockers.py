"""benchmarks/wheel_ray_blockers.py: which cars' wheel rays meet the ball or another car, on hand-placed cars."""

from __future__ import annotations

import math

import torch
from benchmark_loader import load_benchmark

from rocketrl.league.replay import ReplayRecorder
from rocketrl.sim import arena

blockers = load_benchmark("wheel_ray_blockers")

FORWARD = torch.tensor([1.0, 0.0, 0.0])
UP = torch.tensor([0.0, 0.0, 1.0])


def _meet(
    cars: list[tuple[list[float], torch.Tensor, torch.Tensor]], ball: list[float], live: list[bool] | None = None
):
    """One state: cars as (position, forward, up)."""
    pos = torch.tensor([[c[0] for c in cars]])
    fwd = torch.stack([c[1] for c in cars])[None]
    up = torch.stack([c[2] for c in cars])[None]
    alive = torch.tensor([live or [True] * len(cars)])
    ball_hit, car_hit = blockers.wheel_rays_meeting(pos, fwd, up, torch.tensor([ball]), alive)
    return ball_hit[0].tolist(), car_hit[0].tolist()


def test_a_car_on_the_floor_far_from_everything_meets_nothing() -> None:
    assert _meet([([0.0, 0.0, 17.0], FORWARD, UP), ([0.0, 2000.0, 17.0], FORWARD, UP)], [0.0, -2000.0, 93.0]) == (
        [False, False],
        [False, False],
    )


def test_a_car_over_the_ball_meets_it_within_its_ray_length_only() -> None:
    # A back wheel's connection point sits 44.8 uu off the ball's vertical axis (a front one 57.4), so its ray
    # meets the sphere 79.5 uu above the ball's centre (70.9); connection points are 20.755 uu above the car's
    # origin and a back ray is 49.555 uu long (front 48.755): the car meets the ball while its origin is less than
    # 79.5 + 49.555 - 20.755 = 108.3 uu above the ball's centre (98.9 for the front wheels alone).
    side = math.hypot(33.75, 29.50)
    surface = math.sqrt(arena.BALL_RADIUS**2 - side**2)
    reach = surface + 49.555 - 20.755
    ball = [0.0, 0.0, 400.0]
    near = ([0.0, 0.0, 400.0 + reach - 1.0], FORWARD, UP)
    far = ([0.0, 0.0, 400.0 + reach + 1.0], FORWARD, UP)
    assert _meet([near], ball) == ([True], [False])
    assert _meet([far], ball) == ([False], [False])
    upside_down = ([0.0, 0.0, 400.0 + reach - 1.0], FORWARD, -UP)  # its rays point away from the ball
    assert _meet([upside_down], ball) == ([False], [False])


def test_a_car_on_another_cars_roof_meets_that_car_and_not_the_other_way() -> None:
    # The lower car's hitbox top: its origin + 20.755 + 19.32955; the upper car's connection points 20.755 above its
    # origin and 48.755 (front) / 49.555 (back) long.
    lower = ([0.0, 0.0, 17.0], FORWARD, UP)
    top = 17.0 + 20.755 + 19.32955
    on_roof = ([0.0, 0.0, top - 20.755 + 40.0], FORWARD, UP)
    assert _meet([lower, on_roof], [0.0, 3000.0, 93.0]) == ([False, False], [False, True])
    out_of_reach = ([0.0, 0.0, top - 20.755 + 50.0], FORWARD, UP)
    assert _meet([lower, out_of_reach], [0.0, 3000.0, 93.0]) == ([False, False], [False, False])
    beside = ([200.0, 0.0, top - 20.755 + 40.0], FORWARD, UP)  # its wheels pass in front of the lower car's box
    assert _meet([lower, beside], [0.0, 3000.0, 93.0]) == ([False, False], [False, False])


def test_demolished_cars_neither_meet_nor_are_met() -> None:
    lower = ([0.0, 0.0, 17.0], FORWARD, UP)
    on_roof = ([0.0, 0.0, 17.0 + 19.32955 + 40.0], FORWARD, UP)
    assert _meet([lower, on_roof], [0.0, 3000.0, 93.0]) == ([False, False], [False, True])
    assert _meet([lower, on_roof], [0.0, 3000.0, 93.0], live=[False, True]) == ([False, False], [False, False])
    assert _meet([lower, on_roof], [0.0, 3000.0, 93.0], live=[True, False]) == ([False, False], [False, False])


def test_counts_read_replay_files(tmp_path) -> None:
    recorder = ReplayRecorder(2, 1, 1, tick_skip=8)
    lower, on_roof = [0.0, 0.0, 17.0], [0.0, 0.0, 17.0 + 19.32955 + 40.0]
    for _ in range(3):
        recorder.append(
            ball_pos=torch.tensor([0.0, 3000.0, 93.0]),
            ball_vel=torch.zeros(3),
            car_pos=torch.tensor([lower, on_roof]),
            car_forward=FORWARD.expand(2, 3),
            car_up=UP.expand(2, 3),
            car_vel=torch.zeros(2, 3),
            car_boost=torch.zeros(2),
            car_demolished=torch.zeros(2, dtype=torch.bool),
            controls=torch.zeros(2, 8),
            blue_score=0,
            orange_score=0,
            goal=-1,
        )
    recorder.save(tmp_path / "game_0000.safetensors")
    report = blockers.count([tmp_path])
    assert report["all"]["replays"] == 1 and report["all"]["car_states"] == 6
    assert report["all"]["car"] == 3 and report["all"]["ball"] == 0
    assert report["by_team_size"][1]["car_share"] == 0.5
