"""A bot folder a player can use: the framework reads its bot.toml, loadout and example match; names that would
break TOML are carried or refused; claims only what was measured; ordinary file modes; and full games through its
packet path play as the policy does (rocketrl.export.packet_game)."""

from __future__ import annotations

import json
import stat
import tomllib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from export_helpers import make_checkpoint

from rocketrl.cli import main as rocketrl_main
from rocketrl.export.bundle import ExportError, export_rlbot
from rocketrl.export.folder_files import OCTANE_CAR_ID
from rocketrl.infra.checkpoint import save_checkpoint

flat = pytest.importorskip("rlbot.flat", reason="the export tests need the RLBot v5 package: pip install -e .[test]")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return make_checkpoint(tmp_path_factory.mktemp("folder"))


def test_the_framework_reads_the_bot_its_octane_loadout_and_the_example_match(checkpoint, tmp_path) -> None:
    from rlbot.config import load_match_config, load_player_config

    folder = export_rlbot(checkpoint, tmp_path / "bot")
    for team in (0, 1):
        bot = load_player_config(folder / "bot.toml", team=team).variety
        assert bot.loadout is not None and bot.loadout.car_id == OCTANE_CAR_ID
    match = load_match_config(folder / "match.toml")
    assert len(match.player_configurations) == 2 and match.game_mode == flat.GameMode.Soccar
    ours = match.player_configurations[0].variety
    assert ours.agent_id == "rocketrl/rocketrl-tiny" and ours.loadout.car_id == OCTANE_CAR_ID
    assert isinstance(match.player_configurations[1].variety, flat.PsyonixBot)
    assert (folder / "run_match.py").is_file()


def test_a_1v1_checkpoint_claims_no_team_play(checkpoint, tmp_path) -> None:
    folder = export_rlbot(checkpoint, tmp_path / "bot")
    details = tomllib.loads((folder / "bot.toml").read_text())["details"]
    assert details["tags"] == ["1v1"]
    readme = (folder / "README.md").read_text()
    assert "3v3" not in readme and "no team size is claimed" in readme
    assert "Python 3.11" in readme and "run_match.py" in readme


def test_the_shipped_bot_states_what_was_measured_and_where() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        folder = export_rlbot("pretrained", Path(tmp) / "bot")
        settings = json.loads((folder / "bot.json").read_text())
        assert list(settings["measured_team_sizes"]) == ["1v1"]
        assert "against RulePolicy" in settings["measured_team_sizes"]["1v1"]
        assert tomllib.loads((folder / "bot.toml").read_text())["details"]["tags"] == ["1v1"]
        assert "Measured in 1v1" in (folder / "README.md").read_text()


@pytest.mark.parametrize("name", ['Quote "Q" Bot', "Back\\slash", "Ünïcode ☆"])
def test_names_with_quotes_and_backslashes_are_carried_into_a_valid_bot_toml(checkpoint, tmp_path, name) -> None:
    from rlbot.config import load_player_config

    folder = export_rlbot(checkpoint, tmp_path / "bot", name=name)
    assert load_player_config(folder / "bot.toml", team=0).variety.name == name


@pytest.mark.parametrize("name", ["two\nlines", "   ", "x" * 40])
def test_names_the_game_cannot_show_are_refused_with_exit_2(checkpoint, tmp_path, capsys, name) -> None:
    with pytest.raises(ExportError, match="--name"):
        export_rlbot(checkpoint, tmp_path / "bot", name=name)
    args = ["export", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "cli"), "--name", name]
    assert rocketrl_main(args) == 2
    assert "--name" in capsys.readouterr().err
    assert not (tmp_path / "bot").exists() and not (tmp_path / "cli").exists()


def test_a_checkpoint_without_a_policy_is_refused_by_name(tmp_path) -> None:
    import torch

    path = save_checkpoint(tmp_path / "notes.safetensors", {"values": {"x": torch.zeros(3)}}, {"config": {}})
    with pytest.raises(ExportError, match="no policy network"):
        export_rlbot(path, tmp_path / "bot")


def test_files_get_ordinary_modes(checkpoint, tmp_path) -> None:
    import os

    umask = os.umask(0o022)
    try:
        folder = export_rlbot(checkpoint, tmp_path / "bot")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    for path in folder.rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) == (0o755 if path.is_dir() else 0o644), path


def test_full_games_through_packets_play_as_the_policy(checkpoint, tmp_path) -> None:
    """Two short games through the folder's own get_output against RulePolicy, with dropped and repeated packets,
    countdowns, kickoffs and goal replays: at least 99% of the bot's choices are the checkpoint's own on the same
    states, a repeated packet gets the same answer, and every game ends with a result."""
    from rocketrl.export.packet_game import PacketGameConfig, PacketGames
    from rocketrl.policy.load import load_policy, policy_from_checkpoint

    folder = export_rlbot(checkpoint, tmp_path / "bot")
    config = PacketGameConfig(num_games=2, game_seconds=8.0, num_arenas=2, drop_probability=0.05)
    report = PacketGames(folder, load_policy("rule_policy"), policy_from_checkpoint(checkpoint, deterministic=True),
                         config).play()  # fmt: skip
    assert report["games"] == 2 and report["wins"] + report["draws"] + report["losses"] == 2
    assert report["decisions_compared"] > 2 * 8 * 120 / 8 * 0.8
    assert report["agreement"] >= 0.99, report
    assert report["dropped"] > 0 and report["repeated"] > 0
    assert report["repeats_answered_alike"] == report["repeated"]


class _TieBot:
    """A bot whose network gives fixed logits [2.0, 1.5, 0.1] over three actions and reads `seen` from a packet."""

    def __init__(self, seen: np.ndarray) -> None:
        self.seen = seen
        table = np.array([[1, 0, 0, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1, 0, 0]], np.float32)
        self.policy = SimpleNamespace(discrete=True, lstm=None, table=table,
                                      logits=lambda obs: np.array([[2.0, 1.5, 0.1]], np.float32))  # fmt: skip

    def observe(self, packet, prev_controls) -> np.ndarray:
        return self.seen


def test_a_differing_choice_is_explained_by_what_the_bot_read_or_by_arithmetic() -> None:
    """Hand-made: the bot's network prefers action 0 by 0.5 logits over action 1 on rocketrl's observation. Where
    the checkpoint chose 0 and the bot 1, the bot's reading made the difference ('observation'); where the
    checkpoint chose 1 and the bot 0, the networks differ on one input ('arithmetic'); the gap is the largest
    observation difference, named; the summary counts both."""
    from rocketrl.env.obs import CAR_DEMOLISHED, OBS_SIZE
    from rocketrl.export.packet_game import explain_difference, summarize_differences

    direct_obs = np.zeros(OBS_SIZE, np.float32)
    direct_obs[1:3] = [1.0, -2.0]
    seen_obs = direct_obs.copy()
    seen_obs[1] = 1.25
    bot = _TieBot(seen_obs)
    table = bot.policy.table
    read = explain_difference(bot, None, np.zeros(8, np.float32), direct_obs, table[0], table[1])
    seen = {
        "observation_gap": 0.25, "fields": ["ball.pos.y"], "read": {"ball.pos.y": [1.25, 1.0]}, "demolished": False,
        "others_demolished": [], "only_in_a_wreck": False,
    }  # fmt: skip
    assert read == {**seen, "cause": "observation", "margin": 0.5}
    numeric = explain_difference(bot, None, np.zeros(8, np.float32), direct_obs, table[1], table[0])
    assert numeric == {**seen, "cause": "arithmetic", "margin": 0.5}
    summary = summarize_differences([read, numeric])
    assert summary["count"] == 2 and summary["by_cause"] == {"observation": 1, "arithmetic": 1}
    assert summary["by_field"] == {"ball.pos.y": 2} and summary["largest_observation_gap"] == 0.25
    assert summary["margins_logits"] == [0.5, 0.5]
    assert summary["each"] == [read, numeric]  # one by one, with what the bot read
    assert summary["while_demolished"] == 0
    # While the bot's own car is demolished its controls do nothing: such a difference is told apart.
    wrecked = np.zeros(OBS_SIZE, np.float32)
    wrecked[CAR_DEMOLISHED] = 1.0
    wrecked_seen = wrecked.copy()
    wrecked_seen[1] = 0.5
    bot = _TieBot(wrecked_seen)
    during = explain_difference(bot, None, np.zeros(8, np.float32), wrecked, table[0], table[1])
    assert during["demolished"] and during["fields"] == ["ball.pos.y"]
    assert summarize_differences([read, during])["while_demolished"] == 1
    assert summarize_differences([read, during])["only_in_a_wreck"] == 0
    # While the opponent's car is demolished, a difference only in its wreck's floats is told apart; one that also
    # reads the ball differently is not.
    from rocketrl.env.obs import OTHER_DEMOLISHED, OTHER_SIZE, OTHERS, field_name

    opponent = OTHERS.start + 2 * OTHER_SIZE  # slot 2: the first opponent (two teammate slots come first)
    forward_z = next(i for i in range(opponent, opponent + OTHER_SIZE) if field_name(i) == "other[2].forward.z")
    wreck = np.zeros(OBS_SIZE, np.float32)
    wreck[opponent + OTHER_DEMOLISHED] = 1.0
    wreck_seen = wreck.copy()
    wreck_seen[forward_z] = 0.07
    bot = _TieBot(wreck_seen)
    only_wreck = explain_difference(bot, None, np.zeros(8, np.float32), wreck, table[0], table[1])
    assert only_wreck["others_demolished"] == ["other[2]"] and only_wreck["fields"] == ["other[2].forward.z"]
    assert only_wreck["only_in_a_wreck"] and not only_wreck["demolished"]
    wreck_seen[1] = 0.5
    bot = _TieBot(wreck_seen)
    also_ball = explain_difference(bot, None, np.zeros(8, np.float32), wreck, table[0], table[1])
    assert also_ball["fields"] == ["ball.pos.y", "other[2].forward.z"] and not also_ball["only_in_a_wreck"]
    # Only five fields are listed; a sixth that differs outside the wreck still counts.
    wreck_seen[1] = 0.0
    for name in ("forward.x", "forward.y", "up.x", "up.y", "up.z"):
        wreck_seen[next(i for i in range(opponent, opponent + OTHER_SIZE) if field_name(i) == f"other[2].{name}")] = 0.1
    wreck_seen[2] = 0.002
    bot = _TieBot(wreck_seen)
    hidden_ball = explain_difference(bot, None, np.zeros(8, np.float32), wreck, table[0], table[1])
    assert all(name.startswith("other[2].") for name in hidden_ball["fields"]) and len(hidden_ball["fields"]) == 5
    assert not hidden_ball["only_in_a_wreck"]
    assert summarize_differences([read, only_wreck, also_ball])["only_in_a_wreck"] == 1
    assert summarize_differences([])["count"] == 0
