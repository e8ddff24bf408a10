"""`rocketrl eval`: full games of a checkpoint against opponents, or a round-robin tournament.

    rocketrl eval --checkpoint runs/x/checkpoints/step_X.safetensors --opponents rule_policy,PATH2 \\
        --num-games 25 --team-size 1 [--json out.json]
    rocketrl eval --tournament --policies rule_policy,PATH1,PATH2 --num-games 10
    rocketrl eval --checkpoint PATH --gauntlet --num-games 100   # every shipped bot and scripted opponent
    rocketrl eval --checkpoint PATH --engine warp   # the same games on the warp engine

Results update the ratings (Elo with RulePolicy anchored at 1500, and OpenSkill) stored in a league
file: by default the checkpoint's run folder league.json, else --league PATH.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

from rocketrl.cli_args import opposed_team_size, positive_int, warn_team_size
from rocketrl.eval.game_stats import figures_for_json, format_stats, replay_paths, stats_of_files
from rocketrl.eval.team_stats import team_label, team_stats, team_stats_as_json
from rocketrl.infra.atomic_json import write_json_atomic
from rocketrl.infra.machine_cache import machine_words
from rocketrl.league.match import MatchConfig, MatchResult, play_match
from rocketrl.league.ratings import RatingTable, format_ranking
from rocketrl.league.replay import load_replay


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="play full games between policies; win rates, intervals and ratings",
        description="Play full games (kickoffs after goals, a game clock, overtime) in batched arenas, "
        "each side equally often. Policies: 'rule_policy', 'random', 'shadow_goalie', 'ball_chaser' (scripted, "
        "kept out of training), 'rotation' (a scripted team that rotates), 'pretrained' or 'pretrained_team' (the "
        "shipped bots) or a checkpoint path.",
    )
    p.add_argument(
        "--checkpoint",
        help="the policy to evaluate (a checkpoint path, a run folder for its last checkpoint, pretrained, or a "
        "scripted name)",
    )
    p.add_argument("--opponents", default="rule_policy", help="comma-separated opponents (default rule_policy)")
    p.add_argument(
        "--gauntlet",
        action="store_true",
        help="play --checkpoint against every gauntlet bot (each shipped bot, frozen) and every scripted opponent "
        "(the rotation team too when a team has more than one car), "
        "greedy, from spawns jittered by 5 uu unless --kickoff-jitter says otherwise",
    )
    p.add_argument("--tournament", action="store_true", help="round robin among --policies and a ranking table")
    p.add_argument("--policies", default=None, help="comma-separated policies of the tournament")
    p.add_argument("--num-games", type=positive_int, default=25, help="games per pairing (default 25)")
    p.add_argument("--team-size", type=opposed_team_size, default=(1, 1), help="1, 2, 3 or BLUEvORANGE (default 1)")
    p.add_argument("--game-seconds", type=float, default=300.0, help="game clock in seconds (default 300)")
    p.add_argument("--no-overtime", action="store_true", help="a level game at the end of the clock is a draw")
    p.add_argument("--max-overtime-seconds", type=float, default=300.0, help="overtime cap, then a draw")
    p.add_argument("--arenas", type=positive_int, default=None, help="arenas side by side (default min(games, 64))")
    p.add_argument("--workers", type=positive_int, default=None, help="stepping workers (default: CPU cores)")
    p.add_argument(
        "--engine",
        choices=("rocketsim", "warp"),
        default="rocketsim",
        help="physics engine of the games (default rocketsim; warp: rocketrl's batched engine, e.g. to compare "
        "how a bot plays in both)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--deterministic", action="store_true", help="checkpoints act greedily instead of sampling")
    p.add_argument(
        "--kickoff-jitter",
        type=float,
        default=0.0,
        metavar="UU",
        help="move each car's kickoff spawn by up to UU in x and y (0 to 100, default 0: the exact spawns); "
        "with --deterministic against RulePolicy, 5 makes the games independent trials instead of replays "
        "of the same few kickoffs",
    )
    p.add_argument("--device", default="cpu", help="device of the networks (cpu or cuda)")
    p.add_argument(
        "--compile-rule", action="store_true", help="torch.compile RulePolicy: ~10x faster per step, ~30 s to compile"
    )
    p.add_argument("--league", default=None, help="ratings file to update (default: <run>/league.json)")
    p.add_argument("--no-ratings", action="store_true", help="do not read or update any ratings file")
    p.add_argument(
        "--replays",
        default=None,
        metavar="DIR",
        help="save every game as a replay in DIR (a folder per pairing) and print how each side played "
        "(rocketrl stats)",
    )
    p.add_argument("--json", default=None, metavar="PATH", help="write the results as JSON")
    p.set_defaults(func=cmd_eval)


def _ratings_path(args: argparse.Namespace, specs: list[str]) -> Path | None:
    if args.no_ratings:
        return None
    if args.league:
        return Path(args.league)
    for spec in specs:
        path = Path(spec)
        if path.suffix == ".safetensors" and path.is_file():
            return path.resolve().parent.parent / "league.json"
    return None


def _load_table(path: Path | None) -> tuple[RatingTable, dict]:
    """The rating table of a league file (a league summary with 'ratings', or a bare table) and the file's data."""
    if path is None or not path.is_file():
        return RatingTable(), {}
    data = json.loads(path.read_text())
    table = RatingTable.from_dict(data["ratings"] if "ratings" in data else data)
    return table, data


def _save_table(path: Path, table: RatingTable, data: dict) -> None:
    data = dict(data)
    if "ratings" in data or not data:
        data["ratings"] = table.to_dict()
    else:
        data = table.to_dict()
    write_json_atomic(path, data)


def cmd_eval(args: argparse.Namespace) -> int:
    from rocketrl.policy.load import load_policy, policy_name

    if args.tournament:
        if not args.policies:
            raise ValueError("--tournament needs --policies A,B[,C...] (rule_policy, random or checkpoint paths)")
        specs = [s.strip() for s in args.policies.split(",") if s.strip()]
        if len(specs) < 2:
            raise ValueError("--policies: a tournament needs at least two policies")
        twice = sorted({s for s in specs if specs.count(s) > 1})
        if twice:
            raise ValueError(f"--policies: {', '.join(map(repr, twice))} given twice; name each policy once")
        pairings = list(itertools.combinations(specs, 2))
    else:
        if not args.checkpoint:
            raise ValueError("--checkpoint is required (or use --tournament --policies ...)")
        if args.gauntlet:
            from rocketrl.policy.load import gauntlet_opponents

            args.opponents = ",".join(gauntlet_opponents(args.checkpoint, team=max(args.team_size) > 1))
            args.deterministic = True
            args.kickoff_jitter = args.kickoff_jitter or 5.0
        opponents = [s.strip() for s in args.opponents.split(",") if s.strip()]
        if not opponents:
            raise ValueError("--opponents: give at least one, e.g. rule_policy")
        specs = [args.checkpoint, *opponents]
        pairings = [(args.checkpoint, o) for o in opponents]
    import torch

    blue, orange = args.team_size
    warn_team_size(specs, blue, orange)
    if args.device == "cpu":
        torch.set_num_threads(1)  # small batched ops: one thread is fastest and never stalls on busy cores
    policies = {
        spec: load_policy(
            spec, device=args.device, seed=args.seed, deterministic=args.deterministic, compile_rule=args.compile_rule
        )
        for spec in specs
    }
    names = {spec: policy_name(spec) for spec in specs}
    ratings_path = _ratings_path(args, specs)
    table, data = _load_table(ratings_path)
    results: list[MatchResult] = []
    styles: list[dict[str, dict[str, float]]] = []
    teams: list[dict[str, dict]] = []
    for a, b in pairings:
        config = MatchConfig.games(
            num_games=args.num_games,
            blue_size=blue,
            orange_size=orange,
            game_seconds=args.game_seconds,
            overtime=not args.no_overtime,
            max_overtime_seconds=args.max_overtime_seconds,
            num_arenas=args.arenas,
            num_workers=args.workers,
            engine=args.engine,
            seed=args.seed,
            kickoff_jitter=args.kickoff_jitter,
            replay_games="all" if args.replays else (),
            replay_dir=str(Path(args.replays) / f"{_slug(names[a])}_vs_{_slug(names[b])}") if args.replays else None,
        )
        result = play_match(policies[a], policies[b], config, names[a], names[b], device=args.device)
        mirror = names[a] == names[b]
        if not mirror:  # a policy against itself says nothing about its rating
            table.record_many(names[a], names[b], result.wins, result.draws, result.losses)
        results.append(result)
        note = " (a mirror match: not rated)" if mirror else ""
        print(result.summary(), f"[{result.wall_seconds:.0f} s]{note}", flush=True)
        if config.replay_dir is not None:
            figures = stats_of_files([config.replay_dir])
            styles.append(figures)
            print(format_stats(figures), flush=True)
            together = team_stats(load_replay(p) for p in replay_paths([config.replay_dir]))
            teams.append(team_stats_as_json(together))
            print(format_stats({team_label(k): s.summary() for k, s in together.items()}), flush=True)
    print()
    print(format_ranking(table))
    if ratings_path is not None:
        _save_table(ratings_path, table, data)
        print(f"ratings saved to {ratings_path}")
    if args.json:
        report = {
            "team_size": f"{blue}v{orange}",
            "machine": machine_words(),
            "engine": args.engine,
            "num_games": args.num_games,
            "game_seconds": args.game_seconds,
            "settings": _settings(args),
            "results": [r.to_dict() for r in results],
            "game_figures": [{name: figures_for_json(f) for name, f in style.items()} for style in styles],
            "team_figures": teams,
            "ratings": {row.name: {"elo": row.elo, "openskill": row.ordinal} for row in table.ranking()},
        }
        write_json_atomic(args.json, report)
        print(f"results written to {args.json}")
    return 0


def _settings(args: argparse.Namespace) -> dict:
    """What decided the games, for the JSON report: a record made from it states these, not assumptions
    (workers None: one per CPU core)."""
    keys = ("checkpoint", "opponents", "policies", "deterministic", "kickoff_jitter", "seed", "no_overtime",
            "max_overtime_seconds", "workers", "arenas", "device")  # fmt: skip
    return {key: getattr(args, key) for key in keys} | {"tournament": bool(args.tournament)}


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
