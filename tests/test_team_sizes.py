"""Team sizes a bot was never trained or measured at, or beyond 3v3: a clear warning or a clear error."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from rocketrl.cli import main
from rocketrl.cli_args import team_size
from rocketrl.league.team_sizes import checkpoint_team_size_warning, team_size_warning, trained_team_sizes

PRESETS = Path(__file__).resolve().parent.parent / "rocketrl" / "configs" / "presets"


@pytest.mark.parametrize("text", ["4", "4v4", "3v4", "5v1"])
def test_a_team_beyond_3v3_is_refused_naming_the_limit(text) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"at most 3v3 \(the observation has room for 2 teammates"):
        team_size(text)


def test_the_warning_names_the_trained_and_measured_sizes_and_either_side_counts() -> None:
    message = team_size_warning("bot", ["1v1"], ["1v1"], 2, 2)
    assert message is not None and "bot was trained at 1v1, measured at 1v1; it plays 2v2" in message
    assert team_size_warning("bot", ["1v1"], [], 1, 1) is None
    assert team_size_warning("bot", ["1v2"], [], 2, 1) is None
    assert "trained at 1v1, 2v2;" in team_size_warning("bot", ["1v1", "2v2"], [], 3, 3)


def test_sizes_come_from_the_curriculum_of_the_checkpoint_config() -> None:
    curriculum = str(PRESETS / "curriculum_vs_rule_2v2.yaml")
    config = {"env": {"blue_size": 1, "orange_size": 1}, "league": {"curriculum": curriculum}}
    assert trained_team_sizes(config) == ["1v1", "2v2"]
    assert trained_team_sizes({"env": {"blue_size": 2, "orange_size": 2}}) == ["2v2"]


def test_a_curriculum_recorded_on_another_machine_is_found_among_the_presets_by_name() -> None:
    config = {"env": {"blue_size": 1}, "league": {"curriculum": "/elsewhere/configs/presets/curriculum_team.yaml"}}
    assert trained_team_sizes(config) == ["2v2", "3v3"]
    gone = {"env": {"blue_size": 1, "orange_size": 1}, "league": {"curriculum": "/elsewhere/no_such_curriculum.yaml"}}
    assert trained_team_sizes(gone) == ["1v1"]


def test_the_shipped_1v1_bot_is_warned_about_in_2v2_and_scripted_policies_are_not() -> None:
    warning = checkpoint_team_size_warning("pretrained", 2, 2)
    assert warning is not None and "trained at 1v1, measured at 1v1" in warning
    assert checkpoint_team_size_warning("pretrained", 1, 1) is None
    for name in ("rule_policy", "rotation", "random", "shadow_goalie"):
        assert checkpoint_team_size_warning(name, 3, 3) is None


def test_eval_warns_and_still_plays_the_game(capsys) -> None:
    argv = ["eval", "--checkpoint", "pretrained", "--opponents", "rotation", "--team-size", "2", "--num-games", "1"]
    argv += ["--game-seconds", "2", "--no-overtime", "--workers", "1", "--no-ratings"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "warning: pretrained was trained at 1v1, measured at 1v1; it plays 2v2" in captured.err
    assert "of 1, win rate" in captured.out


def test_eval_refuses_4v4_before_any_game(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--checkpoint", "pretrained", "--team-size", "4v4"])
    assert "at most 3v3" in capsys.readouterr().err


def test_a_card_with_figures_per_team_size_measures_each_size_it_has_figures_for(tmp_path) -> None:
    import json

    from rocketrl.league.team_sizes import measured_team_sizes

    checkpoint = tmp_path / "bot.safetensors"
    assert measured_team_sizes(checkpoint) == []  # no card: nothing measured
    card = {"by_team_size": {"2v2": {"rule_policy": {"wins": 87, "num_games": 100}}, "3v3": {}}}
    checkpoint.with_suffix(".json").write_text(json.dumps(card))
    assert measured_team_sizes(checkpoint) == ["2v2"]
    checkpoint.with_suffix(".json").write_text(json.dumps({"team_size": "1v1"}))
    assert measured_team_sizes(checkpoint) == ["1v1"]
