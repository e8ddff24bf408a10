"""Preset comparison: variants of a training preset side by side, on the same wall-clock budget.

Each variant of a spec (benchmarks/comparisons/<name>.yaml: the preset and, per variant, a line about it
and its SECTION.FIELD=VALUE changes) trains from scratch for --minutes of wall time with the same seed,
one after the other in a fresh process (benchmarks/learn_vs_rule.py with --set), and its final weights
then play --games jittered games against RulePolicy and --generalization-games against each scripted
opponent it never trained against (greedy, as a deployed bot acts). Every run is appended to --record
(default docs/preset_comparison.jsonl) as soon as it ends, so a stopped comparison keeps what it measured.

The schedules (learning rate, entropy) keep the preset's horizon, so a short budget measures the start of
the preset's full-length run: a variant that wins early is not proven to win late. Comparisons are made
between runs of one machine and one invocation; run nothing else beside them.

    python benchmarks/preset_compare.py [--spec benchmarks/comparisons/vs_rule.yaml] [--minutes 24]
        [--seed 3] [--only NAME ...] [--games 64] [--game-seconds 120] [--generalization-games 32]
    python benchmarks/preset_compare.py --table   (the recorded comparisons, as a Markdown table)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

LONG_BENCHMARK = True  # `rocketrl bench` runs it only when named

ROOT = Path(__file__).resolve().parent.parent
SPECS = Path(__file__).resolve().parent / "comparisons"
RECORD = ROOT / "docs" / "preset_comparison.jsonl"


def read_spec(path: Path) -> dict:
    """{'preset': str, 'variants': {name: {'about': str, 'set': [str]}}}, checked."""
    spec = yaml.safe_load(path.read_text())
    if not isinstance(spec, dict) or not isinstance(spec.get("preset"), str):
        raise SystemExit(f"{path}: expected 'preset: NAME' and 'variants:' at the top level")
    variants = spec.get("variants")
    if not isinstance(variants, dict) or not variants:
        raise SystemExit(f"{path}: 'variants' must map each variant's name to its 'about' and 'set'")
    for name, variant in variants.items():
        changes = (variant or {}).get("set", [])
        if not isinstance(changes, list) or not all(isinstance(c, str) and "=" in c for c in changes):
            raise SystemExit(f"{path}: variants.{name}.set must be a list of SECTION.FIELD=VALUE strings")
    return spec


def _rate(figures: dict | None) -> str:
    if not figures:
        return "-"
    return (
        f"{100 * figures['win_rate']:.0f}% ({100 * figures['win_rate_low']:.0f}-{100 * figures['win_rate_high']:.0f}%)"
    )


def _goal_share(figures: dict | None) -> str:
    """Goals scored / all goals of the games: finer than the win rate while the bot still loses most."""
    if not figures or "goals_for" not in figures:
        return "-"
    scored, conceded = figures["goals_for"], figures["goals_against"]
    return f"{100 * scored / (scored + conceded):.0f}% ({scored}-{conceded})" if scored + conceded else "-"


def comparison_table(records: list[dict], spec: dict) -> str:
    """A Markdown table of the recorded runs of the spec's variants, in the spec's order."""
    order = list(spec["variants"])
    rows = [r for r in records if r.get("preset") == spec["preset"] and r.get("variant") in order]
    rows.sort(key=lambda r: (order.index(r["variant"]), r["seed"], r.get("date", "")))
    if not rows:
        return "no recorded comparison runs"
    lines = [
        "| variant | seed | minutes | agent-steps | steps/s | vs RulePolicy | goal share | vs shadow_goalie "
        "| vs ball_chaser |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        general = r.get("generalization") or {}
        minutes = r["train_wall_seconds"] / 60
        lines.append(
            f"| {r['variant']} | {r['seed']} | {minutes:.0f} | {r['steps'] / 1e6:.1f}M "
            f"| {r['steps'] / max(r['train_wall_seconds'], 1e-9):,.0f} | {_rate(r['final'])} "
            f"| {_goal_share(r['final'])} | {_rate(general.get('shadow_goalie'))} "
            f"| {_rate(general.get('ball_chaser'))} |"
        )
    lines.append("")
    lines += [f"- `{name}`: {v.get('about', '')}" for name, v in spec["variants"].items()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", default=str(SPECS / "vs_rule.yaml"), help="the variants (YAML)")
    parser.add_argument("--minutes", type=float, default=24.0, help="training wall time of each variant")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME", help="run only these variants")
    parser.add_argument("--games", type=int, default=64, help="games against RulePolicy (default 64)")
    parser.add_argument("--game-seconds", type=float, default=120.0, help="game clock (default 120)")
    parser.add_argument("--generalization-games", type=int, default=32)
    parser.add_argument("--record", default=str(RECORD), help="the JSONL file each run is appended to")
    parser.add_argument("--table", action="store_true", help="print the recorded comparison as Markdown, and stop")
    args = parser.parse_args()
    spec = read_spec(Path(args.spec))
    record = Path(args.record)
    if args.table:
        records = [json.loads(x) for x in record.read_text().splitlines() if x.strip()] if record.exists() else []
        print(comparison_table(records, spec))
        return
    names = args.only or list(spec["variants"])
    unknown = [n for n in names if n not in spec["variants"]]
    if unknown:
        parser.error(f"--only {unknown[0]!r}: not a variant of {args.spec} ({', '.join(spec['variants'])})")
    for name in names:
        changes = (spec["variants"][name] or {}).get("set", [])
        command = [
            sys.executable, str(ROOT / "benchmarks" / "learn_vs_rule.py"),
            "--preset", spec["preset"], "--seed", str(args.seed), "--minutes", str(args.minutes),
            "--select-games", "0", "--no-exact", "--games", str(args.games),
            "--game-seconds", str(args.game_seconds), "--generalization-games", str(args.generalization_games),
            "--record", str(record), "--variant", name,
        ]  # fmt: skip
        for change in changes:
            command += ["--set", change]
        print(f"== {name}: {' '.join(changes) or '(the preset)'}", flush=True)
        done = subprocess.run(command, cwd=ROOT)
        if done.returncode != 0:
            print(f"== {name} failed with exit status {done.returncode}; going on", flush=True)
    records = [json.loads(x) for x in record.read_text().splitlines() if x.strip()] if record.exists() else []
    print(comparison_table(records, spec))


if __name__ == "__main__":
    main()
