"""The command line of benchmarks/learn_vs_rule.py: its options, and the checks and defaults that follow from
them (a --timesteps budget or --learners L is its own variant of the preset)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rocketrl.cli_args import team_size


def build_parser(description: str, runs_record: Path, root: Path) -> argparse.ArgumentParser:
    """The benchmark's options; runs_record: the default --record file, named relative to `root` in the help."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--preset", default="vs_rule", help="configs/presets/<name>.yaml (default vs_rule)")
    parser.add_argument(
        "--timesteps",
        type=int,
        default=None,
        help="agent-steps to train, over which the preset's schedules run (default: the preset's); recorded as "
        "the variant timesteps=<N>M",
    )
    parser.add_argument("--minutes", type=float, default=None, help="stop training after this many minutes")
    parser.add_argument("--games", type=int, default=100, help="evaluation games (default 100)")
    parser.add_argument("--game-seconds", type=float, default=300.0, help="game clock (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--team-size", type=team_size, default=(1, 1), metavar="NvN",
        help="team sizes of the selection, final and generalization games, e.g. 2v2: the bot drives every blue "
        "(or orange) car, the opponent every other (default 1v1). Training follows the preset",
    )  # fmt: skip
    parser.add_argument("--logdir", default="runs/benchmarks")
    parser.add_argument("--plot", default=None, help="write the evaluation curve as a PNG here")
    parser.add_argument("--out", default=None, help="also write the JSON report here")
    parser.add_argument(
        "--acting",
        choices=("preset", "greedy", "sampled"),
        default="preset",
        help="how the learner acts in the final games: greedy (most likely action), sampled, or as the "
        "preset's league.eval_deterministic says (default)",
    )
    parser.add_argument(
        "--select-games",
        type=int,
        default=32,
        help="games each candidate checkpoint plays to choose the bot for the final games (default 32; 0: the last)",
    )
    parser.add_argument(
        "--candidates", type=int, default=4, help="checkpoints tried: the latest and the best others (default 4)"
    )
    parser.add_argument(
        "--engine",
        choices=("rocketsim", "warp"),
        default=None,
        help="the physics engine the bot trains in (default: the preset's). The selection and final games "
        "are always played in RocketSim, so a bot trained on warp shows how its skills carry over",
    )
    parser.add_argument(
        "--kickoff-jitter",
        type=float,
        default=5.0,
        metavar="UU",
        help="move each car's kickoff spawn by up to UU in x and y in the selection and final games (default "
        "5). A greedy bot against RulePolicy replays the same kickoff from the same spawn, so with exact spawns "
        "100 games hold only a few distinct kickoffs; the final games are also played with exact spawns and "
        "reported beside them",
    )
    parser.add_argument(
        "--generalization-games",
        type=int,
        default=50,
        help="games against each scripted opponent the bot never trained against (default 50; 0: none)",
    )
    parser.add_argument(
        "--record",
        default=str(runs_record),
        help=f"append the run's one-line record to this JSONL file (default {runs_record.relative_to(root)}; "
        "'' for none; --quick records nothing)",
    )
    parser.add_argument(
        "--measure", default=None, metavar="REPORT", help="no training: measure and record the bot of an earlier report"
    )
    parser.add_argument("--evaluate", default=None, metavar="CHECKPOINT", help="no training: evaluate this bot")
    parser.add_argument("--train-seconds", type=float, default=None, help="with --evaluate: its training wall time")
    parser.add_argument(
        "--table",
        action="store_true",
        help="print the recorded runs of --preset (with --variant's changes, at --team-size, trained on --engine, "
        "default rocketsim) as a Markdown table",
    )
    parser.add_argument(
        "--time-to",
        default=None,
        metavar="RATES",
        help="print, for every recorded single run of --preset (any engine), when its in-training evaluations "
        "first reached each of these win rates against RulePolicy, e.g. 0.5,0.7 (reads the runs' TensorBoard)",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="print one row per recorded setting (preset, variant, engine) at --team-size, best median first",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.FIELD=VALUE",
        help="change a preset setting for this run (repeatable), e.g. --set ppo.epochs=2",
    )
    parser.add_argument(
        "--learners",
        type=int,
        default=1,
        metavar="L",
        help="train L learners one after another (run seeds SEED*L .. SEED*L+L-1) and choose the bot among "
        "the candidates of them all (default 1); recorded as the variant best_of_L",
    )
    parser.add_argument(
        "--learner-runs",
        nargs="+",
        default=[],
        metavar="RUN",
        help="with --learners: run folders already trained as the first learners (the same preset, changes and "
        "seeds, each with its record); the rest are trained",
    )
    parser.add_argument("--variant", default="", help="a label for the --set changes, kept in the record")
    parser.add_argument(
        "--no-exact", action="store_true", help="skip the second set of final games from the exact spawns"
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20k steps, 4 short games")
    return parser


def check_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Refuse malformed options by name (parser.error exits 2); fold --timesteps and --learners into the
    variant and the --set changes, as the record keeps them."""
    bad = [item for item in args.set if "=" not in item or "." not in item.partition("=")[0]]
    if bad:
        parser.error(f"--set {bad[0]!r}: write it as SECTION.FIELD=VALUE, e.g. --set ppo.epochs=2")
    if args.timesteps is not None and not args.quick:
        # The preset's schedules (learning rate, entropy, reward weights) run over run.timesteps: another budget
        # is another variant of the preset, recorded and tabled apart from the preset's own runs.
        args.variant = args.variant or f"timesteps={args.timesteps / 1e6:g}M"
        args.set.append(f"run.timesteps={args.timesteps}")
    if args.learners < 1:
        parser.error("--learners must be at least 1")
    if args.learner_runs and args.learners < 2:
        parser.error("--learner-runs stands in for learners of --learners L (L >= 2); a single run has its record")
    if args.learners > 1:
        if args.select_games < 1:
            parser.error("--learners: the bot is chosen among the learners by games; give --select-games >= 1")
        args.variant = " ".join(filter(None, [args.variant, f"best_of_{args.learners}"]))
