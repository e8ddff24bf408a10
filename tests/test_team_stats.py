"""Team play figures read from replays (rocketrl/eval/team_stats.py): hand-made 2v2 games with known answers."""

from __future__ import annotations

import json
import math

import pytest
import torch

from rocketrl.cli import main
from rocketrl.eval.team_stats import replay_team_stats
from rocketrl.league.replay import ReplayRecorder, load_replay

STEP = 8 / 120  # seconds a recorded step lasts
ORANGE = ((0.0, 3000.0, 17.0), (1000.0, 3000.0, 17.0))  # two orange cars standing in their half


def frame(blue_pos, blue_vel=((0.0, 0.0, 0.0),) * 2, touch=(False,) * 4, goal=-1, ball=(0.0, 0.0, 93.0)) -> dict:
    """One recorded step of a 2v2 arena: blue cars 0-1 at blue_pos (x, y) with velocities, orange standing."""
    car_pos = torch.tensor([[x, y, 17.0] for x, y in blue_pos] + [list(p) for p in ORANGE])
    car_vel = torch.tensor([list(v) for v in blue_vel] + [[0.0, 0.0, 0.0]] * 2)
    return {
        "ball_pos": torch.tensor(ball),
        "ball_vel": torch.zeros(3),
        "car_pos": car_pos,
        "car_forward": torch.tensor([[0.0, 1.0, 0.0]] * 2 + [[0.0, -1.0, 0.0]] * 2),
        "car_up": torch.tensor([[0.0, 0.0, 1.0]] * 4),
        "car_vel": car_vel,
        "car_boost": torch.full((4,), 33.0),
        "car_demolished": torch.zeros(4, dtype=torch.bool),
        "controls": torch.zeros(4, 8),
        "blue_score": 0,
        "orange_score": 0,
        "goal": goal,
        "car_touch": torch.tensor(touch),
    }


def save(frames: list[dict], path):
    recorder = ReplayRecorder(4, 2, 2, tick_skip=8)
    for f in frames:
        recorder.append(**f)
    recorder.save(path, blue_policy="bot", orange_policy="rule_policy")
    return load_replay(path)


CLOSE = ((0.0, -500.0), (300.0, -450.0))  # both blue cars near the ball, goal-side, b0 the nearer
BOTH_GO = ((0.0, 1000.0, 0.0), (0.0, 500.0, 0.0))  # both closing on the ball: 989 and 412 uu/s
ONE_GOES = ((0.0, 1000.0, 0.0), (0.0, 0.0, 0.0))


def test_spacing_double_commits_last_back_and_possession(tmp_path) -> None:
    frames = [
        frame(CLOSE, BOTH_GO),  # a double commit starts
        frame(CLOSE, BOTH_GO, touch=(True, False, False, False)),  # goes on (not counted again); blue touches
        frame(CLOSE, ONE_GOES),  # over
        frame(CLOSE, BOTH_GO, touch=(False, False, True, False)),  # a second one; orange touches
        frame(((0.0, 500.0), (300.0, 450.0))),  # both blue cars past the ball: nobody back, b1 the last
        frame(CLOSE),  # the recording's end: no play
    ]
    stats = replay_team_stats(save(frames, tmp_path / "g.safetensors"))
    assert set(stats) == {("bot", "2v2"), ("rule_policy", "2v2")}
    blue, orange = stats[("bot", "2v2")].summary(), stats[("rule_policy", "2v2")].summary()
    assert blue["minutes"] == pytest.approx(5 * STEP / 60)
    assert blue["mate_distance"] == pytest.approx(math.hypot(300.0, 50.0))
    assert orange["mate_distance"] == pytest.approx(1000.0)
    assert stats[("bot", "2v2")].double_commits == 2
    assert blue["double_commits_per_minute"] == pytest.approx(2 / (5 * STEP / 60))
    assert stats[("rule_policy", "2v2")].double_commits == 0
    assert (blue["last_back_share_car1"], blue["last_back_share_car2"], blue["last_back_share_max"]) == (0.8, 0.2, 0.8)
    assert "last_back_share_car3" not in blue
    assert blue["nobody_back_share"] == pytest.approx(0.2) and orange["nobody_back_share"] == 0.0
    # Touched frames of play: 1-4; blue's last touch in 1-2, orange's in 3-4.
    assert blue["possession_share"] == 0.5 and orange["possession_share"] == 0.5
    # One kickoff, judged at the first touch (frame 1): both blue cars within 1000 uu, b0 the nearer from the start.
    assert (blue["kickoffs"], blue["kickoff_goers_per_kickoff"], blue["kickoff_nearest_takes_share"]) == (1, 2.0, 1.0)
    assert (orange["kickoff_goers_per_kickoff"], orange["kickoff_nearest_takes_share"]) == (0.0, 1.0)


def test_kickoffs_after_a_goal_and_the_farther_car_taking_one(tmp_path) -> None:
    frames = [
        frame(((-2048.0, -2560.0), (2048.0, -2570.0))),  # diagonal spawns, 8 uu apart in distance: a tie
        frame(((-100.0, -100.0), (500.0, -600.0)), touch=(True, False, False, False)),  # both went, b0 took it
        frame(((0.0, 200.0), (500.0, -600.0)), goal=0),  # blue scores: the segment ends
        frame(((0.0, -4608.0), (-256.0, -3840.0))),  # kickoff: b1 the nearer
        frame(((0.0, -2000.0), (-256.0, -3400.0))),
        frame(((0.0, -700.0), (-256.0, -3000.0))),  # no touch: judged here, the recording's end; b0 went
    ]
    blue = replay_team_stats(save(frames, tmp_path / "g.safetensors"))[("bot", "2v2")]
    figures = blue.summary()
    assert (blue.kickoffs, blue.kickoff_goers, blue.kickoff_nearest_takes) == (2, 3, 1)
    assert figures["kickoff_goers_per_kickoff"] == 1.5 and figures["kickoff_nearest_takes_share"] == 0.5
    assert blue.play_frames == 4  # frames 0, 1, 3, 4


def test_stats_command_prints_and_writes_team_play(tmp_path, capsys) -> None:
    folder = tmp_path / "bot_vs_rule_policy"
    folder.mkdir()
    save([frame(CLOSE, BOTH_GO), frame(CLOSE, BOTH_GO), frame(CLOSE)], folder / "game_0000.safetensors")
    out = tmp_path / "stats.json"
    assert main(["stats", str(folder), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "team play" in printed and "bot 2v2" in printed and "double_commits_per_minute" in printed
    team = json.loads(out.read_text())["team_play"][str(folder)]
    assert team["bot 2v2"]["sums"]["double_commits"] == 1
    assert team["rule_policy 2v2"]["figures"]["possession_share"] is None  # nobody touched the ball
