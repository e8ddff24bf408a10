"""rocketrl eval: what it plays and rates, with the games themselves replaced by a stand-in."""

from __future__ import annotations

import json

import pytest

from rocketrl.cli import main
from rocketrl.eval import cli as eval_cli
from rocketrl.league.match import MatchResult


@pytest.fixture
def played(monkeypatch) -> list[tuple[str, str]]:
    """The pairings play_match was asked for; each ends with one win for the first side."""
    pairings: list[tuple[str, str]] = []

    def fake_play_match(a, b, config, name_a, name_b, device="cpu"):
        pairings.append((name_a, name_b))
        result = MatchResult(name_a, name_b)
        result.wins = 1
        return result

    monkeypatch.setattr(eval_cli, "play_match", fake_play_match)
    return pairings


def test_a_policy_against_itself_is_played_and_left_out_of_the_ratings(played, tmp_path, capsys) -> None:
    ratings = tmp_path / "ratings.json"
    args = ["eval", "--checkpoint", "rule_policy", "--opponents", "rule_policy,random", "--league", str(ratings)]
    assert main(args) == 0
    assert played == [("rule_policy", "rule_policy"), ("rule_policy", "random")]
    out = capsys.readouterr().out
    assert "mirror match: not rated" in out
    # the rated pairing was saved, nothing lost to the mirror one, which is not in the table
    players = {p["name"]: p for p in json.loads(ratings.read_text())["ratings"]["players"]}
    assert players["random"]["games"] == 1 and players["rule_policy"]["games"] == 1


def test_a_tournament_naming_a_policy_twice_is_refused_before_any_game(played, capsys) -> None:
    assert main(["eval", "--tournament", "--policies", "rule_policy,random,random", "--no-ratings"]) != 0
    assert "--policies: 'random' given twice" in capsys.readouterr().err
    assert played == []


def test_the_json_report_names_the_settings_of_its_games(played, tmp_path) -> None:
    out = tmp_path / "eval.json"
    args = ["eval", "--checkpoint", "rule_policy", "--opponents", "random", "--no-ratings", "--num-games", "3",
            "--deterministic", "--kickoff-jitter", "5", "--seed", "7", "--workers", "2",
            "--json", str(out)]  # fmt: skip
    assert main(args) == 0
    report = json.loads(out.read_text())
    assert report["num_games"] == 3 and report["results"][0]["name_b"] == "random"
    settings = report["settings"]
    assert settings["deterministic"] is True and settings["kickoff_jitter"] == 5.0 and settings["seed"] == 7
    assert settings["workers"] == 2 and settings["opponents"] == "random" and settings["tournament"] is False
