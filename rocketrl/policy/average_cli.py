"""`rocketrl average`: several bots of one line of training in one network (rocketrl.policy.average)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rocketrl.infra.checkpoint import read_meta
from rocketrl.policy.average import average_checkpoints


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `average` command's arguments."""
    average = sub.add_parser(
        "average",
        help="average the weights of several runs from one parent (or two generations) into one bot",
        description="Each bot's input layer is rewritten to read the bots' pooled observation statistics, then "
        "every weight is averaged. Runs of one preset from one parent (several seeds or settings), or from it and its "
        "parent, average into a bot that can be stronger than each; judge it with rocketrl eval before using it.",
    )
    average.add_argument(
        "checkpoints",
        nargs="+",
        help="the bots, two or more in all: checkpoint paths, shipped bots (gauntlet_vN) or run folders (runs/NAME: "
        "its last one)",
    )
    average.add_argument(
        "--from-step",
        type=int,
        metavar="STEPS",
        help="a run folder stands for every checkpoint it kept at or past STEPS agent-steps, not its last one "
        "(the tail of each run: rocketrl average runs/A runs/B --from-step 10000000)",
    )
    average.add_argument("--out", required=True, help="where to write the averaged checkpoint (.safetensors)")
    average.add_argument("--force", action="store_true", help="replace --out if it exists")
    average.set_defaults(func=cmd_average)


def cmd_average(args: argparse.Namespace) -> int:
    """Average several bots of one line of training into one checkpoint (rocketrl.policy.average)."""
    if Path(args.out).exists() and not args.force:
        raise ValueError(f"--out {args.out} exists: choose another path, or --force to replace it")
    written = average_checkpoints(args.checkpoints, args.out, args.from_step)
    bots = read_meta(written)["averaged_from"]
    print(f"averaged {len(bots)} bots into {written}: " + ", ".join(bot["checkpoint"] for bot in bots))
    return 0
