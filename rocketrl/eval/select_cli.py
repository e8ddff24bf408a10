"""`rocketrl select`: the best bot of one or several training runs, chosen by games (rocketrl.eval.selection).

    rocketrl train --preset vs_rule_imitate --run.seed 0
    rocketrl train --preset vs_rule_imitate --run.seed 1
    rocketrl select runs/vs_rule_imitate-A runs/vs_rule_imitate-B [--games 32] [--candidates 4] [--json out.json]

Each run's latest checkpoint and its best others (by the in-training evaluations) play the same full games
against the opponent (default RulePolicy), greedy and from jittered kickoffs; the table and the chosen
checkpoint are printed (and written with --json), ready for `rocketrl export` or `rocketrl eval`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rocketrl.cli_args import opposed_team_size, positive_int, warn_team_size


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "select",
        help="choose the best checkpoint of one or several runs by full games against an opponent",
        description="Each run's latest checkpoint and its best others play the same full games against the "
        "opponent; the most points (wins + draws / 2) wins, ties to the higher step, then the earlier run.",
    )
    p.add_argument("runs", nargs="+", help="run folders (or their checkpoints/ folders) written by rocketrl train")
    p.add_argument("--games", type=positive_int, default=32, help="games each candidate plays (default 32)")
    p.add_argument("--candidates", type=positive_int, default=4, help="checkpoints per run: the latest and the best")
    p.add_argument(
        "--opponent",
        default="rule_policy",
        help="rule_policy (default), a scripted name, a gauntlet bot (gauntlet_v1), a checkpoint, or 'gauntlet': "
        "--games against every gauntlet bot and scripted opponent (the rotation team too in team games), points "
        "added up",
    )
    p.add_argument("--team-size", type=opposed_team_size, default=(1, 1), help="1, 2, 3 or BLUEvORANGE (default 1)")
    p.add_argument("--game-seconds", type=float, default=300.0, help="game clock in seconds (default 300)")
    p.add_argument("--kickoff-jitter", type=float, default=5.0, metavar="UU", help="spawn jitter (default 5 uu)")
    p.add_argument("--sampled", action="store_true", help="candidates sample their actions (default: greedy)")
    p.add_argument("--seed", type=int, default=1000, help="arena seed of the games (default 1000)")
    p.add_argument("--device", default="cpu", help="device of the networks (cpu or cuda)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the table and the choice as JSON")
    p.set_defaults(func=cmd_select)


def cmd_select(args: argparse.Namespace) -> int:
    import torch

    from rocketrl.env.setters import MAX_KICKOFF_JITTER, kickoff_jitter_in_range
    from rocketrl.eval.selection import checkpoint_folder, format_selection, jittered_games, select_bot
    from rocketrl.policy.load import gauntlet, load_policy

    if not kickoff_jitter_in_range(args.kickoff_jitter):
        raise ValueError(f"--kickoff-jitter {args.kickoff_jitter:g}: must lie in [0, {MAX_KICKOFF_JITTER:g}] uu")
    for run in args.runs:
        checkpoint_folder(run)  # every run is checked before any game is played
    if args.device == "cpu":
        torch.set_num_threads(1)  # small batched ops: one thread is fastest
    blue, orange = args.team_size
    match = jittered_games(args.games, args.seed, blue, orange, args.kickoff_jitter, args.game_seconds)
    specs = gauntlet(max(blue, orange) > 1) if args.opponent == "gauntlet" else [args.opponent]
    warn_team_size(specs, blue, orange)
    # Opponents act greedily, as the bots they stand for would in a match.
    opponent = [
        load_policy(s, device=args.device, seed=args.seed, deterministic=True, compile_rule=True) for s in specs
    ]
    table, best = select_bot(
        args.runs, opponent, match, args.candidates, deterministic=not args.sampled, device=args.device
    )
    print()
    print(format_selection(table, best, args.games * len(specs)))
    print(f"chosen: {best.checkpoint}")
    if args.json:
        report = {
            "opponent": args.opponent,
            "games": args.games,
            "team_size": f"{blue}v{orange}",
            "seed": args.seed,
            "kickoff_jitter": args.kickoff_jitter,
            "acting": "sampled" if args.sampled else "greedy",
            "selection": [candidate.row() for candidate in table],
            "chosen": str(best.checkpoint),
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"written to {args.json}")
    return 0
