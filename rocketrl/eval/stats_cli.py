"""`rocketrl stats`: how each policy played, read from game replays (rocketrl.eval.game_stats).

    rocketrl eval --checkpoint BOT --num-games 20 --kickoff-jitter 5 --deterministic --replays games/
    rocketrl stats games/bot_vs_rule_policy [games/other_vs_rule_policy ...] [--json stats.json] [--plot stats.png]

Each path is a replay file or a folder of them; a folder whose replays lie one level down (the layout
`rocketrl eval --replays` writes, one folder per pairing) counts each of those folders as a path. Every path gets
its own columns, one per policy that played in it; a second table shows how each policy's teams played together
(rocketrl.eval.team_stats), one column per policy and team size. `--plot` draws the columns side by side
(rocketrl.eval.stats_plot), with each policy's possession from the team table. `--merge` sums every path into
one set of columns and `--only NAMES` keeps those policies' columns, so two bots' games against the same opponents
compare side by side:

    rocketrl stats old/old_vs_rule_policy new/new_vs_rule_policy ... --merge --only old,new --plot stats.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rocketrl.eval.game_stats import format_stats, replay_paths, stats_as_json, stats_of_paths
from rocketrl.eval.stats_plot import plot_stats, require_matplotlib
from rocketrl.eval.team_stats import team_label, team_stats, team_stats_as_json
from rocketrl.infra.atomic_json import write_json_atomic
from rocketrl.league.replay import load_replay


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "stats",
        help="how each policy played (shots, conversion, hits, boost, positioning, team play), from game replays",
        description="Scoring, shooting, hitting, moving and positioning figures per policy, read from replay files "
        "(write them with rocketrl eval --replays DIR). Rates are per minute of one car's play.",
    )
    p.add_argument("paths", nargs="+", help="replay files or folders (a folder of pairing folders counts each)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the sums and figures as JSON")
    p.add_argument(
        "--plot", default=None, metavar="PATH", help="also draw the figures side by side as a PNG (needs matplotlib)"
    )
    p.add_argument(
        "--merge", action="store_true", help="sum every path into one set of columns (e.g. a bot over all its pairings)"
    )
    p.add_argument(
        "--only", default=None, metavar="NAMES", help="comma-separated policy names: show only their columns"
    )
    p.set_defaults(func=cmd_stats)


def expand_groups(paths: list[str]) -> list[Path]:
    """The paths to report, each a file or a folder holding replays (pairing folders one level down expanded)."""
    groups: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir() and not any(p.glob("*.safetensors")):
            inner = sorted(d for d in p.iterdir() if d.is_dir() and any(d.glob("*.safetensors")))
            groups.extend(inner or [p])
        else:
            groups.append(p)
    return groups


def cmd_stats(args: argparse.Namespace) -> int:
    if args.plot:
        require_matplotlib()
    groups = expand_groups(args.paths)
    keep = {n.strip() for n in args.only.split(",") if n.strip()} if args.only else None
    if args.merge:
        groups = [groups]  # one group of every path
    table: dict[str, dict[str, float]] = {}
    teams: dict[str, dict[str, float]] = {}
    report: dict[str, dict] = {}
    team_report: dict[str, dict] = {}
    for group in groups:
        paths = group if isinstance(group, list) else [group]
        title = "merged" if isinstance(group, list) else str(group)
        stats = stats_of_paths(paths)
        stats = {n: s for n, s in stats.items() if keep is None or n in keep}
        for name, s in stats.items():
            label = name if len(groups) == 1 else f"{group.name}: {name}"
            table[label] = s.summary()
        report[title] = stats_as_json(stats)
        together = team_stats(load_replay(p) for p in replay_paths(paths))
        together = {k: s for k, s in together.items() if keep is None or k[0] in keep}
        for key, s in together.items():
            label = team_label(key) if len(groups) == 1 else f"{group.name}: {team_label(key)}"
            teams[label] = s.summary()
            name = key[0] if len(groups) == 1 else f"{group.name}: {key[0]}"
            if name in table and "possession_share" not in table[name]:
                table[name]["possession_share"] = teams[label]["possession_share"]
        team_report[title] = team_stats_as_json(together)
    if not table:
        raise SystemExit(f"--only {args.only}: no such policy in these replays")
    print(format_stats(table))
    print()
    print("team play")
    print(format_stats(teams))
    report["team_play"] = team_report
    if args.json:
        write_json_atomic(Path(args.json), report)
        print(f"figures written to {args.json}")
    if args.plot:
        plot_stats(table, args.plot)
        print(f"plot written to {args.plot}")
    return 0
