"""The learning benchmark's figures and records: a set of games summed up (win rate with its interval, Elo,
goals, touches, sides), the one-line record of a run (docs/learn_vs_rule_runs.jsonl), the Markdown table of
the recorded runs of a preset and the table comparing every recorded setting, that docs/results/learning.md shows."""

from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path


def performance_elo(wins: int, draws: int, losses: int, anchor: float = 1500.0) -> float:
    """Rating that predicts this score against an opponent rated `anchor` (clipped away from 0 and 1)."""
    n = wins + draws + losses
    p = (wins + 0.5 * draws) / n
    p = min(max(p, 1.0 / (2 * n)), 1.0 - 1.0 / (2 * n))
    return anchor + 400.0 * math.log10(p / (1.0 - p))


def by_side(result) -> dict[str, dict[str, int]]:
    """The learner's wins, draws, losses and goals as blue and as orange (each side half the games)."""
    sides = {}
    for team, side in ((0, "blue"), (1, "orange")):
        games = [g for g in result.games if g.a_team == team]
        sides[side] = {
            "games": len(games),
            "wins": sum(g.goals_a > g.goals_b for g in games),
            "draws": sum(g.goals_a == g.goals_b for g in games),
            "losses": sum(g.goals_a < g.goals_b for g in games),
            "goals_for": sum(g.goals_a for g in games),
            "goals_against": sum(g.goals_b for g in games),
        }
    return sides


def games_summary(result) -> dict:
    """The figures of a set of final games: record, win rate with its interval, Elo, goals, touches, sides."""
    rate, low, high = result.win_rate_interval()
    return {
        "eval_wall_seconds": round(result.wall_seconds, 1),
        "games": result.num_games,
        "wins": result.wins,
        "draws": result.draws,
        "losses": result.losses,
        "win_rate": rate,
        "win_rate_low": low,
        "win_rate_high": high,
        "elo": round(performance_elo(result.wins, result.draws, result.losses), 1),
        "goals_for": result.goals_for,
        "goals_against": result.goals_against,
        "touches_for": result.touches_for,
        "touches_against": result.touches_against,
        "by_side": by_side(result),
    }


TRAINING_END_TAGS = {
    "touches_per_minute": "charts/touches_per_minute",
    "train_score_vs_rule": "league/train_score_vs_rule",
    "policy_entropy": "losses/entropy",
    "episode_return": "charts/episode_return",
}
"""What the end of training looked like, by name, from the run's TensorBoard scalars. A bot that farms touches
(many small pushes of the ball) shows a high touch rate with a low score against RulePolicy."""


def training_end(curves: dict[str, list[tuple[int, float]]], span: int = 2_000_000) -> dict[str, float]:
    """The mean of each TRAINING_END_TAGS series over its last `span` agent-steps. curves: tag -> (step, value)
    series, as read from TensorBoard; a tag missing from it is left out. Rounded to 3 decimals."""
    summary = {}
    for name, tag in TRAINING_END_TAGS.items():
        series = curves.get(tag)
        if not series:
            continue
        last = max(step for step, _ in series)
        tail = [value for step, value in series if step > last - span]
        summary[name] = round(sum(tail) / len(tail), 3)
    return summary


PLAY_FIGURES = (
    "own_goals", "own_goals_saving", "shots_per_minute", "shot_conversion", "touches_per_minute",
    "ball_speed_change", "jumps_per_minute", "goal_side_share",
)  # fmt: skip
"""How the bot played its final games (rocketrl stats of their replays), kept in the one-line record."""


def record_line(report: dict) -> dict:
    """The one-line record of a run (see the module docstring)."""

    def brief(figures: dict | None) -> dict | None:
        if figures is None:
            return None
        keys = ("games", "wins", "draws", "losses", "win_rate", "win_rate_low", "win_rate_high", "elo")
        extra = ("goals_for", "goals_against")
        return {key: figures[key] for key in keys} | {key: figures[key] for key in extra if key in figures}

    learner_play = (report.get("play") or {}).get("learner")
    return {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "seed": report["seed"],
        "commit": report.get("commit"),
        "preset": report["preset"],
        **({"variant": report["variant"], "changes": report["changes"]} if report.get("variant") else {}),
        "train_engine": report["train_engine"],
        **({"team_size": report["team_size"]} if report.get("team_size", "1v1") != "1v1" else {}),
        "steps": report["steps"],
        "train_wall_seconds": report["train_wall_seconds"],
        "select_wall_seconds": report["select_wall_seconds"],
        **({"learners": report["learners"]} if report.get("learners") else {}),
        "bot": report["bot"],
        "final": brief(report),
        "exact_kickoffs": brief(report.get("exact_kickoffs")),
        **({"train_engine_final": brief(report["train_engine_final"])} if report.get("train_engine_final") else {}),
        "generalization": {k: brief(v) for k, v in (report.get("generalization") or {}).items()},
        **({"training_end": report["training_end"]} if report.get("training_end") else {}),
        **({"play": {k: learner_play.get(k) for k in PLAY_FIGURES}} if learner_play else {}),
        "machine": report.get("machine"),
    }


def rate_text(figures: dict | None) -> str:
    """'wins/games: rate% (low-high%)' of games_summary figures; '-' for none."""
    if not figures:
        return "-"
    return (
        f"{figures['wins']}/{figures['games']}: {100 * figures['win_rate']:.1f}% "
        f"({100 * figures['win_rate_low']:.1f}-{100 * figures['win_rate_high']:.1f}%)"
    )


def runs_table(
    records: list[dict], preset: str, variant: str = "", team: str = "1v1", engine: str = "rocketsim"
) -> str:
    """A Markdown table of every recorded run of `preset` (by seed, then date) with the `variant`'s changes
    (none: the preset itself) trained on `engine` and measured in `team` games, with the median and the lowest
    final win rate below. Runs trained on another engine than RocketSim gain a column: the same final games
    played on that engine."""
    runs = (
        r
        for r in records
        if r.get("preset") == preset
        and r.get("variant", "") == variant
        and r.get("team_size", "1v1") == team
        and r.get("train_engine", "rocketsim") == engine
    )
    rows = sorted(runs, key=lambda r: (r["seed"], r.get("date", "")))
    name = f"`{preset}`" + (f" with `{variant}`" if variant else "") + (f" ({team})" if team != "1v1" else "")
    if engine != "rocketsim":
        name += f" trained on {engine}"
    if not rows:
        return f"no recorded runs of {name}"
    own = engine != "rocketsim"
    lines = [
        "| seed | date | engine | steps | training + selection | vs RulePolicy (jittered) | Elo "
        + (f"| same games on {engine} " if own else "")
        + "| exact spawns | vs shadow_goalie | vs ball_chaser |",
        "|---|---|---|---|---|---|---|" + ("---|" if own else "") + "---|---|---|",
    ]
    for r in rows:
        general = r.get("generalization") or {}
        minutes = f"{r['train_wall_seconds'] / 60:.0f} + {(r.get('select_wall_seconds') or 0) / 60:.0f} min"
        lines.append(
            f"| {r['seed']} | {r.get('date', '-')} | {r.get('train_engine', '-')} | {r['steps'] / 1e6:.1f}M "
            f"| {minutes} | {rate_text(r['final'])} | {r['final']['elo']:.0f} "
            + (f"| {rate_text(r.get('train_engine_final'))} " if own else "")
            + f"| {rate_text(r.get('exact_kickoffs'))} "
            f"| {rate_text(general.get('shadow_goalie'))} | {rate_text(general.get('ball_chaser'))} |"
        )
    rates = sorted(r["final"]["win_rate"] for r in rows)
    targets = "targets: every run at least 80%, the median 90%"
    if team != "1v1":
        least = {"2v2": 80, "3v3": 70}.get(team)
        targets = f"target in {team}: at least {least}% over three seeds" if least else f"no target in {team}"
    median = statistics.median(rates)
    lines.append("")
    lines.append(
        f"{len(rows)} run{'s' if len(rows) != 1 else ''} of {name}: median {100 * median:.1f}%, "
        f"lowest {100 * rates[0]:.1f}%, "
        f"highest {100 * rates[-1]:.1f}% against RulePolicy ({targets})."
    )
    return "\n".join(lines)


def comparison_table(records: list[dict], team: str = "1v1") -> str:
    """A Markdown table with one row per recorded setting (preset, variant, training engine) measured in `team`
    games, best median final win rate first: how many runs, their steps, each run's rate against RulePolicy,
    the median rate and Elo, and the median rate against each unseen scripted opponent. Training minutes are
    left out: the records come from machines that ran the same steps up to 3x apart."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in records:
        if r.get("team_size", "1v1") != team or not r.get("final"):
            continue
        key = (r["preset"], r.get("variant", ""), r.get("train_engine", "rocketsim"))
        groups.setdefault(key, []).append(r)
    if not groups:
        return f"no recorded runs in {team}"

    def general(rows: list[dict], opponent: str) -> str:
        rates = [g[opponent]["win_rate"] for r in rows if (g := r.get("generalization") or {}).get(opponent)]
        return f"{100 * statistics.median(rates):.0f}%" if rates else "-"

    lines = [
        "| preset | variant | trained on | runs | steps | each run vs RulePolicy | median | median Elo "
        "| vs shadow_goalie | vs ball_chaser |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    medians = {key: statistics.median(r["final"]["win_rate"] for r in rows) for key, rows in groups.items()}
    for (preset, variant, engine), rows in sorted(groups.items(), key=lambda item: -medians[item[0]]):
        rows = sorted(rows, key=lambda r: (r["seed"], r.get("date", "")))
        steps = sorted({f"{r['steps'] / 1e6:.0f}M" for r in rows}, key=lambda text: float(text[:-1]))
        each = " / ".join(f"{100 * r['final']['win_rate']:.1f}" for r in rows)
        lines.append(
            f"| `{preset}` | {variant or '-'} | {engine} | {len(rows)} | {', '.join(steps)} | {each} "
            f"| {100 * medians[preset, variant, engine]:.1f}% "
            f"| {statistics.median(r['final']['elo'] for r in rows):.0f} "
            f"| {general(rows, 'shadow_goalie')} | {general(rows, 'ball_chaser')} |"
        )
    return "\n".join(lines)


def append_record(path: Path, report: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(record_line(report)) + "\n")
    print(f"run recorded in {path}", flush=True)
