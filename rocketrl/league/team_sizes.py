"""The team sizes a checkpoint was trained and measured at, and a warning for games outside them.

A checkpoint records its run's config: the env's team sizes, or the stages of its team-size curriculum
(league.curriculum) when it had one. A card (the JSON beside a shipped checkpoint, e.g. pretrained/gauntlet/v1.json)
names the team sizes its figures were measured at ("by_team_size", or one "team_size", 1v1 when absent). A bot
asked to play another size still plays (one network reads every size up to 3v3, the missing cars' slots empty),
but the figures say nothing of it, so the commands that play games warn first.
"""

from __future__ import annotations

import json
from pathlib import Path

from rocketrl.sim.arena import MAX_TEAM_SIZE


def size_text(blue: int, orange: int) -> str:
    """'2v2' for (2, 2)."""
    return f"{blue}v{orange}"


def trained_team_sizes(config: dict) -> list[str]:
    """The team sizes ('1v1', '2v2', ...) a run's config ({section: {field: value}}) trained at, in order."""
    env, league = config.get("env", {}), config.get("league", {})
    curriculum = curriculum_file(league.get("curriculum"))
    if curriculum is not None:
        from rocketrl.league.curriculum import load_curriculum

        sizes = [size_text(s.blue_size, s.orange_size) for s in load_curriculum(curriculum).stages]
        return list(dict.fromkeys(sizes))
    return [size_text(int(env.get("blue_size", 1)), int(env.get("orange_size", 1)))]


def curriculum_file(recorded: str | None) -> Path | None:
    """The curriculum file a run's config recorded, or the preset of the same name in this installation when the
    recorded path is gone (a checkpoint trained elsewhere, such as a shipped bot); None without a curriculum."""
    if not recorded:
        return None
    if Path(recorded).is_file():
        return Path(recorded)
    preset = Path(__file__).resolve().parent.parent / "configs" / "presets" / Path(recorded).name
    return preset if preset.is_file() else None


def measured_team_sizes(checkpoint: Path) -> list[str]:
    """The team sizes the card beside `checkpoint` (same name, .json) was measured at: the sizes of its
    "by_team_size" figures, else its one "team_size" (1v1 when absent); none without a card."""
    card_path = checkpoint.with_suffix(".json")
    if not card_path.is_file():
        return []
    card = json.loads(card_path.read_text())
    return [str(size) for size, results in card_results(card, "1v1").items() if results]


def card_results(card: dict, default_size: str) -> dict[str, dict]:
    """Team size -> {opponent: result} of a bot's card: its "by_team_size", or, where the card (as the 1v1 bot's
    does) keeps its figures at the top level ("vs_rule_policy" for RulePolicy, "generalization"), those for its one
    "team_size", else `default_size`."""
    if isinstance(card.get("by_team_size"), dict):
        return card["by_team_size"]
    size = card.get("team_size") or default_size
    return {size: {"RulePolicy": card.get("vs_rule_policy"), **card.get("generalization", {})}}


def team_size_warning(name: str, trained: list[str], measured: list[str], blue: int, orange: int) -> str | None:
    """A warning when blue v orange is neither a trained nor a measured size of the bot `name` (either side of
    the size counts: a bot trained at 1v2 has played 2v1 too); None when it is."""
    known = set(trained) | set(measured)
    if size_text(blue, orange) in known or size_text(orange, blue) in known:
        return None
    told = f"trained at {', '.join(trained) or 'unknown sizes'}"
    if measured:
        told += f", measured at {', '.join(measured)}"
    return (
        f"{name} was {told}; it plays {size_text(blue, orange)} with observation slots it never saw filled that "
        f"way, so expect weaker play than its figures (train it at that size, e.g. with the team preset)"
    )


def checkpoint_team_size_warning(spec: str, blue: int, orange: int) -> str | None:
    """team_size_warning for the checkpoint `spec` names ('pretrained', 'gauntlet_vN' or a path); None for the
    scripted and random policies, which play any size up to MAX_TEAM_SIZE alike."""
    from rocketrl.infra.checkpoint import read_meta
    from rocketrl.policy.load import (
        RANDOM_POLICY,
        RULE_POLICY,
        SCRIPTED_NAMES,
        checkpoint_config,
        is_named_bot,
        resolve_checkpoint,
    )

    if spec in (RULE_POLICY, "rule", RANDOM_POLICY, *SCRIPTED_NAMES):
        return None
    if not is_named_bot(spec) and not Path(spec).is_file():
        return None  # load_policy names the problem
    path = resolve_checkpoint(spec)
    trained = trained_team_sizes(checkpoint_config(path, read_meta(path)))
    return team_size_warning(spec, trained, measured_team_sizes(path), blue, orange)


def beyond_limit_message(text: str) -> str:
    """The error for a team size above MAX_TEAM_SIZE cars a team."""
    return (
        f"--team-size {text!r}: rocketrl plays at most {MAX_TEAM_SIZE}v{MAX_TEAM_SIZE} (the observation has room for "
        f"{MAX_TEAM_SIZE - 1} teammates and {MAX_TEAM_SIZE} opponents); give 1, 2, 3 or BLUEvORANGE up to "
        f"{MAX_TEAM_SIZE}v{MAX_TEAM_SIZE}"
    )
