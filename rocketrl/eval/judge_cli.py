"""`rocketrl judge`: does a candidate replace its parent? Sets of full games and the shipping rule (eval.judge).

    rocketrl average runs/gen_seed2 runs/gen_seed3 runs/gen_seed4 --from-step 10000000 --out next.safetensors
    rocketrl judge next.safetensors --parent gauntlet_v14 [--json judged.json]

Each set is `rocketrl eval --checkpoint CANDIDATE --opponents PARENT --seed S` with the sets' settings (100 greedy
games of 120 s from spawns jittered by 5 uu), so every set can be replayed alone and comes out the same. With
`--field gauntlet_v13,gauntlet_v12,...` the candidate and the parent also play those bots on the first seed's games
(on the first K seeds' with `--field-seeds K`: five bots on one seed give the two bots' difference a 95% interval
of about +-6 points, on two about +-4), and a candidate clearly weaker than its parent there does not ship. With
`--floor scripted` (or `--floor ball_chaser=0.99,...`) the candidate also plays each floor bot on the first seed's
games, before anything else, and must win that share of them. Exit code 0 when the candidate ships by the rule, 1
when it does not, 2 on bad input.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from rocketrl.cli_args import positive_int
from rocketrl.eval.judge import POOLED_MIN_GAMES, RULES, SCRIPTED_FLOOR, SET_SEEDS

_SETTINGS = ("num_games", "game_seconds", "kickoff_jitter", "workers", "device")
"""What decided each set's games besides its seed, for the JSON report."""
RECENT_FIELD = 5
"""Bots in `--field recent`: the gauntlet bots just before the parent."""


_MIRROR = "the candidate is the parent itself; judge a bot trained from it (a run folder or checkpoint)"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `judge` command's arguments."""
    p = sub.add_parser(
        "judge",
        help="play a candidate against its parent in sets of games; it ships if it passes the shipping rule (--rule)",
        description="The candidate replaces the parent when it wins every set (more wins than losses) and the "
        "pooled win rate's 95% interval lies above even; with --rule pooled, when 1,000 games or more pool to "
        "an interval above even and it is not behind its parent against the --field bots. "
        "Games are greedy, full (kickoffs after goals, a clock, "
        "overtime) and from kickoff spawns jittered by --kickoff-jitter uu; each set has its own arena seed. With "
        "--field, a candidate clearly weaker than its parent against those bots on the same games does not ship.",
    )
    p.add_argument(
        "candidate", help="the bot to judge: a checkpoint path, a run folder (its last checkpoint) or a name"
    )
    p.add_argument(
        "--parent", default="pretrained", help="the bot to beat (default pretrained, the newest shipped bot)"
    )
    p.add_argument("--json", default=None, metavar="PATH", help="write every set and the verdict as JSON")
    add_judging_arguments(p)
    p.set_defaults(func=cmd_judge)


CLIMB_DEFAULTS = {
    "rule": "pooled",
    "seeds": "1,2,3,4,5,6,7,8,9,10",
    "field": "recent",
    "field_seeds": 2,
    "floor": "scripted",
}
"""How `rocketrl climb` judges each step unless told otherwise: as the shipped bots since gauntlet_v25 were."""


def add_judging_arguments(p: argparse.ArgumentParser, defaults: dict | None = None, games_only: bool = False) -> None:
    """The arguments that decide a judging's games and rule (`judge`, and `climb` with CLIMB_DEFAULTS).

    `games_only`: --workers, --engine and --device reach the judging's games and nothing else (climb: its training
    takes them from the preset or its overrides), and their help says so."""
    d = {"rule": "every-set", "seeds": ",".join(map(str, SET_SEEDS)), "field": None, "field_seeds": 1, "floor": None}
    d |= defaults or {}
    p.add_argument(
        "--rule",
        choices=RULES,
        default=d["rule"],
        help="every-set: every set won and the pooled interval above even; pooled: at least "
        f"{POOLED_MIN_GAMES} games with the pooled interval above even and, with --field (required), the candidate "
        "not behind its parent there (default %(default)s). Choose it before the games",
    )
    p.add_argument(
        "--seeds",
        default=d["seeds"],
        help="comma-separated arena seeds, one set each (default %(default)s; the pooled rule needs ten sets of 100)",
    )
    p.add_argument(
        "--field",
        default=d["field"],
        metavar="BOTS",
        help="also play the candidate and the parent against these bots (comma-separated; 'gauntlet': every "
        f"gauntlet bot; 'recent': the {RECENT_FIELD} shipped just before the parent) on the first seed's games "
        f"(--field-seeds); the candidate does not ship if clearly weaker there (default {d['field'] or 'none'})",
    )
    p.add_argument(
        "--field-seeds",
        type=positive_int,
        default=d["field_seeds"],
        metavar="K",
        help="play the field on the first K seeds' games, K sets per bot (default %(default)s); more seeds, a firmer "
        "field",
    )
    p.add_argument(
        "--floor",
        default=d["floor"],
        metavar="BOTS",
        help="the share of the first seed's games the candidate must win against named bots: 'scripted' ("
        + ", ".join(f"{bot} {share:.0%}%" for bot, share in SCRIPTED_FLOOR.items())
        + ") and/or BOT=SHARE pairs, comma-separated, e.g. scripted,ball_chaser=0.99; played first (default "
        f"{d['floor'] or 'none'})",
    )
    p.add_argument("--num-games", type=positive_int, default=100, help="games per set (default 100)")
    p.add_argument("--game-seconds", type=float, default=120.0, help="game clock in seconds (default 120)")
    p.add_argument(
        "--kickoff-jitter", type=float, default=5.0, metavar="UU", help="move kickoff spawns by up to UU (default 5 "
        "uu; give 100 to judge a candidate against its parent: at 5 two greedy bots meet each other's one kickoff "
        "after every goal, and a counter to it passes for a better bot)",
    )  # fmt: skip

    def only(training: str) -> str:  # climb: these reach the games; its training has its own settings
        return f"; the judging's games only (training: the preset's, or --{training})" if games_only else ""

    p.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="stepping workers (default: CPU cores)" + only("env.num-workers"),
    )
    p.add_argument(
        "--engine",
        choices=("rocketsim", "warp"),
        default="rocketsim",
        help="physics (default rocketsim)" + only("env.engine"),
    )
    p.add_argument("--device", default="cpu", help="device of the networks (cpu or cuda)" + only("run.device"))


def parse_seeds(text: str, option: str = "--seeds") -> list[int]:
    """'0,7,11' -> [0, 7, 11]; refuses non-integers, repeats and an empty list, naming `option`."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    try:
        seeds = [int(part) for part in parts]
    except ValueError:
        raise ValueError(f"{option} {text!r}: give comma-separated integers, e.g. 0,7,11,13,17") from None
    if not seeds:
        raise ValueError(f"{option}: give at least one seed, e.g. 0,7,11,13,17")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"{option} {text!r}: a seed given twice replays the same games; name each seed once")
    return seeds


def parse_floor(text: str) -> dict[str, float]:
    """'scripted,ball_chaser=0.99' -> {bot: share}: 'scripted' stands for `SCRIPTED_FLOOR`, a later pair overrides
    an earlier one; refuses a bot without a share, a share outside (0, 1] and an empty list by name."""
    floor: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if part == "scripted":
            floor |= SCRIPTED_FLOOR
            continue
        bot, sep, share_text = part.partition("=")
        try:
            share = float(share_text) if sep else None
        except ValueError:
            share = None
        if not bot.strip() or share is None or not 0.0 < share <= 1.0:
            raise ValueError(
                f"--floor {part!r}: give BOT=SHARE with a share of the games in (0, 1], e.g. ball_chaser=0.9, "
                "or 'scripted'"
            )
        floor[bot.strip()] = share
    if not floor:
        raise ValueError(f"--floor {text!r}: name at least one bot, e.g. --floor scripted")
    return floor


def check_judging(args: argparse.Namespace, seeds: list[int]) -> dict[str, float]:
    """Refuse, by name, judging settings that cannot be played or cannot decide (before any game, or any training
    of `climb`); returns the parsed floor."""
    from rocketrl.env.setters import MAX_KICKOFF_JITTER, kickoff_jitter_in_range

    floor = parse_floor(args.floor) if args.floor is not None else {}
    if args.rule == "pooled" and not args.field:
        raise ValueError("--rule pooled: give --field BOTS too; the pooled rule asks the candidate to be level there")
    if args.rule == "pooled" and len(seeds) * args.num_games < POOLED_MIN_GAMES:
        raise ValueError(
            f"--rule pooled: {len(seeds)} sets of {args.num_games} games; it needs {POOLED_MIN_GAMES}, "
            "e.g. --seeds 41,43,47,53,59,61,67,71,73,79"
        )
    if args.field_seeds > 1 and not args.field:
        raise ValueError(f"--field-seeds {args.field_seeds}: it sets how the --field bots are played; give --field too")
    if args.field_seeds > len(seeds):
        raise ValueError(
            f"--field-seeds {args.field_seeds}: only {len(seeds)} seeds were given (--seeds); the field is played on "
            "the first K of them"
        )
    if not kickoff_jitter_in_range(args.kickoff_jitter):
        raise ValueError(f"--kickoff-jitter {args.kickoff_jitter:g}: must lie in [0, {MAX_KICKOFF_JITTER:g}] uu")
    return floor


@contextmanager
def games_threads(device: str) -> Iterator[None]:
    """torch on one CPU thread while games play on the CPU (small batched ops: one thread is fastest and never
    stalls on busy cores); the thread count is put back afterwards, so a climb's next run trains with every thread
    it had."""
    import torch

    threads = torch.get_num_threads()
    if device == "cpu":
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def cmd_judge(args: argparse.Namespace) -> int:
    """Play the sets (and the field), print each and the verdict; 0 if the candidate ships, 1 if not (on one CPU
    thread, `games_threads`)."""
    with games_threads(args.device):
        return _judge(args)


def _judge(args: argparse.Namespace) -> int:
    from rocketrl.eval.judge import FloorResult, compare_field, judge_sets
    from rocketrl.infra.atomic_json import write_json_atomic
    from rocketrl.infra.checkpoint import file_sha256
    from rocketrl.infra.machine_cache import machine_words
    from rocketrl.policy.load import resolve_checkpoint, same_checkpoint

    seeds = parse_seeds(args.seeds)
    floor = check_judging(args, seeds)
    if same_checkpoint(args.candidate, args.parent):
        raise ValueError(f"{args.candidate!r} and --parent {args.parent!r}: {_MIRROR}")
    field = field_bots(args.field, (args.candidate, args.parent)) if args.field else []
    try:  # the bytes judged, read before any game: a copy of this file elsewhere is the same bot
        candidate_sha256 = file_sha256(resolve_checkpoint(args.candidate))
    except (FileNotFoundError, ValueError):
        candidate_sha256 = None  # a scripted bot: load_policy names a bad one
    floor_results = []
    for bot, share in floor.items():  # first: the cheapest games, and a bad bot name is refused before the long ones
        played = play_set(args.candidate, bot, seeds[0], args)
        floor_results.append(FloorResult(played.name_b, played.wins, played.draws, played.losses, share))
        print(f"floor, seed {seeds[0]}: {floor_results[-1].summary()}", flush=True)
    sets = [play_set(args.candidate, args.parent, seed, args) for seed in seeds]
    comparison = None
    field_seeds = seeds[: args.field_seeds]
    if field:  # both bots against each field bot, on the first sets' seeds: the same games for the two
        mine = [play_set(args.candidate, bot, seed, args) for seed in field_seeds for bot in field]
        theirs = [play_set(args.parent, bot, seed, args) for seed in field_seeds for bot in field]
        comparison = compare_field(mine, theirs)
        named = "seed" if len(field_seeds) == 1 else "seeds"
        print(f"field, {named} {', '.join(map(str, field_seeds))}: {comparison.summary()}")
    verdict = judge_sets(sets, seeds, comparison, rule=args.rule, floor=floor_results)
    print(f"{sets[0].name_a} against {sets[0].name_b} over {len(sets)} sets: {verdict.summary()}")
    if args.json:
        report = {
            "candidate": args.candidate,
            "candidate_sha256": candidate_sha256,
            "parent": args.parent,
            "machine": machine_words(),
            "engine": args.engine,
            "settings": {key: getattr(args, key) for key in _SETTINGS} | {"deterministic": True},
            "rule": args.rule,
            "sets": [{"seed": seed} | result.to_dict() for seed, result in zip(seeds, sets, strict=True)],
            "verdict": verdict.to_dict(),
        }
        if comparison is not None:
            match_seeds = [seed for seed in field_seeds for _ in field]
            matches = [
                {"seed": seed, "candidate": a.to_dict(), "parent": b.to_dict()}
                for seed, a, b in zip(match_seeds, mine, theirs, strict=True)
            ]
            report["field"] = comparison.to_dict() | {"seed": seeds[0], "seeds": field_seeds, "matches": matches}
        if floor_results:
            report["floor"] = {"seed": seeds[0], "bots": [f.to_dict() for f in floor_results]}
        write_json_atomic(args.json, report)
        print(f"results written to {args.json}")
    return 0 if verdict.ships else 1


def play_set(spec_a: str, spec_b: str, seed: int, args: argparse.Namespace):
    """One set: `spec_a` against `spec_b`, both greedy and loaded with the set's seed as `rocketrl eval --seed S
    --deterministic` loads them, so every set replays alone; the games' settings from `args` (num_games,
    game_seconds, workers, engine, kickoff_jitter, device). Returns its MatchResult (printed)."""
    from rocketrl.league.match import MatchConfig, play_match
    from rocketrl.policy.load import load_policy, policy_name

    a, b = (load_policy(spec, device=args.device, seed=seed, deterministic=True) for spec in (spec_a, spec_b))
    config = MatchConfig.games(
        num_games=args.num_games,
        game_seconds=args.game_seconds,
        num_workers=args.workers,
        engine=args.engine,
        seed=seed,
        kickoff_jitter=args.kickoff_jitter,
    )
    result = play_match(a, b, config, policy_name(spec_a), policy_name(spec_b), device=args.device)
    print(f"seed {seed}: {result.summary()} [{result.wall_seconds:.0f} s]", flush=True)
    return result


def recent_bots(parent: str, count: int = RECENT_FIELD) -> list[str]:
    """The `count` gauntlet bots shipped just before `parent`, newest first (the newest `count` when the parent is
    not a gauntlet bot): the field the shipped bots since gauntlet_v21 were judged on."""
    from rocketrl.policy.load import gauntlet_bots, same_checkpoint

    bots = gauntlet_bots()
    index = next((i for i, bot in enumerate(bots) if same_checkpoint(bot, parent)), len(bots))
    return bots[max(0, index - count) : index][::-1]


def field_bots(text: str, judged: tuple[str, str]) -> list[str]:
    """The field of `--field`: comma-separated bots, 'gauntlet' standing for every gauntlet bot and 'recent' for the
    five shipped just before the parent (`recent_bots`); the candidate and the parent themselves (`judged`, however
    named) are left out, and a field left empty is refused."""
    from rocketrl.policy.load import gauntlet_bots, same_checkpoint

    named = {"gauntlet": gauntlet_bots, "recent": lambda: recent_bots(judged[1])}
    bots: list[str] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        for bot in named[part]() if part in named else [part]:
            if bot not in bots and not any(same_checkpoint(bot, spec) for spec in judged):
                bots.append(bot)
    if not bots:
        raise ValueError(f"--field {text!r}: no bot left besides the candidate and the parent; name other bots")
    return bots
