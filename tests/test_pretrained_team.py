"""The shipped team bot: 'pretrained_team' names it; its card holds 100-game figures against RulePolicy for every
size it claims (1v1, 2v2, 3v3); it plays each of them without a team-size warning; its export claims exactly those
sizes and the teamplay tag."""

from __future__ import annotations

import json

from rocketrl.export.bundle import measured_team_sizes as export_measured_sizes
from rocketrl.export.bundle import tags_for
from rocketrl.infra.checkpoint import read_meta
from rocketrl.league.match import MatchConfig, play_match
from rocketrl.league.team_sizes import checkpoint_team_size_warning, measured_team_sizes, trained_team_sizes
from rocketrl.policy.load import PRETRAINED_TEAM_CHECKPOINT, checkpoint_config, load_policy, resolve_checkpoint

SIZES = ["1v1", "2v2", "3v3"]


def test_the_team_bot_ships_with_100_game_figures_for_each_size() -> None:
    path = resolve_checkpoint("pretrained_team")
    assert path == PRETRAINED_TEAM_CHECKPOINT and path.is_file()
    card = json.loads(path.with_suffix(".json").read_text())
    assert sorted(card["by_team_size"]) == SIZES == measured_team_sizes(path)
    for size, figures in card["by_team_size"].items():
        rule = figures["rule_policy"]
        assert rule["num_games"] >= 100 and rule["wins"] + rule["draws"] + rule["losses"] == rule["num_games"], size
    config = checkpoint_config(path, read_meta(path))
    assert trained_team_sizes(config) == ["2v2", "3v3"]  # its curriculum, found among the presets by name


def test_it_plays_every_measured_size_without_a_warning_and_a_3v3_game_runs() -> None:
    for size in (1, 2, 3):
        assert checkpoint_team_size_warning("pretrained_team", size, size) is None
    bot = load_policy("pretrained_team", deterministic=True)
    config = MatchConfig.games(
        num_games=1, blue_size=3, orange_size=3, game_seconds=3.0, stepping="serial", compile=False
    )
    result = play_match(bot, load_policy("rule_policy"), config, "team", "rule")
    assert result.num_games == 1 and result.games[0].seconds >= 3.0


def test_its_export_claims_the_measured_sizes_and_teamplay() -> None:
    config = checkpoint_config(PRETRAINED_TEAM_CHECKPOINT, read_meta(PRETRAINED_TEAM_CHECKPOINT))
    settings = {"trained_team_sizes": trained_team_sizes(config)}
    measured = export_measured_sizes(PRETRAINED_TEAM_CHECKPOINT, settings)
    assert sorted(measured) == SIZES and "games won against rule_policy" in measured["3v3"]
    assert tags_for(settings, measured) == ["1v1", "teamplay"]
