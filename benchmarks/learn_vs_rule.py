"""Learning benchmark: train 1v1 from scratch with a named preset, then play RulePolicy.

Trains with `configs/presets/<preset>.yaml` for a fixed budget (agent-steps and/or wall minutes),
then plays at least 100 full games (5 minutes of game time each, overtime, each side equally
often) against RulePolicy and prints one JSON object: win rate with its 95% Wilson interval, Elo
(a performance rating against RulePolicy anchored at 1500: 1500 + 400 log10(p / (1 - p)), p the
win rate with draws as half, clipped to [1/(2n), 1 - 1/(2n)]), goals, steps and wall time. With
--plot it draws the run's evaluation curve (league/win_rate_vs_rule and league/elo from TensorBoard)
into a PNG. Targets: win rate >= 70% (Elo >= 1650) within 2 hours on a 2-core CPU; aim for 90%.

Choosing the bot (--select-games G, default 32; --candidates K, default 4): the latest checkpoint and
the best K-1 others (by the preset's run.best_by, for vs_rule the win rate of the in-training
evaluations) each play G full games against RulePolicy, and the one with the most points (ties: the
newer) is the bot that plays the final games, on arena seeds of their own. The selection's time is
reported beside the training's. With --learners L the benchmark seed trains L learners one after another (run
seeds SEED*L to SEED*L+L-1, each the preset's full budget) and the candidates of them all play the selection
games (`rocketrl.eval.selection`, also `rocketrl select RUN...`); recorded as the variant best_of_L, with the
summed training time and steps. --learner-runs RUN... stands runs this benchmark already trained (their
config.json must match field by field, and their record give their steps and time) in for the first learners.

Engines (--engine rocketsim|warp, default the preset's): the engine the bot trains in, in-training
evaluations included. The selection and final games are always played in RocketSim, so a bot trained
on the warp engine reports how its skills carry over to RocketSim.

Kickoffs (--kickoff-jitter UU, default 5): physics is deterministic, so a greedy bot against RulePolicy
replays the same kickoff from the same spawn and car order, and from exact spawns 100 games are a
handful of distinct kickoffs repeated. The selection and final games move each car's spawn by up to UU
in x and y, which makes them independent trials; the final games are then played once more from the
exact spawns and reported under "exact_kickoffs".

Generalization (--generalization-games G, default 50): the chosen bot also plays G jittered full games
against each scripted opponent it never trained against (`rocketrl.policy.scripted`: shadow_goalie,
ball_chaser), reported under "generalization".

A bot trained on another engine than the final games' (warp) also plays the final games, the same arena seeds
and spawns, on that engine: its own win rate there, under "train_engine_final".

How the bot played: the final (jittered) games are saved as replays in the run's folder (`final_games`) and read
as `rocketrl stats` reads them; both sides' figures (goals, own goals and those off a failed save, shots, touches,
jumps, hits, positioning) go under "play", the bot's main ones into the record.

Every run is recorded (--record, default docs/learn_vs_rule_runs.jsonl; not with --quick): one JSON line
with the seed, commit, preset, steps, wall times, the final figures, the exact-spawn figure and the
generalization figures, so the spread over seeds is on file. `--measure REPORT.json` skips training: the bot
an earlier report chose plays the games the report lacks (generalization; a warp-trained bot's games on warp),
and the run is recorded.

    python benchmarks/learn_vs_rule.py [--preset vs_rule] [--seed N] [--timesteps N] [--minutes M] [--games 100]
        [--engine rocketsim|warp] [--select-games 32] [--candidates 4] [--kickoff-jitter 5]
        [--generalization-games 50] [--record docs/learn_vs_rule_runs.jsonl] [--plot PNG] [--out report.json]
        [--learners L [--learner-runs RUN...]]
    python benchmarks/learn_vs_rule.py --measure report.json [--generalization-games 50] [--record PATH]
    python benchmarks/learn_vs_rule.py --evaluate CHECKPOINT --train-seconds S [--seed N] [--out report.json]
    python benchmarks/learn_vs_rule.py --table [--preset vs_rule]   (the recorded runs, for the README)
    python benchmarks/learn_vs_rule.py --time-to 0.5,0.8 [--preset vs_rule]   (when in-training evaluations got there)

`--evaluate` skips training and selection: the given checkpoint plays the final games (jittered and exact
spawns) and the generalization games, and the run is recorded with the steps in the checkpoint and the
training time given (for a run trained in parts, e.g. resumed with `rocketrl train --resume`).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from rocketrl.config import load_config, preset_config_path
from rocketrl.eval.learners import Learner, learner_seeds, reused_learner
from rocketrl.eval.run_record import (
    TRAINING_END_TAGS,
    append_record,
    comparison_table,
    games_summary,
    runs_table,
    training_end,
)
from rocketrl.infra.atomic_json import write_json_atomic
from rocketrl.infra.bench_report import emit_report, git_commit, machine_info, sibling_module
from rocketrl.infra.tb_scalars import read_scalars

LONG_BENCHMARK = True  # `rocketrl bench` runs it only when named

ROOT = Path(__file__).resolve().parent.parent
RUNS_RECORD = ROOT / "docs" / "learn_vs_rule_runs.jsonl"
GENERALIZATION_OPPONENTS = ("shadow_goalie", "ball_chaser")
"""Scripted opponents no training preset uses (rocketrl/policy/scripted.py)."""


def read_curve(run_dir: Path, tags: tuple[str, ...]) -> dict[str, list[tuple[int, float]]]:
    """(step, value) series of TensorBoard scalars of a run."""
    scalars = read_scalars(run_dir)
    return {tag: [(e.step, e.value) for e in scalars[tag]] for tag in tags if tag in scalars}


def first_reaching(
    run_dir: Path, rates: list[float], tag: str = "league/win_rate_vs_rule"
) -> list[tuple[int, float] | None]:
    """For each of `rates`: (agent-steps, minutes since the run's first logged scalar) when its in-training
    evaluation first read at least that rate against RulePolicy (TensorBoard, read once); None where it never did or
    the run's events are gone."""
    scalars = read_scalars(run_dir)
    if tag not in scalars:
        return [None] * len(rates)
    start = min(series[0].wall_time for series in scalars.values() if series)
    events = scalars[tag]
    firsts = [next((event for event in events if event.value >= rate), None) for rate in rates]
    return [None if first is None else (first.step, (first.wall_time - start) / 60.0) for first in firsts]


def time_to_table(records: list[dict], preset: str, variant: str, team: str, rates: list[float]) -> str:
    """For each recorded single run of `preset` (with `variant`) in `team` games, on every engine: when its
    in-training evaluations (32 short games against RulePolicy, on the engine it trains on) first reached each
    of `rates`, in agent-steps and minutes of training, from the run's TensorBoard events on this machine."""
    runs = [
        r
        for r in records
        if r.get("preset") == preset
        and r.get("variant", "") == variant
        and r.get("team_size", "1v1") == team
        and not r.get("learners")
    ]
    header = "| engine | seed | training | final (jittered) | " + " | ".join(f"first at {100 * x:.0f}%" for x in rates)
    lines = [header + " |", "|---|---|---|---|" + "---|" * len(rates)]
    for r in sorted(runs, key=lambda r: (r.get("train_engine", "rocketsim"), r["seed"])):
        run_dir = ROOT / Path(r["bot"]).parent.parent
        reached = first_reaching(run_dir, rates) if run_dir.is_dir() else [None] * len(rates)
        cells = ["-" if first is None else f"{first[0] / 1e6:.0f}M, {first[1]:.0f} min" for first in reached]
        trained = f"{r['steps'] / 1e6:.1f}M in {r['train_wall_seconds'] / 60:.0f} min"
        final = f"{100 * r['final']['win_rate']:.1f}%"
        engine = r.get("train_engine", "rocketsim")
        lines.append(f"| {engine} | {r['seed']} | {trained} | {final} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def preset_engine(preset: str) -> str:
    """The engine configs/presets/<preset>.yaml trains on (its env.engine, or that of the preset it extends)."""
    try:
        return load_config(preset_config_path(preset)).env.engine
    except ValueError:  # no such preset: the table then says there are no runs of it
        return "rocketsim"


def end_of_training(run_dir: Path) -> dict[str, float]:
    """training_end of the run's scalars (empty without tensorboard, which reads them)."""
    try:
        return training_end(read_curve(run_dir, tuple(TRAINING_END_TAGS.values())))
    except ImportError:
        return {}


def game_config(args: argparse.Namespace, num_games: int, seed: int):
    """A MatchConfig of `num_games` full games of args.team_size with jittered spawns, on arena seeds `seed`."""
    from rocketrl.eval.selection import jittered_games

    blue, orange = args.team_size
    return jittered_games(num_games, seed, blue, orange, args.kickoff_jitter, args.game_seconds)


def final_games_with_replays(args: argparse.Namespace, folder: Path):
    """game_config of the final games, each saved as a replay in `folder` (read back by play_figures)."""
    match = game_config(args, args.games, args.seed + 1)
    match.replay_games, match.replay_dir = "all", str(folder)
    return match


def play_figures(folder: Path) -> dict[str, dict]:
    """How each side played the replays in `folder` (rocketrl stats: goals, own goals, shots, touches, jumps, hits,
    positioning), per policy name, NaN figures as null."""
    from rocketrl.eval.game_stats import figures_for_json, stats_of_files

    return {name: figures_for_json(figures) for name, figures in stats_of_files([folder]).items()}


def generalization(bot, args: argparse.Namespace, device) -> dict[str, dict]:
    """The bot's figures (games_summary) against each opponent of GENERALIZATION_OPPONENTS, on arena seeds
    of their own (args.seed + 2000), jittered kickoffs, full games."""
    from rocketrl.league.match import play_match
    from rocketrl.policy.load import load_policy

    figures = {}
    for name in GENERALIZATION_OPPONENTS:
        match = game_config(args, args.generalization_games, args.seed + 2000)
        result = play_match(bot, load_policy(name, compile_rule=True), match, "learner", name, device=device)
        figures[name] = games_summary(result)
        print(f"generalization: {result.summary()}", flush=True)
    return figures


def train_engine_games(bot, rule, args: argparse.Namespace, engine: str, device) -> dict:
    """The final games (the same arena seeds and jittered spawns) played again on `engine`, the one the bot
    trained in: its own win rate there, to set beside RocketSim's (games_summary figures)."""
    from rocketrl.league.match import play_match

    match = game_config(args, args.games, args.seed + 1)
    match.env.engine = engine
    result = play_match(bot, rule, match, "learner", "rule_policy", device=device)
    print(f"final games on {engine}: {result.summary()}", flush=True)
    return games_summary(result) | {"engine": engine}


def measure(args: argparse.Namespace) -> None:
    """--measure: the games an earlier report lacks, played by the bot it chose (the generalization games; for
    a bot trained on another engine than the final games', the final games on that engine); the report is
    updated and recorded."""
    from rocketrl.policy.load import policy_from_checkpoint
    from rocketrl.policy.rule import RulePolicy

    report_path = Path(args.measure)
    report = json.loads(report_path.read_text())
    report.setdefault("seed", args.seed)
    greedy = report.get("acting", "greedy") == "greedy"
    args.seed, args.game_seconds = report["seed"], report.get("game_seconds", args.game_seconds)
    args.kickoff_jitter = report.get("kickoff_jitter", args.kickoff_jitter)
    torch.set_num_threads(1)
    args.games = report.get("games", args.games)
    bot = policy_from_checkpoint(report["bot"], deterministic=greedy)
    train_engine = report.get("train_engine", "rocketsim")
    if train_engine != report.get("eval_engine", "rocketsim") and not report.get("train_engine_final"):
        rule = RulePolicy(seed=args.seed, compiled=True)
        report["train_engine_final"] = train_engine_games(bot, rule, args, train_engine, "cpu")
        write_json_atomic(report_path, report)  # kept even if the games below fail
    if not report.get("generalization") and args.generalization_games > 0:
        report["generalization"] = generalization(bot, args, "cpu")
    write_json_atomic(report_path, report)
    print(json.dumps({k: report.get(k) for k in ("train_engine_final", "generalization")}, indent=2))
    if args.record:
        append_record(Path(args.record), report)


def evaluate(args: argparse.Namespace) -> None:
    """--evaluate: the final and generalization games of a given checkpoint, reported and recorded."""
    from rocketrl.infra.checkpoint import read_meta
    from rocketrl.league.match import play_match
    from rocketrl.policy.load import checkpoint_config, policy_from_checkpoint
    from rocketrl.policy.rule import RulePolicy

    torch.set_num_threads(1)
    path = Path(args.evaluate)
    meta = read_meta(path)
    config = checkpoint_config(path, meta)
    bot = policy_from_checkpoint(path, deterministic=True)
    rule = RulePolicy(seed=args.seed, compiled=True)
    replays = path.parent.parent / f"final_games-{time.strftime('%Y%m%d-%H%M%S')}"
    match = final_games_with_replays(args, replays)
    result = play_match(bot, rule, match, "learner", "rule_policy")
    print(f"final: {result.summary()}", flush=True)
    match.env.kickoff_jitter, match.replay_games = 0.0, ()
    exact = play_match(bot, rule, match, "learner", "rule_policy")
    print(f"exact spawns: {exact.summary()}", flush=True)
    report = {
        "benchmark": "learn_vs_rule",
        "preset": args.preset,
        "variant": args.variant,
        "changes": list(args.set),
        "seed": args.seed,
        "commit": git_commit(),
        "train_engine": config.get("env", {}).get("engine", "rocketsim"),
        "eval_engine": "rocketsim",
        "run": str(path.parent.parent),
        "steps": meta.get("step"),
        "train_wall_seconds": args.train_seconds,
        "select_wall_seconds": 0.0,
        "selection": [],
        "bot": str(path),
        "game_seconds": args.game_seconds,
        "team_size": "{}v{}".format(*args.team_size),
        **games_summary(result),
        "acting": "greedy",
        "kickoff_jitter": args.kickoff_jitter,
        "exact_kickoffs": games_summary(exact),
        "play": play_figures(replays),
        "replays": str(replays),
        "generalization": generalization(bot, args, "cpu") if args.generalization_games > 0 else {},
        "machine": machine_info(),
    }
    publish(report, args)


def publish(report: dict, args: argparse.Namespace) -> None:
    """Print the report as JSON, write it to --out (whole or not at all) and append it to --record."""
    emit_report(report, args.out)
    if args.record:
        append_record(Path(args.record), report)


def learner_config(args: argparse.Namespace, preset: Path, seed: int):
    """The training config of the learner with run seed `seed` (the preset with the command's changes)."""
    name = f"learn_vs_rule-{args.preset}-{time.strftime('%Y%m%d-%H%M%S')}"
    overrides = ["--run.logdir", args.logdir, "--run.name", name, "--run.seed", str(seed), "--run.ascii", "true"]
    if args.timesteps is not None:
        overrides += ["--run.timesteps", str(args.timesteps)]
    if args.minutes is not None:
        overrides += ["--run.max-minutes", str(args.minutes)]
    if args.engine is not None:
        overrides += ["--env.engine", args.engine]
    overrides += [f"--{item}" for item in args.set]
    return load_config(preset, overrides)


def plot_curve(curves: dict[str, list[tuple[int, float]]], final: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    panels = (
        ("league/win_rate_vs_rule", "win rate vs RulePolicy (evaluation, 60 s games)"),
        ("league/elo", "Elo (RulePolicy = 1500)"),
        ("charts/episode_return", "mean episode return"),
    )
    for ax, (tag, title) in zip(axes, panels):
        series = curves.get(tag, [])
        if series:
            ax.plot([s / 1e6 for s, _ in series], [v for _, v in series], marker="o" if len(series) < 40 else None)
        ax.set_title(title)
        ax.set_xlabel("agent-steps (millions)")
        ax.grid(alpha=0.3)
    axes[0].axhline(0.7, color="gray", linestyle="--", linewidth=1)
    axes[0].set_ylim(0, 1)
    fig.suptitle(
        f"learn_vs_rule: final {final['win_rate']:.0%} win rate "
        f"[{final['win_rate_low']:.0%}, {final['win_rate_high']:.0%}] over {final['games']} full games, "
        f"Elo {final['elo']:.0f}"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)


def main() -> None:
    command_line = sibling_module(__file__, "_learn_vs_rule_args")
    parser = command_line.build_parser(__doc__.split("\n\n")[0], RUNS_RECORD, ROOT)
    args = parser.parse_args()
    command_line.check_args(args, parser)
    if args.table or args.compare or args.time_to:
        path = Path(args.record or RUNS_RECORD)
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
        team = "{}v{}".format(*args.team_size)
        if args.time_to:
            rates = [float(x) for x in args.time_to.split(",")]
            print(time_to_table(records, args.preset, args.variant, team, rates))
        elif args.compare:
            print(comparison_table(records, team))
        else:
            print(runs_table(records, args.preset, args.variant, team, args.engine or preset_engine(args.preset)))
        return
    if args.quick:
        args.timesteps, args.games, args.game_seconds, args.select_games = 20_000, 4, 20.0, 2
        args.generalization_games, args.record = min(args.generalization_games, 2), ""
    if args.measure:
        measure(args)
        return
    if args.evaluate:
        evaluate(args)
        return
    if args.games < 1:
        parser.error("--games must be at least 1")
    if args.generalization_games < 0:
        parser.error("--generalization-games must be 0 (none) or positive")
    if args.select_games < 0:
        parser.error("--select-games must be 0 (off) or positive")
    if args.candidates < 1:
        parser.error("--candidates must be at least 1")
    from rocketrl.env.setters import MAX_KICKOFF_JITTER, kickoff_jitter_in_range

    if not kickoff_jitter_in_range(args.kickoff_jitter):
        parser.error(f"--kickoff-jitter must lie in [0, {MAX_KICKOFF_JITTER:g}] uu")

    from rocketrl.eval.selection import run_candidates, select_bot
    from rocketrl.league.match import play_match
    from rocketrl.policy.load import policy_from_checkpoint
    from rocketrl.policy.rule import RulePolicy
    from rocketrl.ppo.trainer import resolve_device
    from rocketrl.training import train

    try:
        preset = preset_config_path(args.preset)
    except ValueError as error:
        parser.error(str(error))
    seeds = learner_seeds(args.seed, args.learners)
    if len(args.learner_runs) > len(seeds):
        parser.error(f"--learner-runs: {len(args.learner_runs)} runs given for {len(seeds)} learners")
    records_path = Path(args.record or RUNS_RECORD)
    learners: list[Learner] = []
    for index, seed in enumerate(seeds):
        cfg = learner_config(args, preset, seed)
        if index < len(args.learner_runs):
            try:
                learners.append(reused_learner(cfg, Path(args.learner_runs[index]), records_path))
            except ValueError as error:
                parser.error(str(error))
        else:
            started = time.perf_counter()
            run_dir, steps, _ = train(cfg)
            learners.append(Learner(seed, run_dir, steps, time.perf_counter() - started))
    chosen_run = learners[-1]
    device = resolve_device(cfg.run.device)
    torch.set_num_threads(1)  # evaluation: small batched ops, fastest on one thread
    greedy = cfg.league.eval_deterministic if args.acting == "preset" else args.acting == "greedy"
    rule = RulePolicy(seed=args.seed, compiled=cfg.speed.compile_rule)
    selection: list[dict] = []
    chosen = run_candidates(chosen_run.run_dir, 1)[0].checkpoint  # without selection games: the last weights
    select_seconds = 0.0
    if args.select_games > 0:
        select_started = time.perf_counter()
        match = game_config(args, args.select_games, args.seed + 1000)
        table, best = select_bot(
            [learner.run_dir for learner in learners], rule, match, args.candidates, greedy, device
        )
        selection, chosen = [candidate.row() for candidate in table], best.checkpoint
        chosen_run = next(learner for learner in learners if learner.run_dir == chosen.parent.parent)
        select_seconds = time.perf_counter() - select_started
    learner = policy_from_checkpoint(chosen, device=device, deterministic=greedy)
    replays = chosen_run.run_dir / ("final_games" if len(learners) == 1 else f"final_games-best_of_{len(learners)}")
    match = final_games_with_replays(args, replays)
    result = play_match(learner, rule, match, "learner", "rule_policy", device=device)
    play = play_figures(replays)
    match.replay_games = ()
    exact = None
    if args.kickoff_jitter > 0 and not args.no_exact:  # the same games from the exact spawns
        match.env.kickoff_jitter = 0.0
        exact = play_match(learner, rule, match, "learner", "rule_policy", device=device)
    on_train_engine = None
    if cfg.env.engine != match.env.engine:  # the same games on the engine the bot trained in
        on_train_engine = train_engine_games(learner, rule, args, cfg.env.engine, device)
    unseen = generalization(learner, args, device) if args.generalization_games > 0 else {}
    final = games_summary(result)
    report = {
        "benchmark": "learn_vs_rule",
        "preset": args.preset,
        "variant": args.variant,
        "changes": list(args.set),
        "seed": args.seed,
        "commit": git_commit(),
        "train_engine": cfg.env.engine,
        "eval_engine": match.env.engine,
        "run": str(chosen_run.run_dir),
        "steps": sum(learner.steps for learner in learners),
        "train_wall_seconds": round(sum(learner.train_seconds for learner in learners), 1),
        "select_wall_seconds": round(select_seconds, 1),
        "selection": selection,
        **({"learners": [learner.row() for learner in learners]} if len(learners) > 1 else {}),
        "bot": str(chosen),
        "game_seconds": args.game_seconds,
        "team_size": "{}v{}".format(*args.team_size),
        **final,
        "acting": "greedy" if greedy else "sampled",
        "kickoff_jitter": args.kickoff_jitter,
        "exact_kickoffs": None if exact is None else games_summary(exact),
        "play": play,
        "replays": str(replays),
        "train_engine_final": on_train_engine,
        "generalization": unseen,
        "training_end": end_of_training(chosen_run.run_dir),
        # every seed at least 80%, the median of the seeds 90% (Elo 1900): this run meets its part if >= 80%
        "target": {"every_seed_win_rate": 0.8, "median_win_rate": 0.9, "median_elo": 1900},
        "met": final["win_rate"] >= 0.8,
        "machine": machine_info(),
    }
    publish(report, args)  # before the picture, so a plotting failure never loses the measured figures
    if args.plot:
        try:
            curves = read_curve(chosen_run.run_dir, ("league/win_rate_vs_rule", "league/elo", "charts/episode_return"))
            plot_curve(curves, report, Path(args.plot))
            print(f"curve drawn to {args.plot}")
        except ImportError as err:
            print(f"no plot: {err} (pip install -e .[plot])")


if __name__ == "__main__":
    main()
