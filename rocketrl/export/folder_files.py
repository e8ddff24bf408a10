"""The text files of an exported RLBot v5 bot folder: bot.toml, loadout.toml, match.toml and README.md.

Field names follow the rlbot 2.0.0b56 package's config reader (`rlbot/config.py`: `load_player_config` reads
[settings] name, agent_id, root_dir, run_command, run_command_linux, loadout_file, hivemind; `load_player_loadout`
reads [blue_loadout] / [orange_loadout] car_id, team_color_id, ...; `load_match_config` reads [rlbot], [match],
[mutators] and [[cars]]). Strings are written as TOML basic strings (JSON's escapes are TOML's).
"""

from __future__ import annotations

import json
import unicodedata

OCTANE_CAR_ID = 23
"""The game's body id of the Octane, whose hitbox every rocketrl bot trains with (RocketSim's default car)."""
MAX_NAME_LENGTH = 32


class BadBotName(ValueError):
    """A bot name that the game or a bot.toml cannot carry."""


def check_name(name: str) -> str:
    """`name` stripped, or BadBotName naming what is wrong: empty, too long, or holding control characters."""
    stripped = name.strip()
    if not stripped:
        raise BadBotName("--name is empty: give the bot a name, e.g. --name 'My Bot'")
    if len(stripped) > MAX_NAME_LENGTH:
        raise BadBotName(
            f"--name {stripped!r} has {len(stripped)} characters; the game shows {MAX_NAME_LENGTH} at most"
        )
    if any(unicodedata.category(ch).startswith("C") for ch in stripped):
        raise BadBotName(f"--name {stripped!r} holds a control character (a newline, tab, ...): use printable text")
    return stripped


def toml_string(text: str) -> str:
    """`text` as a TOML basic string."""
    return json.dumps(text, ensure_ascii=False)


def team_size_text(sizes: list[str]) -> str:
    return ", ".join(sizes) if sizes else "none"


def bot_toml(name: str, agent_id: str, description: str, tags: list[str]) -> str:
    """The RLBot v5 bot config: the bot runs from the interpreter of a `venv` folder inside the bot folder."""
    return (
        "[settings]\n"
        f"name = {toml_string(name)}\n"
        f"agent_id = {toml_string(agent_id)}\n"
        'loadout_file = "loadout.toml"\n'
        "# Run from this folder with its own virtual environment (README.md): python -m venv venv, then install\n"
        "# requirements.txt into it. Python 3.11 or newer.\n"
        'run_command = ".\\\\venv\\\\Scripts\\\\python.exe bot.py"\n'
        'run_command_linux = "./venv/bin/python bot.py"\n'
        "hivemind = false\n"
        "\n"
        "[details]\n"
        f"description = {toml_string(description)}\n"
        'developer = "rocketrl"\n'
        'language = "python"\n'
        f"tags = {json.dumps(tags)}\n"
    )


def loadout_toml() -> str:
    """Both teams' loadouts: the Octane, in the team's colours."""
    return (
        "".join(
            f"[{team}_loadout]\ncar_id = {OCTANE_CAR_ID}\nteam_color_id = 0\ncustom_color_id = 0\n\n"
            for team in ("blue", "orange")
        ).rstrip("\n")
        + "\n"
    )


def match_toml() -> str:
    """An example 1v1 match: this bot on blue against the game's own All-Star bot."""
    return (
        "# An example match for RLBot v5: this bot (blue) against Psyonix's All-Star bot (orange), on a standard\n"
        "# soccar map. Start it with `python run_match.py` (README.md), or load it in the RLBot v5 GUI.\n"
        "[rlbot]\n"
        'launcher = "Steam"  # or "Epic"\n'
        "auto_start_agents = true\n"
        "wait_for_agents = true\n"
        "\n"
        "[match]\n"
        'game_mode = "Soccar"\n'
        'game_map_upk = "Stadium_P"\n'
        "skip_replays = false\n"
        "\n"
        "[mutators]\n"
        'match_length = "FiveMinutes"\n'
        "\n"
        "[[cars]]\n"
        'config_file = "bot.toml"\n'
        "team = 0\n"
        "\n"
        "[[cars]]\n"
        'type = "Psyonix"\n'
        'skill = "AllStar"\n'
        "team = 1\n"
    )


RUN_MATCH = '''"""Start the example match (match.toml) in Rocket League through RLBot v5: python run_match.py"""

from pathlib import Path

from rlbot.managers import MatchManager

if __name__ == "__main__":
    manager = MatchManager()
    manager.start_match(Path(__file__).parent / "match.toml")
    input("The match is running. Press Enter here to stop it.\\n")
    manager.shut_down()
'''


def readme(name: str, settings: dict, measured: dict[str, str]) -> str:
    """The folder's README: what the bot is, what was measured, and the steps from download to a match."""
    trained = team_size_text(settings["trained_team_sizes"])
    if measured:
        figures = "".join(f"- {size}: {text}\n" for size, text in measured.items())
        claim = (
            f"Measured in {team_size_text(list(measured))} (RocketSim, full games):\n\n{figures}\n"
            "It has not been measured in other team sizes; it may play them, but nothing says how well.\n"
        )
    else:
        claim = f"Trained in {trained}. This export carries no measured figures; no team size is claimed.\n"
    return (
        f"# {name}\n\n"
        f"A Rocket League bot exported by rocketrl {settings['rocketrl_version']} from `{settings['checkpoint']}` "
        f"for RLBot v5. It acts every {settings['tick_skip']} ticks (as in training) and drives the Octane "
        "(`loadout.toml`), whose hitbox it trained with.\n\n"
        f"{claim}\n"
        "## From download to a running match (Windows)\n\n"
        "1. Install Rocket League (Steam or Epic) and the RLBot v5 launcher from rlbot.org; start the launcher once\n"
        "   so that it installs the RLBot server.\n"
        '2. Install Python 3.11 or newer from python.org (tick "Add python.exe to PATH").\n'
        "3. Open a terminal in this folder and set up its own environment:\n\n"
        "       python -m venv venv\n"
        "       venv\\Scripts\\pip install -r requirements.txt\n"
        "       venv\\Scripts\\python bot.py --self-test\n\n"
        "   The self-test plays offline packets as both teams and must end with `self-test passed`.\n"
        "4. Either add this folder's `bot.toml` in the RLBot v5 GUI and start a match there, or run the example\n"
        "   match (this bot against Psyonix's All-Star bot, `match.toml`; set `launcher` to `Epic` if needed):\n\n"
        "       venv\\Scripts\\python run_match.py\n\n"
        "On Linux use `venv/bin/pip` and `venv/bin/python`. `requirements.txt` pins the rlbot package to the release\n"
        "this bot was checked with (its betas have changed the interface from one to the next).\n"
    )
