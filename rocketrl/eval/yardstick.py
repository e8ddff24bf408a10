"""Yardstick games: a candidate against bots it is not judged by (the community bots, say), recorded beside a verdict.

    rocketrl climb ... --yardstick necto:runs/nexto/necto-model.pt,nexto:runs/nexto/nexto-model.pt

After each step's judging `rocketrl climb` plays its candidate against every yardstick bot on each yardstick seed,
greedy, from kickoff spawns moved by up to --yardstick-jitter uu (default 5, as every shipped bot's whole gauntlet
and its community games were played), with the judging's games, game clock, workers, engine and device. The report
(OUT/stepK_yardstick.json) is written after the verdict and never changes it: a line is judged against its own kind,
and bots outside it stay a measure, not a target.
"""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_JITTER = 5.0
"""uu: the spawns every shipped bot's whole gauntlet and community games were played from."""


def add_yardstick_arguments(p: argparse.ArgumentParser) -> None:
    """--yardstick, --yardstick-seeds and --yardstick-jitter."""
    p.add_argument(
        "--yardstick", default=None, metavar="BOTS", help="comma-separated bots to measure each judged candidate "
        "against, after its judging and never in it (e.g. necto:PATH,nexto:PATH; default none)",
    )  # fmt: skip
    p.add_argument(
        "--yardstick-seeds", default="0", metavar="SEEDS", help="the yardstick games' seeds, one set of the judging's "
        "--num-games per seed and bot (default 0: the same starts for every step)",
    )  # fmt: skip
    p.add_argument(
        "--yardstick-jitter", type=float, default=DEFAULT_JITTER, metavar="UU", help="kickoff spawns of the "
        f"yardstick games moved by up to this many uu (default {DEFAULT_JITTER:g})",
    )  # fmt: skip


def check_yardstick(args: argparse.Namespace) -> tuple[list[str], list[int]]:
    """The yardstick's bots and seeds, each bot loaded once so that a missing file or a bad name is refused by name
    before any training; ([], []) when --yardstick is not given."""
    from rocketrl.env.setters import MAX_KICKOFF_JITTER, kickoff_jitter_in_range
    from rocketrl.eval.judge_cli import parse_seeds
    from rocketrl.policy.load import load_policy

    if args.yardstick is None:
        return [], []
    bots = list(dict.fromkeys(part.strip() for part in args.yardstick.split(",") if part.strip()))
    if not bots:
        raise ValueError(f"--yardstick {args.yardstick!r}: name at least one bot, e.g. nexto:PATH or rule_policy")
    seeds = parse_seeds(args.yardstick_seeds, "--yardstick-seeds")
    if not kickoff_jitter_in_range(args.yardstick_jitter):
        raise ValueError(f"--yardstick-jitter {args.yardstick_jitter:g}: must lie in [0, {MAX_KICKOFF_JITTER:g}] uu")
    for bot in bots:
        try:
            load_policy(bot, device=args.device, deterministic=True)
        except (FileNotFoundError, ValueError) as exc:
            raise ValueError(f"--yardstick {bot!r}: {exc}") from None
    return bots, seeds


def measure(candidate: str, bots: list[str], seeds: list[int], args: argparse.Namespace, json_path: Path) -> None:
    """Play `candidate` against each of `bots` on each of `seeds` (the judging's games settings from `args`, the
    yardstick's kickoff jitter), print each set with its goal difference a game, and write the report."""
    from rocketrl.eval.judge_cli import games_threads, play_set
    from rocketrl.infra.atomic_json import write_json_atomic
    from rocketrl.infra.checkpoint import file_sha256
    from rocketrl.infra.machine_cache import machine_words
    from rocketrl.policy.load import resolve_checkpoint

    games = argparse.Namespace(**vars(args))
    games.kickoff_jitter = args.yardstick_jitter
    sets = []
    with games_threads(args.device):  # as the judging plays, and the next run gets its threads back
        for seed in seeds:
            for bot in bots:
                result = play_set(candidate, bot, seed, games)
                margin = (result.goals_for - result.goals_against) / max(result.num_games, 1)
                print(f"yardstick, seed {seed}: {result.name_b}: won {result.wins} of {result.num_games}, "
                      f"{margin:+.2f} goals a game", flush=True)  # fmt: skip
                sets.append({"seed": seed, "goals_margin_per_game": margin} | result.to_dict())
    report = {
        "candidate": candidate,
        "candidate_sha256": file_sha256(resolve_checkpoint(candidate)),
        "what": "games against bots the candidate is not judged by, played after its verdict and never in it",
        "machine": machine_words(),
        "engine": args.engine,
        "settings": {
            "num_games": args.num_games,
            "game_seconds": args.game_seconds,
            "kickoff_jitter": args.yardstick_jitter,
            "seeds": seeds,
            "deterministic": True,
        },
        "sets": sets,
    }
    write_json_atomic(json_path, report)
    print(f"yardstick games written to {json_path}", flush=True)
