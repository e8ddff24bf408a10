"""Elo, OpenSkill and the Wilson interval of the league's rating table."""

from __future__ import annotations

import json

import pytest

from rocketrl.league.ratings import (
    RatingFileError,
    RatingTable,
    elo_update,
    expected_score,
    format_ranking,
    win_rate_interval,
)


def test_expected_score_equal_and_400_gap() -> None:
    assert expected_score(1500, 1500) == pytest.approx(0.5)
    assert expected_score(1900, 1500) == pytest.approx(10 / 11)
    assert expected_score(1500, 1900) == pytest.approx(1 / 11)


def test_elo_update_equal_ratings_moves_16() -> None:
    assert elo_update(1500, 1500, 1.0, k=32) == pytest.approx((1516, 1484))
    assert elo_update(1500, 1500, 0.0) == pytest.approx((1484, 1516))
    assert elo_update(1500, 1500, 0.5) == pytest.approx((1500, 1500))
    with pytest.raises(ValueError, match="score"):
        elo_update(1500, 1500, 2.0)


def test_anchor_never_moves() -> None:
    table = RatingTable()
    assert table["rule_policy"].elo == 1500
    table.add("bot")
    anchor_before = (table["rule_policy"].mu, table["rule_policy"].sigma)
    table.record("bot", "rule_policy", 1.0)
    assert table["bot"].elo == pytest.approx(1516)
    table.record("rule_policy", "bot", 1.0)
    table.record_many("bot", "rule_policy", wins=5, draws=2, losses=1)
    anchor = table["rule_policy"]
    assert anchor.elo == 1500
    assert (anchor.mu, anchor.sigma) == anchor_before
    assert (anchor.games, anchor.wins, anchor.draws, anchor.losses) == (10, 2, 2, 6)
    assert table["bot"].games == 10


def test_configurable_anchor() -> None:
    table = RatingTable(anchor="scripted", anchor_elo=1000)
    assert "rule_policy" not in table
    table.add("new")
    assert table["new"].elo == 1000
    table.record("scripted", "new", 0.0)
    assert table["scripted"].elo == 1000
    assert table["new"].elo == pytest.approx(1016)


def test_openskill_winner_rises_loser_falls() -> None:
    table = RatingTable(anchor=None)
    table.add("a", elo=1600)
    table.add("b", elo=1600)
    mu0 = table["a"].mu
    table.record("a", "b", 1.0)
    assert table["a"].mu > mu0 > table["b"].mu
    assert table["a"].sigma < table.model.sigma
    assert table["a"].ordinal == pytest.approx(table["a"].mu - 3 * table["a"].sigma)
    assert table["a"].elo == pytest.approx(1616)
    assert table.win_probability("a", "b") > 0.5


def test_record_many_is_deterministic_and_counts() -> None:
    def run() -> RatingTable:
        t = RatingTable()
        t.record_many("x", "y", wins=3, draws=1, losses=2)
        return t

    t1, t2 = run(), run()
    assert t1.to_dict() == t2.to_dict()
    x = t1["x"]
    assert (x.games, x.wins, x.draws, x.losses) == (6, 3, 1, 2)
    y = t1["y"]
    assert (y.wins, y.draws, y.losses) == (2, 1, 3)
    assert [p.name for p in t1.ranking()][0] == "x"


def test_wilson_interval_known_case() -> None:
    rate, low, high = win_rate_interval(7, 0, 3)
    assert rate == pytest.approx(0.7)
    assert low == pytest.approx(0.3968, abs=1e-3)
    assert high == pytest.approx(0.8922, abs=1e-3)
    # draws count as half a win
    assert win_rate_interval(6, 2, 2)[0] == pytest.approx(0.7)
    assert win_rate_interval(0, 0, 0) == (0.5, 0.0, 1.0)
    rate, low, high = win_rate_interval(10, 0, 0)
    assert rate == 1.0 and high == pytest.approx(1.0) and 0.6 < low < 0.8


def test_save_load_roundtrip(tmp_path) -> None:
    table = RatingTable()
    table.add("late", elo=1200)
    table.record_many("late", "rule_policy", 2, 1, 4)
    table.record("late", "other", 0.5)
    path = tmp_path / "sub" / "ratings.json"
    table.save(path)
    assert [p.name for p in path.parent.iterdir()] == ["ratings.json"]
    loaded = RatingTable.load(path)
    assert loaded.to_dict() == table.to_dict()
    assert loaded.anchor == "rule_policy"
    json.loads(path.read_text())  # plain JSON


@pytest.mark.parametrize("content", ["{not json", '{"format_version": 1, "anchor": "rule_policy"}', "[1, 2]"])
def test_malformed_file_names_the_file(tmp_path, content: str) -> None:
    path = tmp_path / "broken.json"
    path.write_text(content)
    with pytest.raises(RatingFileError, match="broken.json"):
        RatingTable.load(path)


def test_format_ranking() -> None:
    table = RatingTable()
    table.record_many("champion", "rule_policy", 4, 0, 0)
    text = format_ranking(table)
    lines = text.splitlines()
    assert lines[0].split() == ["#", "name", "Elo", "ordinal", "games", "W-D-L"]
    assert lines[2].split()[:2] == ["1", "champion"]
    assert "4-0-0" in lines[2]
    assert "rule_policy *" in lines[3] and "0-0-4" in lines[3]
