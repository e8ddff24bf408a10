"""Game figures read from replays (rocketrl/eval/game_stats.py): hand-made 1v1 games with known answers."""

from __future__ import annotations

import json
import math

import pytest
import torch

from rocketrl.cli import main
from rocketrl.eval.game_stats import game_stats, replay_stats, stats_of_files
from rocketrl.league.replay import ReplayRecorder, load_replay
from rocketrl.sim.arena import GOAL_HEIGHT

STEP = 8 / 120  # seconds a recorded step lasts


def frame(
    ball_pos=(0.0, 0.0, 93.0),
    ball_vel=(0.0, 0.0, 0.0),
    blue_pos=(0.0, -2000.0, 17.0),
    orange_pos=(0.0, 2000.0, 17.0),
    blue_vel=(0.0, 0.0, 0.0),
    boost=(33.0, 33.0),
    jump=(0.0, 0.0),
    touch=(False, False),
    goal=-1,
    demolished=(False, False),
) -> dict:
    """One recorded step of a 1v1 arena (blue car first)."""
    controls = torch.zeros(2, 8)
    controls[:, 5] = torch.tensor(jump)
    return {
        "ball_pos": torch.tensor(ball_pos),
        "ball_vel": torch.tensor(ball_vel),
        "car_pos": torch.tensor([blue_pos, orange_pos]),
        "car_forward": torch.tensor([[0.0, 1.0, 0.0], [0.0, -1.0, 0.0]]),
        "car_up": torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]),
        "car_vel": torch.tensor([blue_vel, (0.0, 0.0, 0.0)]),
        "car_boost": torch.tensor(boost),
        "car_demolished": torch.tensor(demolished),
        "controls": controls if goal < 0 else torch.zeros(2, 8),
        "blue_score": 0,
        "orange_score": 0,
        "goal": goal,
        "car_touch": torch.tensor(touch),
    }


def save(frames: list[dict], path, blue: str = "bot", orange: str = "rule_policy"):
    recorder = ReplayRecorder(2, 1, 1, tick_skip=8)
    for f in frames:
        recorder.append(**f)
    recorder.save(path, blue_policy=blue, orange_policy=orange)
    return load_replay(path)


def test_a_shot_that_goes_in_counts_as_shot_goal_and_hit(tmp_path) -> None:
    # Blue hits the ball at the orange goal (+y) in the step to frame 1; it goes in at frame 3 (a goal frame).
    frames = [
        frame(ball_pos=(0.0, 4000.0, 93.0), ball_vel=(0.0, 0.0, 0.0)),
        frame(ball_pos=(0.0, 4000.0, 93.0), ball_vel=(0.0, 2000.0, 0.0), touch=(True, False)),
        frame(ball_pos=(0.0, 4133.0, 93.0), ball_vel=(0.0, 2000.0, 0.0)),
        frame(ball_pos=(0.0, 5300.0, 93.0), ball_vel=(0.0, 2000.0, 0.0), goal=0),
    ]
    stats = replay_stats(save(frames, tmp_path / "g.safetensors"))
    bot, rule = stats["bot"], stats["rule_policy"]
    assert (bot.goals, bot.goals_against, bot.own_goals, bot.shots, bot.touches) == (1, 0, 0, 1, 1)
    assert (rule.goals, rule.goals_against, rule.own_goals, rule.shots, rule.touches) == (0, 1, 0, 0, 0)
    assert bot.ball_speed_after_touch == pytest.approx(2000.0)
    assert bot.ball_speed_change == pytest.approx(2000.0)
    # Toward the orange goal's middle (0, 5120, 321.4) from (0, 4000, 93): 2000 * 1120 / |(0, 1120, 228.4)|.
    assert bot.ball_speed_to_goal_after_touch == pytest.approx(2000.0 * 1120.0 / math.hypot(1120.0, 642.775 / 2 - 93))
    assert bot.attacking_half_touches == 1 and bot.aerial_touches == 0
    figures = bot.summary()
    assert figures["shot_conversion"] == 1.0
    # Three frames of play (the goal frame starts none), one car: 3 steps of 8 ticks.
    assert figures["car_minutes"] == pytest.approx(3 * STEP / 60)
    assert figures["touches_per_minute"] == pytest.approx(1 / (3 * STEP / 60))
    assert math.isnan(rule.summary()["shot_conversion"])


def test_an_own_goal_is_charged_to_the_last_toucher_and_is_no_shot(tmp_path) -> None:
    # Orange knocks the ball into its own goal (+y): blue scores, orange's last touch, not a shot for anyone.
    frames = [
        frame(ball_pos=(0.0, 4500.0, 93.0)),
        frame(ball_pos=(0.0, 4500.0, 93.0), ball_vel=(0.0, 1500.0, 0.0), touch=(False, True)),
        frame(ball_pos=(0.0, 5300.0, 93.0), ball_vel=(0.0, 1500.0, 0.0), goal=0),
    ]
    stats = replay_stats(save(frames, tmp_path / "g.safetensors"))
    assert (stats["rule_policy"].own_goals, stats["rule_policy"].shots, stats["rule_policy"].goals_against) == (1, 0, 1)
    assert (stats["bot"].goals, stats["bot"].own_goals, stats["bot"].shots) == (1, 0, 0)
    assert stats["rule_policy"].attacking_half_touches == 0  # the ball was in orange's own half
    assert stats["rule_policy"].own_goals_saving == 0  # the ball stood still before orange's touch: no save


def test_a_touch_on_a_shot_that_still_goes_in_is_an_own_goal_from_a_save(tmp_path) -> None:
    # Blue shoots at the orange goal (+y); orange gets a touch on the way (the ball still on target) and it goes in;
    # then orange scores on blue (-y) unaided after its own touch on a still ball near midfield: one of each kind.
    frames = [
        frame(ball_pos=(0.0, 3000.0, 93.0)),
        frame(ball_pos=(0.0, 3000.0, 93.0), ball_vel=(0.0, 2000.0, 0.0), touch=(True, False)),
        frame(ball_pos=(0.0, 4200.0, 93.0), ball_vel=(0.0, 1800.0, 0.0), touch=(False, True)),
        frame(ball_pos=(0.0, 5300.0, 93.0), ball_vel=(0.0, 1800.0, 0.0), goal=0),
        frame(ball_pos=(0.0, 0.0, 93.0)),
        frame(ball_pos=(0.0, 0.0, 93.0), ball_vel=(0.0, -2000.0, 0.0), touch=(False, True)),
        frame(ball_pos=(0.0, -5300.0, 93.0), ball_vel=(0.0, -2000.0, 0.0), goal=1),
    ]
    stats = replay_stats(save(frames, tmp_path / "g.safetensors"))
    rule, bot = stats["rule_policy"], stats["bot"]
    assert (rule.own_goals, rule.own_goals_saving, rule.goals, rule.goals_against) == (1, 1, 1, 1)
    assert (bot.own_goals, bot.own_goals_saving, bot.shots) == (0, 0, 1)
    assert rule.summary()["own_goals_saving"] == 1


def test_a_touch_that_turns_a_shot_away_is_a_save(tmp_path) -> None:
    # Orange shoots at the blue goal (-y); blue's touch in the step to frame 2 clears the ball to the side wall.
    frames = [
        frame(ball_pos=(0.0, -2000.0, 93.0)),
        frame(ball_pos=(0.0, -2000.0, 93.0), ball_vel=(0.0, -2000.0, 0.0), touch=(False, True)),
        frame(ball_pos=(0.0, -4000.0, 93.0), ball_vel=(1500.0, 300.0, 0.0), touch=(True, False)),
        frame(ball_pos=(100.0, -3980.0, 93.0), ball_vel=(1500.0, 300.0, 0.0)),
    ]
    stats = replay_stats(save(frames, tmp_path / "g.safetensors"))
    bot, rule = stats["bot"], stats["rule_policy"]
    assert (bot.saves, rule.saves, rule.shots, bot.shots) == (1, 0, 1, 0)
    assert bot.summary()["saves_per_minute"] == pytest.approx(1 / (3 * STEP / 60))  # the last frame plays no step


def test_kickoffs_count_the_first_touch_and_goals_soon_after(tmp_path) -> None:
    # Two segments: blue touches first and scores 0.2 s after the kickoff; then orange touches first, scores
    # 0.13 s after its kickoff. A third segment: blue touches first, and orange scores 7 s (105 steps) later.
    frames = [
        frame(ball_pos=(0.0, 3000.0, 93.0)),
        frame(ball_pos=(0.0, 3000.0, 93.0), ball_vel=(0.0, 2000.0, 0.0), touch=(True, False)),
        frame(ball_pos=(0.0, 4200.0, 93.0), ball_vel=(0.0, 1800.0, 0.0), touch=(False, True)),
        frame(ball_pos=(0.0, 5300.0, 93.0), ball_vel=(0.0, 1800.0, 0.0), goal=0),
        frame(ball_pos=(0.0, 0.0, 93.0)),
        frame(ball_pos=(0.0, 0.0, 93.0), ball_vel=(0.0, -2000.0, 0.0), touch=(False, True)),
        frame(ball_pos=(0.0, -5300.0, 93.0), ball_vel=(0.0, -2000.0, 0.0), goal=1),
        frame(ball_pos=(0.0, 0.0, 93.0)),
        frame(ball_pos=(0.0, 0.0, 93.0), ball_vel=(0.0, 100.0, 0.0), touch=(True, False)),
        *[frame(ball_pos=(0.0, 0.0, 93.0)) for _ in range(103)],
        frame(ball_pos=(0.0, -5300.0, 93.0), ball_vel=(0.0, -2000.0, 0.0), goal=1),
    ]
    stats = replay_stats(save(frames, tmp_path / "g.safetensors"))
    bot, rule = stats["bot"], stats["rule_policy"]
    assert (bot.kickoffs, bot.kickoff_first_touches, bot.kickoff_goals, bot.kickoff_goals_against) == (3, 2, 1, 1)
    assert (rule.kickoffs, rule.kickoff_first_touches, rule.kickoff_goals, rule.kickoff_goals_against) == (3, 1, 1, 1)
    assert bot.summary()["kickoff_first_touch_share"] == pytest.approx(2 / 3)


def test_jumps_boost_and_position_skip_the_kickoff_after_a_goal(tmp_path) -> None:
    # Blue presses jump on frames 0, 1, 3 (two presses), scores at frame 4 and jumps again on the kickoff frame 5:
    # three presses. Boost 100 -> 90 -> 95 (a pad) -> 80 -> goal frame -> 33 at the kickoff (not use) -> 30.
    frames = [
        frame(jump=(1.0, 0.0), boost=(100.0, 33.0), blue_vel=(0.0, 2300.0, 0.0)),
        frame(jump=(1.0, 0.0), boost=(90.0, 33.0), blue_pos=(0.0, -2000.0, 150.0)),
        frame(jump=(0.0, 0.0), boost=(95.0, 33.0)),
        frame(jump=(1.0, 0.0), boost=(80.0, 33.0), blue_pos=(0.0, 500.0, 17.0)),
        frame(ball_pos=(0.0, 5300.0, 93.0), boost=(80.0, 33.0), goal=0),
        frame(jump=(1.0, 0.0), boost=(33.0, 33.0)),
        frame(jump=(1.0, 0.0), boost=(30.0, 33.0)),
    ]
    bot = replay_stats(save(frames, tmp_path / "g.safetensors"))["bot"]
    assert bot.jumps == 3
    assert bot.boost_used == pytest.approx(10.0 + 15.0 + 3.0)
    assert bot.boost_taken == pytest.approx(5.0)  # the pad; the kickoff's 33 is no pickup
    # Play frames: 0, 1, 2, 3, 5 (4 is the goal, 6 the recording's end).
    assert bot.car_frames == 5
    assert bot.supersonic_frames == 1 and bot.off_floor_frames == 1
    # Blue is goal-side (nearer its own wall, -y) of the ball at (0, 0) except at frame 3 (y = 500).
    assert bot.goal_side_frames == 4
    assert bot.speed == pytest.approx(2300.0)


def test_ball_goal_alignment_is_the_reward_terms_mean_over_frames_of_play(tmp_path) -> None:
    # Ball and cars at the goals' mid-height, so every direction lies in the floor's plane. Blue (attacks +y) stands
    # between its goal and the ball on frames 0 and 1 (1), beyond the ball on frame 2 (-1), beside it on frame 3
    # (the two cosines cancel: 0); frame 4 ends the recording and is no play. Orange stays between its goal (+y)
    # and the ball: 1 on every frame.
    h = GOAL_HEIGHT / 2
    ball = (0.0, 0.0, h)
    frames = [
        frame(ball_pos=ball, blue_pos=(0.0, -2000.0, h), orange_pos=(0.0, 2000.0, h)),
        frame(ball_pos=ball, blue_pos=(0.0, -1000.0, h), orange_pos=(0.0, 2000.0, h)),
        frame(ball_pos=ball, blue_pos=(0.0, 500.0, h), orange_pos=(0.0, 2000.0, h)),
        frame(ball_pos=ball, blue_pos=(1000.0, 0.0, h), orange_pos=(0.0, 2000.0, h)),
        frame(ball_pos=ball, blue_pos=(0.0, 3000.0, h), orange_pos=(0.0, 2000.0, h)),
    ]
    stats = replay_stats(save(frames, tmp_path / "g.safetensors"))
    bot, rule = stats["bot"], stats["rule_policy"]
    assert bot.car_frames == 4
    assert bot.ball_goal_alignment == pytest.approx(1.0 + 1.0 - 1.0 + 0.0, abs=1e-9)
    assert bot.summary()["ball_goal_alignment"] == pytest.approx(0.25, abs=1e-9)
    assert rule.summary()["ball_goal_alignment"] == pytest.approx(1.0, abs=1e-9)


def test_games_sum_per_policy_and_the_command_prints_and_writes_them(tmp_path, capsys) -> None:
    shot = [
        frame(ball_pos=(0.0, 4000.0, 93.0)),
        frame(ball_pos=(0.0, 4000.0, 93.0), ball_vel=(0.0, 2000.0, 0.0), touch=(True, False)),
        frame(ball_pos=(0.0, 5300.0, 93.0), ball_vel=(0.0, 2000.0, 0.0), goal=0),
    ]
    folder = tmp_path / "bot_vs_rule_policy"
    folder.mkdir()
    save(shot, folder / "game_0000.safetensors", blue="bot", orange="rule_policy")
    save(shot, folder / "game_0001.safetensors", blue="rule_policy", orange="bot")  # sides swapped: rule scores
    total = game_stats(load_replay(p) for p in sorted(folder.glob("*.safetensors")))
    assert (total["bot"].games, total["bot"].goals, total["bot"].goals_against) == (2, 1, 1)
    assert total["bot"].shots == 1 and total["rule_policy"].shots == 1
    assert stats_of_files([folder])["bot"]["shot_conversion"] == 1.0
    out = tmp_path / "stats.json"
    assert main(["stats", str(tmp_path), "--json", str(out)]) == 0  # the parent folder: pairing folders expanded
    printed = capsys.readouterr().out
    assert "shot_conversion" in printed and "rule_policy" in printed
    report = json.loads(out.read_text())
    assert report[str(folder)]["bot"]["sums"]["goals"] == 1


def test_the_command_draws_two_bots_side_by_side(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra (rocketrl[plot]) is not installed")
    shot = [
        frame(ball_pos=(0.0, 4000.0, 93.0)),
        frame(ball_pos=(0.0, 4000.0, 93.0), ball_vel=(0.0, 2000.0, 0.0), touch=(True, False)),
        frame(ball_pos=(0.0, 5300.0, 93.0), ball_vel=(0.0, 2000.0, 0.0), goal=0),
    ]
    for bot in ("old_bot", "new_bot"):
        folder = tmp_path / f"{bot}_vs_rule_policy"
        folder.mkdir()
        save(shot, folder / "game_0000.safetensors", blue=bot, orange="rule_policy")
    picture = tmp_path / "stats.png"
    assert main(["stats", str(tmp_path / "old_bot_vs_rule_policy"), str(tmp_path / "new_bot_vs_rule_policy"),
                 "--plot", str(picture)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "old_bot_vs_rule_policy: old_bot" in printed and "possession_share" in printed
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size > 10_000


def test_merge_sums_every_path_and_only_keeps_the_named_policies(tmp_path, capsys) -> None:
    shot = [
        frame(ball_pos=(0.0, 4000.0, 93.0)),
        frame(ball_pos=(0.0, 4000.0, 93.0), ball_vel=(0.0, 2000.0, 0.0), touch=(True, False)),
        frame(ball_pos=(0.0, 5300.0, 93.0), ball_vel=(0.0, 2000.0, 0.0), goal=0),
    ]
    folders = []
    for opponent in ("rule_policy", "ball_chaser"):
        folder = tmp_path / f"bot_vs_{opponent}"
        folder.mkdir()
        save(shot, folder / "game_0000.safetensors", blue="bot", orange=opponent)
        folders.append(str(folder))
    out = tmp_path / "merged.json"
    assert main(["stats", *folders, "--merge", "--only", "bot", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ball_chaser" not in printed and "rule_policy" not in printed
    figures = json.loads(out.read_text())["merged"]["bot"]["figures"]
    assert (figures["games"], figures["goals"], figures["shots"]) == (2, 2, 2)
    with pytest.raises(SystemExit, match="--only nobody: no such policy"):
        main(["stats", *folders, "--merge", "--only", "nobody"])


def test_plot_without_matplotlib_names_the_extra(tmp_path, monkeypatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(SystemExit, match=r"rocketrl\[plot\]"):
        main(["stats", str(tmp_path), "--plot", str(tmp_path / "x.png")])


def test_an_empty_replay_adds_nothing(tmp_path) -> None:
    recorder = ReplayRecorder(2, 1, 1, tick_skip=8)
    recorder.save(tmp_path / "empty.safetensors", blue_policy="bot", orange_policy="rule_policy")
    assert replay_stats(load_replay(tmp_path / "empty.safetensors")) == {}


def test_a_missing_folder_is_named(tmp_path, capsys) -> None:
    assert main(["stats", str(tmp_path / "nowhere")]) == 2
    assert "nowhere" in capsys.readouterr().err


def test_eval_with_replays_prints_and_writes_how_each_side_played(tmp_path, capsys) -> None:
    out = tmp_path / "eval.json"
    argv = ["eval", "--checkpoint", "random", "--opponents", "rule_policy", "--num-games", "2", "--game-seconds", "4"]
    argv += ["--no-overtime", "--workers", "1", "--no-ratings", "--replays", str(tmp_path / "games")]
    argv += ["--json", str(out)]
    assert main(argv) == 0
    assert "goal_side_share" in capsys.readouterr().out
    (figures,) = json.loads(out.read_text())["game_figures"]
    assert set(figures) == {"random", "rule_policy"}
    assert figures["random"]["games"] == 2 and figures["random"]["car_minutes"] == pytest.approx(2 * 4 / 60, rel=0.02)
    # The same replays read again by rocketrl stats give the same figures.
    again = stats_of_files([tmp_path / "games" / "random_vs_rule_policy"])
    assert again["rule_policy"]["goals"] == figures["rule_policy"]["goals"]


def test_goals_against_record_where_the_defender_stood_at_the_scoring_touch(tmp_path) -> None:
    # Three orange goals on blue's goal (-y). 1: orange's touch at frame 1 with blue upfield (y -2000 > ball -4000:
    # not goal-side), 2000 uu in y and 76 in z from the ball, boost 20. 2: blue goal-side (y -4800 behind the ball at
    # -4000), 800 uu away, boost 60; orange's touch at frame 4, a later touch by nobody. 3: blue demolished at the
    # touch: not goal-side, no distance. Then an own goal by blue (frame 11): no scoring touch of orange's.
    ball = (0.0, -4000.0, 93.0)
    shot = (0.0, -2000.0, 0.0)
    frames = [
        frame(ball_pos=ball),
        frame(ball_pos=ball, ball_vel=shot, touch=(False, True), boost=(20.0, 50.0)),
        frame(ball_pos=(0.0, -5300.0, 93.0), ball_vel=shot, goal=1),
        frame(ball_pos=ball, blue_pos=(0.0, -4800.0, 93.0)),
        frame(ball_pos=ball, ball_vel=shot, blue_pos=(0.0, -4800.0, 93.0), touch=(False, True), boost=(60.0, 50.0)),
        frame(ball_pos=(0.0, -4500.0, 93.0), ball_vel=shot, blue_pos=(0.0, -4800.0, 93.0)),
        frame(ball_pos=(0.0, -5300.0, 93.0), ball_vel=shot, goal=1),
        frame(ball_pos=ball),
        frame(ball_pos=ball, ball_vel=shot, touch=(False, True), demolished=(True, False)),
        frame(ball_pos=(0.0, -5300.0, 93.0), ball_vel=shot, goal=1),
        frame(ball_pos=ball),
        frame(ball_pos=ball, ball_vel=shot, touch=(True, False)),
        frame(ball_pos=(0.0, -5300.0, 93.0), ball_vel=shot, goal=1),
    ]
    stats = replay_stats(save(frames, tmp_path / "g.safetensors"))
    bot = stats["bot"]
    assert bot.goals_against == 4 and bot.own_goals == 1
    assert (bot.conceded_from_touch, bot.conceded_goal_side, bot.conceded_with_defender) == (3, 1, 2)
    assert bot.conceded_defender_distance == pytest.approx(math.hypot(2000.0, 76.0) + 800.0)
    assert bot.conceded_defender_boost == pytest.approx(20.0 + 60.0)
    figures = bot.summary()
    assert figures["conceded_goal_side_share"] == pytest.approx(1 / 3)
    assert figures["conceded_defender_distance"] == pytest.approx((math.hypot(2000.0, 76.0) + 800.0) / 2)
    assert figures["conceded_defender_boost"] == pytest.approx(40.0)
    # Orange conceded nothing: its figures have no data.
    assert math.isnan(stats["rule_policy"].summary()["conceded_goal_side_share"])


def test_boost_taken_counts_pads_not_the_respawn_after_a_demolition(tmp_path) -> None:
    # Blue: 10, demolished (its boost kept on the frame), respawned with 33 (a rise, but no pad), a small pad to
    # 45, then spends 5.
    # Orange: 33 throughout, then a big pad to 50 at the last frame.
    frames = [
        frame(boost=(10.0, 33.0)),
        frame(boost=(10.0, 33.0), demolished=(True, False)),
        frame(boost=(33.0, 33.0)),
        frame(boost=(45.0, 33.0)),
        frame(boost=(40.0, 50.0)),
    ]
    stats = replay_stats(save(frames, tmp_path / "g.safetensors"))
    bot, rule = stats["bot"], stats["rule_policy"]
    assert (bot.boost_taken, bot.boost_used) == (pytest.approx(12.0), pytest.approx(5.0))
    assert (rule.boost_taken, rule.boost_used) == (pytest.approx(17.0), 0.0)
    assert rule.summary()["boost_taken_per_minute"] == pytest.approx(17.0 / (rule.car_seconds / 60))


def test_boost_held_is_the_mean_over_frames_of_play(tmp_path) -> None:
    # Blue holds 100, 50, 0 over three frames of play; the goal frame (boost 80) is not play.
    frames = [
        frame(boost=(100.0, 10.0)),
        frame(boost=(50.0, 10.0)),
        frame(boost=(0.0, 10.0)),
        frame(ball_pos=(0.0, 5300.0, 93.0), boost=(80.0, 10.0), goal=0),
    ]
    stats = replay_stats(save(frames, tmp_path / "g.safetensors"))
    assert stats["bot"].summary()["boost_held"] == pytest.approx(50.0)
    assert stats["rule_policy"].summary()["boost_held"] == pytest.approx(10.0)
