"""Record a league run: its gauntlet file (docs/league_<TAG>_gauntlet.json) and one line in docs/league_runs.jsonl.

    python scripts/record_league.py RUN_DIR EVAL.json --tag TAG --variant TEXT --command "rocketrl train ..."
        [--checkpoint CKPT] [--machine TEXT] [--preset league_1v1] [--docs docs] [--averaged-from RUN_DIR ...]
    python scripts/record_league.py EVAL.json --runs-gone --checkpoint CKPT --tag TAG --variant TEXT --command ...
        (the run folders are gone: seeds, starts and steps from the checkpoint's own record)
    python scripts/record_league.py --table INIT_FROM [--variant TEXT]   (the Markdown table of a generation)

RUN_DIR is the training run's folder (runs/NAME: config.yaml, TensorBoard events, checkpoints/); EVAL.json the
`rocketrl eval --checkpoint CKPT --opponents ... --json EVAL.json` report of its gauntlet games; CKPT defaults to
the run's last checkpoint. Steps, agent-steps/s and minutes come from the run's TensorBoard events, seed, start
and engine from its config. `scripts/make_pretrained.py --league docs/league_<TAG>_gauntlet.json` ships the bot.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rocketrl.eval.league_record import append_line, generation_table, league_record
from rocketrl.infra.atomic_json import write_json_atomic
from rocketrl.policy.load import resolve_checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", nargs="?", type=Path)
    parser.add_argument("eval_json", nargs="?", type=Path)
    parser.add_argument("--tag", help="names the gauntlet file: docs/league_<TAG>_gauntlet.json")
    parser.add_argument("--variant", help="what this run changed, in words (the generation, the setting)")
    parser.add_argument("--command", help="the training command line, as run")
    parser.add_argument("--checkpoint", type=Path, help="the bot that played (default: the run's last checkpoint)")
    parser.add_argument(
        "--machine",
        help="the machine, in words (default: the CPU's model name, family, model, AVX-512 and AMX, and its cores, "
        "as the game reports write it)",
    )
    parser.add_argument("--preset", default="league_1v1", help="the preset the run was trained with")
    parser.add_argument(
        "--averaged-from",
        nargs="+",
        type=Path,
        metavar="RUN_DIR",
        help="the bot (--checkpoint) is these runs' bots averaged with `rocketrl average` (RUN_DIR one of them)",
    )
    parser.add_argument(
        "--runs-gone",
        action="store_true",
        help="the run folders are gone (give no RUN_DIR): seeds, starts and steps from --checkpoint's own record, "
        "no agent-steps/s or minutes",
    )
    parser.add_argument("--docs", type=Path, default=Path("docs"), help="folder of the records (default docs)")
    parser.add_argument("--table", metavar="INIT_FROM", help="print the table of the runs that started from it")
    args = parser.parse_args()
    runs = args.docs / "league_runs.jsonl"
    if args.table:
        lines = [json.loads(line) for line in runs.read_text().splitlines() if line.strip()]
        print(generation_table(lines, args.table, args.variant))
        return
    if args.runs_gone:  # one positional given: the eval report
        if args.eval_json is not None or args.checkpoint is None or args.averaged_from:
            parser.error("--runs-gone takes EVAL.json and --checkpoint CKPT, without RUN_DIR or --averaged-from")
        args.run_dir, args.eval_json = None, args.run_dir
    for name in ("eval_json", "tag", "variant", "command") + (() if args.runs_gone else ("run_dir",)):
        if getattr(args, name) is None:
            parser.error(f"{name} is required to record a run (see the usage above)")
    try:
        checkpoint = args.checkpoint or resolve_checkpoint(args.run_dir)
    except FileNotFoundError as exc:
        parser.error(f"{exc} (or pass --checkpoint)")
    report = json.loads(args.eval_json.read_text())
    gauntlet, line = league_record(
        args.run_dir,
        checkpoint,
        report,
        args.command,
        args.variant,
        args.tag,
        args.machine,
        args.preset,
        args.averaged_from,
    )
    target = args.docs / f"league_{args.tag}_gauntlet.json"
    if target.exists():
        raise SystemExit(f"{target} exists: choose another --tag (records are never overwritten)")
    write_json_atomic(target, gauntlet)
    append_line(runs, line)
    rates = {name: figures["win_rate"] for name, figures in gauntlet["results"].items()}
    sps = line["agent_steps_per_second_median"]
    speed = "agent-steps/s not recorded" if sps is None else f"{sps:,} agent-steps/s"
    print(f"wrote {target} and a line in {runs}: {line['steps']:,} steps, {speed}, {rates}")


if __name__ == "__main__":
    main()
