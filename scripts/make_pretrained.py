"""Ship a trained bot inside the package: `rocketrl ... --checkpoint pretrained` (or `pretrained_team`) loads it.

    python scripts/make_pretrained.py --league RECORD.json [EVAL.json ...] [JUDGED.json ...]   (a league run's gauntlet
        record, docs/league_*_gauntlet.json; optionally `rocketrl eval --json` files of fresh games of the same bot
        and the `rocketrl judge --json` files of its sets against its parent: a bot that passed none is refused)
    python scripts/make_pretrained.py REPORT.json   (a benchmarks/learn_vs_rule.py report)
    python scripts/make_pretrained.py --team CHECKPOINT EVAL.json [EVAL.json ...]   (rocketrl eval --json files)

Reads the bot, keeps what playing needs (the network's weights, the observation normalizer, the run's config;
not the optimizer, league or random generators), and writes it with its measured figures as a JSON card beside
it: a 1v1 bot becomes the gauntlet's next version, rocketrl/pretrained/gauntlet/vN.safetensors, and with that the
shipped 1v1 bot (`pretrained` is the newest gauntlet version; the older ones stay, frozen, as opponents); the team
bot becomes rocketrl/pretrained/team.safetensors (its figures per team size from `rocketrl eval --json` files).
A league bot's line in the runs record beside its gauntlet record (docs/league_runs.jsonl, as
scripts/record_league.py wrote it, "(not shipped)") then names the file it shipped as.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rocketrl.eval.league_record import mark_shipped
from rocketrl.infra.checkpoint import file_sha256, load_checkpoint, read_meta, save_checkpoint
from rocketrl.policy.average import averaged_leaves
from rocketrl.policy.load import (
    GAUNTLET_DIR,
    GAUNTLET_PREFIX,
    PRETRAINED_TEAM_CHECKPOINT,
    SCRIPTED_GAUNTLET,
    checkpoint_config,
    gauntlet_versions,
    resolve_checkpoint,
    run_starts,
)

CARD_KEYS = ("games", "wins", "draws", "losses", "win_rate", "win_rate_low", "win_rate_high", "elo")
RESULT_KEYS = ("wins", "draws", "losses", "goals_for", "goals_against", "win_rate", "win_rate_low", "win_rate_high")


def ship_1v1(source: Path, state: dict, meta: dict, card: dict) -> tuple[Path, str]:
    """Write the bot at `source` (its checkpoint's tensors `state` and metadata `meta`) as the gauntlet's next
    version with `card` (gauntlet_version, team_size and name added); returns the new checkpoint's path and its
    name ('gauntlet_vN')."""
    config = portable(checkpoint_config(source, meta))
    version = max(gauntlet_versions(), default=0) + 1
    card = {"gauntlet_version": version, "team_size": "1v1", **card, "name": f"{GAUNTLET_PREFIX}{version}"}
    target = GAUNTLET_DIR / f"v{version}.safetensors"
    keep = {"model": state["model"], "obs_norm": state["obs_norm"]}
    GAUNTLET_DIR.mkdir(parents=True, exist_ok=True)
    save_checkpoint(target, keep, {"config": config, "step": meta.get("step"), "pretrained": card})
    target.with_suffix(".json").write_text(json.dumps(card, indent=2) + "\n")
    print(f"wrote {target} ({target.stat().st_size / 2**20:.1f} MiB) from {source}: {card['name']}, now `pretrained`")
    return target, card["name"]


def main(report_path: str) -> None:
    """Ship the bot of a benchmarks/learn_vs_rule.py report (figures against RulePolicy and the scripted styles)."""
    report = json.loads(Path(report_path).read_text())
    source = Path(report["bot"])
    state, meta = load_checkpoint(source)
    card = {
        "preset": report["preset"],
        "variant": report.get("variant"),
        "train_engine": report.get("train_engine"),
        "seed": report.get("seed"),
        "commit": report.get("commit"),
        "steps": meta.get("step"),
        "train_wall_seconds": report["train_wall_seconds"],
        "vs_rule_policy": {k: report[k] for k in CARD_KEYS},
        "vs_rule_policy_exact_kickoffs": {k: report["exact_kickoffs"][k] for k in CARD_KEYS}
        if report.get("exact_kickoffs")
        else None,
        "generalization": {
            name: {k: figures[k] for k in CARD_KEYS} for name, figures in (report.get("generalization") or {}).items()
        },
        "measured_with": "benchmarks/learn_vs_rule.py: full 5-minute games, kickoff jitter 5 uu, greedy actions",
    }
    ship_1v1(source, state, meta, card)


def league(record_path: str, evals: list[str] = ()) -> None:
    """Ship the bot of a league run's gauntlet record (docs/league_*_gauntlet.json: the bot, the train command,
    the eval settings and machine, and one result per gauntlet opponent): RulePolicy's figures as
    "vs_rule_policy", every other opponent's under "generalization", as the 1v1 cards have them. `evals`, the
    `rocketrl eval --json` files of new games of the same bot (games that did not choose it among runs, so their
    figures carry no selection), go under "fresh_games"; a `rocketrl judge --json` file among them (its sets
    against the parent) goes under "judged" (a list: every judgement given is kept, passed or not); a bot none of
    them passed, or another bot's judgement, is refused."""
    record = json.loads(Path(record_path).read_text())
    source = Path(record["bot"])
    results = record["results"]
    missing = [name for name in SCRIPTED_GAUNTLET if name not in results]
    if missing:
        sys.exit(f"{record_path}: no results against {', '.join(missing)}; a shipped bot plays the whole gauntlet")
    reports = {path: json.loads(Path(path).read_text()) for path in evals}
    judged = [judged_sets(path, report, source) for path, report in reports.items() if "verdict" in report]
    if judged and not any(j["verdict"]["ships"] for j in judged):
        reasons = "; ".join(f"{j['path']}: {', '.join(j['verdict']['reasons'])}" for j in judged)
        sys.exit(
            f"{source} does not replace {judged[0]['parent']} ({reasons}); a shipped bot passes a shipping rule "
            "against its parent (rocketrl judge --rule: every set won, or 1,000 games pooled and level on the field)"
        )
    state, meta = load_checkpoint(source)
    config = checkpoint_config(source, meta)
    command = record["train"].split()

    def figures(result: dict) -> dict:
        return {"games": result["num_games"], **{k: result[k] for k in RESULT_KEYS}}

    card = {
        "preset": command[command.index("--preset") + 1] if "--preset" in command else None,
        "train_command": record["train"],
        "train_engine": config.get("env", {}).get("engine"),
        "seed": config.get("run", {}).get("seed"),
        "init_from": config.get("run", {}).get("init_from"),
        "steps": meta.get("step"),
        "vs_rule_policy": figures(results["rule_policy"]),
        "generalization": {name: figures(r) for name, r in results.items() if name != "rule_policy"},
        "measured_with": record["settings"].replace("BOT", "CHECKPOINT") + " (RocketSim)",
        "machine": record["machine"],
        "record": record_path,
    }
    if meta.get("averaged_from"):  # `rocketrl average`: the card names the bots it averaged, their seeds and starts
        card["averaged_from"] = meta["averaged_from"]
        leaves = averaged_leaves(meta["averaged_from"])  # through averages of averages, each with its weight
        if any("averaged_from" in m for m in meta["averaged_from"]):
            card["averaged_checkpoints"] = leaves
        runs = [leaf if "seed" in leaf else leaf_run(Path(leaf["checkpoint"])) for leaf in leaves]  # kept, or read
        card["seed"] = [run.get("seed") for run in runs]
        card["init_from"] = run_starts([run.get("init_from") for run in runs])
    fresh = [report for report in reports.values() if "verdict" not in report]
    if fresh:
        card["fresh_games"] = {result["name_b"]: figures(result) for report in fresh for result in report["results"]}
    if judged:
        card["judged"] = judged
    target, name = ship_1v1(source, state, meta, card)
    runs_record = Path(record_path).parent / "league_runs.jsonl"  # the bot's line there now names the shipped file
    shipped_as = f"{name}: {shown(target)}"
    if mark_shipped(runs_record, record_path, record["bot"], shipped_as):
        print(f"{runs_record}: the line of {record['bot']} now reads (shipped as {shipped_as})")
    else:
        unmarked = f"no line of {record['bot']} marked (not shipped) with {Path(record_path).name}"
        print(f"{runs_record}: {unmarked}; left as it was")


def shown(path: Path) -> str:
    """`path` relative to the project's root where it lies inside it (as the records name files)."""
    try:
        return str(path.resolve().relative_to(Path(__file__).resolve().parent.parent))
    except ValueError:
        return str(path)


def leaf_run(path: Path) -> dict:
    """The run section of the config of the checkpoint at `path` (for an average's entry that did not keep its run's
    seed and start: averages written before they kept them)."""
    return checkpoint_config(path, read_meta(path)).get("run", {})


def judged_this_bot(report: dict, source: Path) -> bool:
    """Whether a `rocketrl judge --json` report judged the file `source`: the same path, or the same bytes (the
    report's candidate_sha256, or for an older report without it, its candidate file where that still exists), so
    a judged run's candidate copied under docs/ ships on its judgement and any other bot does not."""
    try:
        judged = resolve_checkpoint(report["candidate"]).resolve()
    except (FileNotFoundError, ValueError):
        judged = None  # the judged file is gone: only its recorded digest can name it
    if judged == source.resolve():
        return True
    recorded = report.get("candidate_sha256")
    if recorded is None and judged is not None:
        recorded = file_sha256(judged)
    return recorded is not None and recorded == file_sha256(source)


def judged_sets(path: str, report: dict, source: Path) -> dict:
    """The card's record of a `rocketrl judge --json` file `report` of the bot at `source`: the parent, each set, the
    verdict, the field's comparison and the floor's games. Exits naming the file when it judged another bot."""
    if not judged_this_bot(report, source):
        sys.exit(f"{path}: judged {report['candidate']}, not {source}; judge the bot being shipped")
    verdict = report["verdict"]
    keys = ("seed", "wins", "draws", "losses", "goals_for", "goals_against")
    judged = {
        "path": path,
        "parent": report["parent"],
        "sets": [{k: s[k] for k in keys} for s in report["sets"]],
        "verdict": verdict,
        "settings": report["settings"],
        "machine": report["machine"],
    }
    if "field" in report:  # the candidate and the parent against other bots: the comparison, not every game
        judged["field"] = {k: v for k, v in report["field"].items() if k != "matches"}
    if "floor" in report:  # the candidate's games against the floor bots (rocketrl judge --floor): a few, kept whole
        judged["floor"] = report["floor"]
    return judged


def portable(config: dict) -> dict:
    """The config with its packaged preset files (rewards, curriculum) named by their place in the package rather
    than by a path on the machine that trained it."""
    config = json.loads(json.dumps(config))
    for section, key in (("env", "rewards"), ("league", "curriculum")):
        value = config.get(section, {}).get(key)
        if value and "configs/presets/" in str(value):
            config[section][key] = "configs/presets/" + Path(value).name
    return config


def team(checkpoint: str, evals: list[str]) -> None:
    """Ship `checkpoint` as the team bot with the figures of the `rocketrl eval --json` files `evals` (each one team
    size; the card lists them per size under "by_team_size")."""
    source = Path(checkpoint)
    state, meta = load_checkpoint(source)
    config = portable(checkpoint_config(source, meta))
    by_size: dict[str, dict] = {}
    team_play: dict[str, dict] = {}
    commands = []
    for path in evals:
        data = json.loads(Path(path).read_text())
        for result in data["results"]:
            figures = {k: result[k] for k in ("num_games", "wins", "draws", "losses", "goals_for", "goals_against")}
            figures |= {k: result[k] for k in ("win_rate", "win_rate_low", "win_rate_high")}
            by_size.setdefault(data["team_size"], {})[result["name_b"]] = figures
        commands.append(f"{data['team_size']} against {', '.join(r['name_b'] for r in data['results'])}")
        for teams in data.get("team_figures", []):  # how the bot's teams played (eval --replays)
            mine = [v["figures"] for k, v in teams.items() if k.startswith(data["results"][0]["name_a"] + " ")]
            if mine and data["team_size"] != "1v1":
                team_play.setdefault(data["team_size"], {})[data["results"][0]["name_b"]] = mine[0]
    card = {
        "name": "team",
        "preset": "team",
        "seed": config.get("run", {}).get("seed", config.get("env", {}).get("seed")),
        "steps": meta.get("step"),
        "team_sizes": sorted(by_size),
        "by_team_size": {size: by_size[size] for size in sorted(by_size)},
        "team_play": team_play,
        "machine": sorted({json.loads(Path(path).read_text()).get("machine", "not recorded") for path in evals}),
        "measured_with": "rocketrl eval --checkpoint pretrained_team --team-size N --opponents OPPONENTS --num-games "
        "100 --game-seconds 300 --deterministic --kickoff-jitter 5 (RocketSim; " + "; ".join(commands) + "); "
        "team_play: rocketrl stats figures of the bot's teams in those games (eval --replays)",
    }
    keep = {"model": state["model"], "obs_norm": state["obs_norm"]}
    save_checkpoint(PRETRAINED_TEAM_CHECKPOINT, keep, {"config": config, "step": meta.get("step"), "pretrained": card})
    PRETRAINED_TEAM_CHECKPOINT.with_suffix(".json").write_text(json.dumps(card, indent=2) + "\n")
    size = PRETRAINED_TEAM_CHECKPOINT.stat().st_size / 2**20
    print(f"wrote {PRETRAINED_TEAM_CHECKPOINT} ({size:.1f} MiB) from {source}")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
    elif missing := [p for p in sys.argv[1:] if p.endswith(".json") and not Path(p).is_file()]:
        sys.exit(f"no such record: {', '.join(missing)}; give the JSON files the usage below names\n{__doc__}")
    elif len(sys.argv) >= 4 and sys.argv[1] == "--team":
        team(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) >= 3 and sys.argv[1] == "--league":
        league(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit(__doc__)
