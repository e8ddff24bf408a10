"""`rocketrl climb`: train a line of runs from a parent until one of its candidates ships (eval.climb).

    rocketrl climb --from pretrained --out runs/climb --minutes 55 --steps 3 --workers 2

Each step is one `rocketrl train --preset league_1v1_next` run (its seed SEED + step - 1), its second half averaged
(`rocketrl average --from-step`), that average one half each with the step's start, and the result judged against
the parent with `rocketrl judge` (by default the pooled rule on ten sets of 100 games, the field of the five bots
shipped before the parent on two seeds, and the scripted floor: how the shipped bots since gauntlet_v25 were judged;
step k's seeds are --seeds plus 1000 x (k - 1)). The line stops at the first candidate that ships. Any training
setting can be overridden as in `rocketrl train` (--ppo.learning-rate 1e-4, --env.num-arenas 256); `--field none`
and `--floor none` judge without them; `--yardstick BOTS` plays each judged candidate against bots it is not judged
by, after its verdict (eval.yardstick). Running the same command again continues a stopped line: the record
(OUT/climb.json) keeps every finished phase, and an interrupted run resumes from its last checkpoint. Exit code 0 when
a candidate ships, 1 when none of --steps did, 2 on bad input, 130 when a signal stopped a run.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from rocketrl.cli_args import positive_int
from rocketrl.eval.climb import RECORD_NAME, ClimbRecord, ClimbTools, climb, next_start
from rocketrl.eval.judge_cli import CLIMB_DEFAULTS, add_judging_arguments, check_judging, field_bots, parse_seeds
from rocketrl.eval.yardstick import add_yardstick_arguments, check_yardstick, measure

DEFAULT_PRESET = "league_1v1_next"
"""The preset every shipped bot since gauntlet_v10 was trained with."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `climb` command's arguments."""
    p = sub.add_parser(
        "climb",
        help="train a line of runs from a parent, each averaged and judged against it, until one ships",
        description="Step 1 trains from the parent and averages its run's second half one half each with it; each "
        "later step trains from the line's average so far and averages its run with that start. Every candidate is "
        "judged against the parent (rocketrl judge); the line stops at the first that ships. Training settings can "
        "be overridden as in rocketrl train (--SECTION.FIELD VALUE).",
    )
    p.add_argument(
        "--from", dest="parent", default="pretrained", help="the parent: where the line starts and the bot to beat "
        "(default pretrained, the newest shipped bot)",
    )  # fmt: skip
    p.add_argument(
        "--start", default=None, help="go on from this line average instead of the parent (a candidate of an earlier "
        "line): step 1 trains from it and averages its run with it, and the parent is still the bot to beat",
    )  # fmt: skip
    p.add_argument("--out", required=True, type=Path, help="the line's folder: runs, averages, judgings, climb.json")
    p.add_argument("--steps", type=positive_int, default=3, help="judge at most this many steps (default 3)")
    p.add_argument("--preset", default=DEFAULT_PRESET, help=f"the training preset (default {DEFAULT_PRESET})")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--minutes", type=float, default=None, help="wall-clock minutes of each step's run")
    length.add_argument("--timesteps", type=positive_int, default=None, help="agent-steps of each step's run")
    p.add_argument("--seed", type=int, default=0, help="step k trains with seed SEED + k - 1 (default 0)")
    add_judging_arguments(p, CLIMB_DEFAULTS, games_only=True)
    add_yardstick_arguments(p)
    p.set_defaults(func=cmd_climb, takes_overrides=True)


JUDGING = ("rule", "field", "field_seeds", "floor", "num_games", "game_seconds", "kickoff_jitter", "engine")
"""The judging settings a line keeps for all its steps (with its seeds)."""
SETTING_NAMES = ("--from", "training settings and length", "--seed", "--seeds", "the judging's settings", "--start")
"""ClimbRecord.settings() by the options that set them, for the refusal to continue a line with other ones."""


def length_words(args: argparse.Namespace) -> str:
    """Each run's length as the user gave it."""
    return f"{args.minutes:g} minutes" if args.minutes is not None else f"{args.timesteps:,} agent-steps"


def train_overrides(args: argparse.Namespace, extra: Sequence[str]) -> list[str]:
    """The overrides every step's run takes besides its start, seed and name: the free ones and the length."""
    overrides = list(extra)
    if args.minutes is not None:
        if args.minutes <= 0:
            raise ValueError(f"--minutes {args.minutes:g}: give a positive number of minutes, e.g. 55")
        overrides += ["--run.timesteps", str(10**12), "--run.max-minutes", str(args.minutes)]
    elif args.timesteps is not None:
        overrides += ["--run.timesteps", str(args.timesteps)]
    return overrides


def cmd_climb(args: argparse.Namespace, extra: list[str]) -> int:
    """Run (or continue) the line; 0 when a candidate ships, 1 when none did."""
    from rocketrl.config import load_config, preset_config_path
    from rocketrl.eval.judge_cli import cmd_judge
    from rocketrl.infra.checkpoint import read_meta
    from rocketrl.policy.average import average_checkpoints
    from rocketrl.policy.load import resolve_checkpoint, same_checkpoint
    from rocketrl.training import train

    for name in ("field", "floor"):  # 'none': judge without a field or a floor
        if getattr(args, name) == "none":
            setattr(args, name, None)
    if args.field is None:
        args.field_seeds = 1  # no field to play on more seeds
    if args.minutes is None and args.timesteps is None:
        raise ValueError("climb: give each step's length, --minutes M (e.g. 55 on 2 cores) or --timesteps N")
    seeds = parse_seeds(args.seeds)
    check_judging(args, seeds)  # the judging's settings, the parent and the field are refused before any training
    yardstick_bots, yardstick_seeds = check_yardstick(args)  # so are the yardstick's
    resolve_checkpoint(args.parent)
    if args.start is not None:
        if same_checkpoint(args.start, args.parent):
            args.start = None  # the parent, however named, is where a line starts anyway
        else:
            try:
                resolve_checkpoint(args.start)
            except FileNotFoundError as exc:
                raise FileNotFoundError(f"--start: {exc}") from exc
    overrides = train_overrides(args, extra)
    preset = preset_config_path(args.preset)
    base = load_config(preset, overrides)  # bad overrides are named before anything runs
    judging = {key: getattr(args, key) for key in JUDGING}
    record = ClimbRecord(args.parent, overrides, args.seed, seeds, judging, start=args.start)
    kept = ClimbRecord.load(args.out)
    if kept is not None:
        if kept.settings() != record.settings():
            changed = [
                name
                for name, mine, theirs in zip(SETTING_NAMES, record.settings(), kept.settings(), strict=True)
                if mine != theirs
            ]
            raise ValueError(
                f"--out {args.out}: it holds a line with other settings ({', '.join(changed)}; its record: "
                f"{args.out / RECORD_NAME}); give the same command to continue it, or another --out"
            )
        record = kept
        print(f"continuing the line in {args.out}: {len(kept.steps)} step(s) recorded", flush=True)
    field = field_bots(args.field, (args.parent, args.parent)) if args.field else []
    print(
        f"the line in {args.out}: from {args.parent}"
        + (f", going on from {args.start}" if args.start else "")
        + f", at most {args.steps} step(s) of {length_words(args)}, "
        f"{args.preset}, seeds {args.seed}+; each judged {args.rule} on {len(seeds)} sets of {args.num_games} games"
        + (f", the field {', '.join(field)} on {args.field_seeds} seed(s)" if field else "")
        + (f", the floor {args.floor}" if args.floor else "")
        + (f"; then measured against {', '.join(yardstick_bots)}, never judged by them" if yardstick_bots else ""),
        flush=True,
    )

    def train_step(start: str, seed: int, name: str, resume: bool) -> tuple[Path, int, bool]:
        step_overrides = [*overrides, "--run.init-from", start, "--run.seed", str(seed)]
        step_overrides += ["--run.logdir", str(args.out), "--run.name", name]
        if resume:
            step_overrides += ["--run.resume", "latest"]
        run_dir, _, stopped = train(load_config(preset, step_overrides))
        return run_dir, int(read_meta(resolve_checkpoint(run_dir))["step"]), stopped

    def average(specs: Sequence[str], out: Path, from_step: int | None) -> Path:
        path = average_checkpoints(specs, out, from_step=from_step)
        print(f"averaged {', '.join(map(str, specs))}{'' if from_step is None else f' from {from_step:,}'} -> {path}")
        return path

    def judge(candidate: str, parent: str, step_seeds: list[int], json_path: Path) -> bool:
        judged = argparse.Namespace(**vars(args))
        judged.candidate, judged.parent, judged.json = candidate, parent, str(json_path)
        judged.seeds = ",".join(map(str, step_seeds))
        return cmd_judge(judged) == 0

    def measure_candidate(candidate: str, json_path: Path) -> None:
        measure(candidate, yardstick_bots, yardstick_seeds, args, json_path)

    spacing = base.run.keep_every or base.run.checkpoint_interval
    tools = ClimbTools(train_step, average, judge, spacing, measure_candidate if yardstick_bots else None)
    record = climb(record, args.out, args.steps, tools)
    if record.shipped is not None:
        print(f"the line climbed: {record.shipped} ships against {record.parent} (record: {args.out / RECORD_NAME})")
        print(f"  watch it:  rocketrl watch --checkpoint {record.shipped} --opponent {record.parent} --out climb.mp4")
        print(f"  field it:  rocketrl export --checkpoint {record.shipped} --out bots/climbed")
        print(f"  go on:     rocketrl climb --from {record.shipped} --out {args.out}_next (and the same options)")
        return 0
    if record.steps and record.steps[-1].ships is None:
        return 130  # stopped by a signal: the same command continues the line
    judged = [step for step in record.steps if step.ships is not None]
    print(f"no candidate of {len(judged)} judged step(s) ships against {record.parent} (record: {args.out})")
    following = len(judged) + 1
    print(
        f"  the same command with --steps {following} continues the line: its next run starts from {next_start(record)}"
    )
    return 1
