"""The record of a league run (docs/league_runs.jsonl, one JSON line per run) and its gauntlet file
(docs/league_<tag>_gauntlet.json), made from the run's folder and the `rocketrl eval --json` report of its
gauntlet games; and the Markdown table of a generation (every recorded run that started from the same bot) that
docs/results/learning.md shows.

Wins and rates are the learner's (side a of each eval result); `win_rate` counts a draw as half a win, with its
Wilson 95% interval as `rocketrl eval` reports it.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from rocketrl.infra.atomic_file import write_atomic
from rocketrl.infra.machine_cache import machine_words
from rocketrl.infra.tb_scalars import read_scalars
from rocketrl.league.ratings import win_rate_interval

RESULT_KEYS = (
    "num_games", "wins", "draws", "losses", "goals_for", "goals_against", "win_rate", "win_rate_low",
    "win_rate_high",
)  # fmt: skip
TARGETS = {"80%_vs_v1": ("gauntlet_v1", 0.8), "97%_vs_rule": ("rule_policy", 0.97),
           "90%_vs_shadow_goalie": ("shadow_goalie", 0.9), "90%_vs_ball_chaser": ("ball_chaser", 0.9)}  # fmt: skip
"""The league's targets (win rate at least this against that opponent), checked for each run that met the
opponent."""


def training_figures(run_dir: Path) -> dict[str, Any]:
    """Steps, median agent-steps/s and wall minutes (first to last logged SPS) of a run, from its TensorBoard
    events. Raises FileNotFoundError naming the folder when it holds no charts/SPS scalars."""
    sps = read_scalars(run_dir).get("charts/SPS")
    if not sps:
        raise FileNotFoundError(f"{run_dir}: no TensorBoard charts/SPS scalars; is it a training run's folder?")
    return {
        "steps": max(e.step for e in sps),
        "agent_steps_per_second_median": round(statistics.median(e.value for e in sps)),
        "train_wall_minutes": round((sps[-1].wall_time - sps[0].wall_time) / 60.0, 1),
    }


def averaged_figures(run_dirs: list[Path]) -> dict[str, Any]:
    """Training figures of a bot averaged from several runs (`rocketrl average`): steps and wall minutes added up
    over the runs, the median agent-steps/s of them all."""
    figures = [training_figures(run_dir) for run_dir in run_dirs]
    sps = [f["agent_steps_per_second_median"] for f in figures]
    return {
        "steps": sum(f["steps"] for f in figures),
        "agent_steps_per_second_median": round(statistics.median(sps)),
        "train_wall_minutes": round(sum(f["train_wall_minutes"] for f in figures), 1),
    }


def gauntlet_results(report: dict) -> dict[str, dict]:
    """{opponent: figures} of a `rocketrl eval --json` report (RESULT_KEYS of each result). Raises ValueError
    naming the missing field when the report is not one."""
    if not isinstance(report, dict) or not isinstance(report.get("results"), list):
        raise ValueError("eval report: no 'results' list; make it with `rocketrl eval ... --json FILE`")
    results = {}
    for row in report["results"]:
        missing = [key for key in ("name_b", *RESULT_KEYS) if key not in row]
        if missing:
            raise ValueError(f"eval report: a result lacks {missing}; make it with `rocketrl eval ... --json FILE`")
        results[row["name_b"]] = {key: row[key] for key in RESULT_KEYS}
    return results


LEGACY_SETTINGS = {"deterministic": True, "kickoff_jitter": 5.0, "workers": 2}
"""The settings of every recorded run whose report predates `settings` in `rocketrl eval --json`."""


def eval_settings(report: dict, opponents: list[str]) -> str:
    """The command line of the gauntlet games, from the report's `settings` (older reports: LEGACY_SETTINGS,
    marked as assumed)."""
    settings = report.get("settings") or LEGACY_SETTINGS
    flags = [f"--num-games {report.get('num_games')}", f"--game-seconds {report.get('game_seconds', 120.0):g}"]
    flags += ["--deterministic"] if settings.get("deterministic") else []
    flags += [f"--kickoff-jitter {settings['kickoff_jitter']:g}"] if settings.get("kickoff_jitter") else []
    flags += [f"--workers {settings['workers']}"] if settings.get("workers") else []
    flags += [f"--seed {settings['seed']}"] if settings.get("seed") else []
    flags += ["--no-overtime"] if settings.get("no_overtime") else []
    flags += [f"--engine {report['engine']}"] if report.get("engine", "rocketsim") != "rocketsim" else []
    played = settings.get("opponents") or ",".join(opponents)  # as given: paths, where names shorten them
    command = f"rocketrl eval --checkpoint BOT --opponents {played} " + " ".join(flags)
    return command if "settings" in report else command + " (assumed: the report does not record its settings)"


def _settings_summary(report: dict) -> str:
    """'greedy, kickoff jitter 5 uu' (or 'sampled actions, exact kickoff spawns') from the report's settings."""
    settings = report.get("settings") or LEGACY_SETTINGS
    actions = "greedy" if settings.get("deterministic") else "sampled actions"
    jitter = settings.get("kickoff_jitter")
    return f"{actions}, " + (f"kickoff jitter {jitter:g} uu" if jitter else "exact kickoff spawns")


def checkpoint_runs(checkpoint: Path) -> tuple[dict, list[dict[str, Any]], dict[str, Any]]:
    """(config, runs, figures) of a bot whose run folders are gone, from its checkpoint's own record: its training
    config, each run it holds ({"seed", "init_from"}, in order; an average's runs told apart by the folder their
    checkpoints lay in) and the figures: steps the sum over the runs of each one's latest checkpoint held;
    agent-steps/s and minutes None (only a run's TensorBoard events hold them)."""
    from rocketrl.infra.checkpoint import read_meta
    from rocketrl.policy.average import averaged_leaves
    from rocketrl.policy.load import checkpoint_config

    meta = read_meta(checkpoint)
    config = checkpoint_config(checkpoint, meta)
    if meta.get("averaged_from"):
        leaves = averaged_leaves(meta["averaged_from"])
    else:  # one run's own checkpoint
        run = config.get("run", {})
        leaves = [{"checkpoint": str(checkpoint), "step": meta.get("step"), "seed": run.get("seed"),
                   "init_from": run.get("init_from")}]  # fmt: skip
    runs: dict[str, dict[str, Any]] = {}
    for leaf in leaves:
        folder = str(Path(leaf["checkpoint"]).parent)
        run = runs.setdefault(folder, {"seed": leaf.get("seed"), "init_from": leaf.get("init_from"), "step": 0})
        run["step"] = max(run["step"], leaf.get("step") or 0)
    figures = {"steps": sum(run["step"] for run in runs.values()), "agent_steps_per_second_median": None,
               "train_wall_minutes": None,
               "figures_from": "the checkpoint: its run folders are gone, so no agent-steps/s or minutes"}  # fmt: skip
    return config, [{"seed": r["seed"], "init_from": r["init_from"]} for r in runs.values()], figures


def league_record(
    run_dir: Path | None,
    checkpoint: Path,
    report: dict,
    command: str,
    variant: str,
    tag: str,
    machine: str | None = None,
    preset: str = "league_1v1",
    averaged_from: list[Path] | None = None,
) -> tuple[dict, dict]:
    """(gauntlet file, run line) of the run at `run_dir` (trained with `preset`, which its config does not name)
    whose `checkpoint` played the games of `report`. `averaged_from`: the bot is the average of these runs'
    bots (`rocketrl average`; `run_dir` one of them): steps and minutes are theirs added up, seeds listed, and
    `init_from` listed run by run where the runs started from different bots. `run_dir` None: the run folders
    are gone, and all but the speed and minutes come from the checkpoint (checkpoint_runs)."""
    from rocketrl.config import load_config
    from rocketrl.policy.load import run_starts

    results = gauntlet_results(report)
    machine = machine or machine_words()
    gauntlet = {"bot": str(checkpoint), "train": command, "settings": eval_settings(report, list(results)),
                "machine": machine, "results": results}  # fmt: skip
    if run_dir is None:
        config, members, figures = checkpoint_runs(checkpoint)
        env = config.get("env", {})
        team_size, engine = f"{env.get('blue_size')}v{env.get('orange_size')}", env.get("engine")
    else:
        config = load_config(run_dir / "config.yaml")
        figures = averaged_figures(averaged_from) if averaged_from else training_figures(run_dir)
        runs = [load_config(d / "config.yaml").run for d in averaged_from] if averaged_from else [config.run]
        members = [{"seed": run.seed, "init_from": run.init_from} for run in runs]
        team_size, engine = f"{config.env.blue_size}v{config.env.orange_size}", config.env.engine
    seeds = [run["seed"] for run in members]
    line = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "preset": preset,
        "variant": variant,
        "seed": seeds if len(seeds) > 1 or averaged_from else seeds[0],
        "team_size": team_size,
        "command": command,
        "init_from": run_starts([run["init_from"] for run in members]),  # by gauntlet name; two generations: each
        "train_engine": engine,
        "machine": machine,
        **figures,
        **({"averaged_from": [str(d) for d in averaged_from]} if averaged_from else {}),
        "bot": f"{checkpoint} (not shipped)",
        "gauntlet": results,
        "gauntlet_settings": f"{report.get('num_games')} games each, {report.get('game_seconds', 120.0):g} s, "
        f"{_settings_summary(report)} (docs/league_{tag}_gauntlet.json)",
        "targets_met": {
            name: results[opponent]["win_rate"] >= rate
            for name, (opponent, rate) in TARGETS.items()
            if opponent in results
        },
    }
    return gauntlet, line


def generation_table(lines: list[dict], init_from: str, variant: str | None = None) -> str:
    """Markdown table of the recorded runs that started from `init_from` (and had `variant`, where given): one
    row per run (games won, a draw as half, with the Wilson 95% interval, against each opponent; agent-steps/s;
    minutes), then the sums over the runs with their interval."""
    rows = [r for r in lines if r.get("init_from") == init_from and (variant is None or r.get("variant") == variant)]
    if not rows:
        return f"no recorded runs from {init_from}"
    opponents = list(dict.fromkeys(name for r in rows for name in r["gauntlet"]))
    head = "| seed | " + " | ".join(opponents) + " | agent-steps/s | train min |"
    out = [head, "|" + "---|" * (len(opponents) + 3)]
    for r in rows:
        cells = [_cell(r["gauntlet"].get(name)) for name in opponents]
        sps, minutes = r["agent_steps_per_second_median"], r["train_wall_minutes"]  # None: not recorded
        out.append(f"| {r['seed']} | " + " | ".join(cells) + f" | {'-' if sps is None else f'{sps:,}'} "
                   f"| {'-' if minutes is None else minutes} |")  # fmt: skip
    sums = []
    for name in opponents:
        played = [r["gauntlet"][name] for r in rows if name in r["gauntlet"]]
        wins, draws, losses = (sum(f[key] for f in played) for key in ("wins", "draws", "losses"))
        _, low, high = win_rate_interval(wins, draws, losses)
        sums.append(f"{wins + draws / 2:g}/{wins + draws + losses} ({100 * low:.1f}-{100 * high:.1f}%)")
    out.append(f"| {len(rows)} runs | " + " | ".join(sums) + " | | |")
    return "\n".join(out)


def _cell(figures: dict | None) -> str:
    if figures is None:
        return "-"
    won = figures["wins"] + figures["draws"] / 2
    return f"{won:g} ({100 * figures['win_rate_low']:.1f}-{100 * figures['win_rate_high']:.1f}%)"


def append_line(path: Path, line: dict) -> None:
    """Append one JSON line to the runs record at `path` (created if absent)."""
    with path.open("a") as f:
        f.write(json.dumps(line) + "\n")


def mark_shipped(path: Path, record_file: str, checkpoint: str, shipped_as: str) -> int:
    """Rewrite the runs record at `path` (atomically) so that the line of the bot at `checkpoint` whose gauntlet
    games are in `record_file` (its file name, as the line's `gauntlet_settings` ends) reads "(shipped as
    `shipped_as`)" where record_league wrote "(not shipped)". Returns how many lines changed (0: none was found,
    the file is left as it was)."""
    if not path.is_file():
        return 0
    lines = path.read_text().splitlines()
    unshipped, changed = f"{checkpoint} (not shipped)", 0
    for i, text in enumerate(lines):
        line = json.loads(text) if text.strip() else None
        if (
            line
            and line.get("bot") == unshipped
            and str(line.get("gauntlet_settings", "")).endswith(f"{Path(record_file).name})")
        ):
            line["bot"] = f"{checkpoint} (shipped as {shipped_as})"
            lines[i], changed = json.dumps(line), changed + 1
    if changed:
        write_atomic(path, lambda tmp: tmp.write_text("\n".join(lines) + "\n"))
    return changed
