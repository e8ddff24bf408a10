"""The `rocketrl` command.

rocketrl train     train a bot with PPO
rocketrl eval      play full games between policies (win rates, ratings, tournaments)
rocketrl judge / climb  does a candidate replace its parent; a line of runs judged until one does
rocketrl export    a checkpoint as an RLBot v5 bot folder or an ONNX actor
rocketrl render    draw a replay to an MP4, a GIF or PNG frames
rocketrl watch     play a bot in a game and render it (or stream it to RLViser)
rocketrl sim   run batched soccar arenas with random actions and print throughput
rocketrl info  show versions, devices and where the collision meshes are
rocketrl diagnose / bench / doctor  where the time goes, benchmark reports, installation checks
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import get_args

from rocketrl import __version__
from rocketrl.cli_args import positive_int, team_size
from rocketrl.sim.modes import SteppingSetting


def cmd_sim(args: argparse.Namespace) -> int:
    """Step BatchedEnv with random actions; print steps per second and what happened."""
    import torch

    from rocketrl.env.batched import BatchedEnv
    from rocketrl.sim.arena import step_seconds

    torch.set_num_threads(1)
    blue, orange = args.team_size
    started = time.perf_counter()
    env = BatchedEnv(
        num_arenas=args.arenas,
        blue_size=blue,
        orange_size=orange,
        num_workers=args.workers,
        stepping=args.stepping,
        action=args.action,
        seed=args.seed,
        device=args.device,
        compile=args.compile,
    )
    build_s = time.perf_counter() - started
    generator = torch.Generator().manual_seed(args.seed)
    a, n = env.num_arenas, env.num_cars
    episodes = goals_blue = goals_orange = touches = 0
    try:
        env.reset()
        # One untimed step: RocketSim's first step of a new arena builds its collision caches.
        env.step(torch.zeros(a, n, dtype=torch.long) if args.action == "discrete" else torch.zeros(a, n, 8))
        env.reset()
        t0 = time.perf_counter()
        report_every = max(1, args.steps // 5)
        for step in range(1, args.steps + 1):
            if args.action == "discrete":
                actions = torch.randint(0, 90, (a, n), generator=generator)
            else:
                actions = torch.rand(a, n, 8, generator=generator) * 2 - 1
            result = env.step(actions)
            touches += int(env.state.car_touched_ball.sum())
            if result.episodes:
                episodes += len(result.episodes["arena"])
                goals_blue += int(result.episodes["goals_blue"].sum())
                goals_orange += int(result.episodes["goals_orange"].sum())
            if not args.json and (step % report_every == 0 or step == args.steps):
                elapsed = time.perf_counter() - t0
                print(
                    f"step {step:>6}/{args.steps}  {step * a * n / elapsed:>10,.0f} agent-steps/s  "
                    f"{step * a * env.config.tick_skip / elapsed:>10,.0f} arena-ticks/s",
                    flush=True,
                )
        elapsed = time.perf_counter() - t0
    finally:
        env.close()
    summary = {
        "arenas": a,
        "team_size": f"{blue}v{orange}",
        "steps": args.steps,
        "workers": env.engine.num_workers,
        "stepping": args.stepping,
        "build_seconds": round(build_s, 2),
        "seconds": round(elapsed, 2),
        "agent_steps_per_s": round(args.steps * a * n / elapsed),
        "arena_ticks_per_s": round(args.steps * a * env.config.tick_skip / elapsed),
        "game_seconds_simulated": round(args.steps * a * step_seconds(env.config.tick_skip)),
        "episodes_finished": episodes,
        "goals_blue": goals_blue,
        "goals_orange": goals_orange,
        "touches": touches,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"done: {summary['agent_steps_per_s']:,} agent-steps/s over {elapsed:.1f} s "
            f"({summary['game_seconds_simulated']:,} s of game time), {episodes} episodes, "
            f"goals {goals_blue}-{goals_orange}, {touches} touches"
        )
    return 0


TRAIN_FLAGS = {
    "timesteps": "run.timesteps",
    "device": "run.device",
    "logdir": "run.logdir",
    "seed": "run.seed",
    "resume": "run.resume",
    "name": "run.name",
    "distributed": "run.distributed",
}
DEBUG_TIMESTEPS = 1024


def build_train_config(args: argparse.Namespace, extra: list[str]):
    """TrainConfig from --config, the named flags and free overrides such as --ppo.learning-rate 3e-4."""
    from rocketrl.config import base_config_path, load_config, preset_config_path

    overrides = list(extra)
    for flag, dotted in TRAIN_FLAGS.items():
        value = getattr(args, flag)
        if value is not None:
            overrides += [f"--{dotted}", str(value)]
    if args.debug:
        # A short run: 8 arenas x 2 cars x 64 steps = 1024 agent-steps per update.
        overrides = ["--env.num-arenas", "8", *overrides, "--run.debug", "true"]
        if args.timesteps is None:
            overrides += ["--run.timesteps", str(DEBUG_TIMESTEPS)]
    if args.ascii:
        overrides += ["--run.ascii", "true"]
    if args.preset and args.config:
        raise ValueError("--preset and --config both name a config: give one")
    path = preset_config_path(args.preset) if args.preset else args.config or base_config_path()
    return load_config(path, overrides)


def cmd_train(args: argparse.Namespace, extra: list[str]) -> int:
    """Train with PPO; Ctrl-C or SIGTERM saves a checkpoint and exits cleanly. With --learners L, train L runs
    (seeds SEED .. SEED+L-1) one after another and choose the bot among them by games (rocketrl select)."""
    from rocketrl.training import train

    cfg = build_train_config(args, extra)
    if args.learners == 1:
        train(cfg)
        return 0
    if cfg.run.resume or cfg.run.distributed == "ray":
        raise ValueError("--learners trains new runs one after another on this machine: not with --resume or ray")
    import dataclasses

    base = cfg.run.name or time.strftime("run-%Y%m%d-%H%M%S")
    runs = []
    for index in range(args.learners):
        run = dataclasses.replace(cfg.run, seed=cfg.run.seed + index, name=f"{base}-learner{index}")
        print(f"learner {index + 1} of {args.learners}: seed {run.seed}, {Path(run.logdir) / run.name}", flush=True)
        run_dir, _, stopped = train(dataclasses.replace(cfg, run=run))
        runs.append(run_dir)
        if stopped:
            print(f"stopped: the learners after this one did not train; choose later with rocketrl select {run_dir}")
            return 0
    choose_among(runs, cfg)
    return 0


SELECT_GAMES = 32
"""Full games each candidate of --learners plays against RulePolicy (as benchmarks/learn_vs_rule.py)."""


def choose_among(runs: list[Path], cfg) -> Path:
    """The best checkpoint of `runs` by SELECT_GAMES jittered full games against RulePolicy (rocketrl select), at
    the team sizes training ends on (the curriculum's last stage, else env's); the table and the choice are
    written to <first run>/selection.json. Returns the chosen checkpoint."""
    import torch

    from rocketrl.eval.selection import format_selection, jittered_games, select_bot
    from rocketrl.infra.atomic_json import write_json_atomic
    from rocketrl.policy.rule import RulePolicy
    from rocketrl.ppo.trainer import resolve_device

    torch.set_num_threads(1)
    blue, orange = cfg.env.blue_size, cfg.env.orange_size
    if cfg.league.curriculum:  # the team sizes the curriculum ends on
        from rocketrl.league.curriculum import load_curriculum

        last = load_curriculum(cfg.league.curriculum).stages[-1]
        blue, orange = last.blue_size, last.orange_size
    match = jittered_games(SELECT_GAMES, cfg.run.seed + 1000, blue, max(orange, 1))
    greedy = cfg.league.eval_deterministic
    device = resolve_device(cfg.run.device)
    rule = RulePolicy(seed=cfg.run.seed, compiled=cfg.speed.compile_rule)
    table, best = select_bot(runs, rule, match, deterministic=greedy, device=device)
    print(format_selection(table, best, SELECT_GAMES))
    rows = [candidate.row() for candidate in table]
    write_json_atomic(runs[0] / "selection.json", {"selection": rows, "chosen": str(best.checkpoint)})
    print(f"the bot: {best.checkpoint} (selection: {runs[0] / 'selection.json'})")
    return best.checkpoint


def cmd_info(args: argparse.Namespace) -> int:
    """Print versions, devices and the collision meshes in use."""
    import torch

    from rocketrl.sim.meshes import CollisionMeshesNotFound, find_collision_meshes

    try:
        meshes = str(find_collision_meshes())
    except CollisionMeshesNotFound as error:
        meshes = f"NOT FOUND: {error}"
    try:
        from importlib.metadata import version

        rocketsim_version = version("rocketsim")
    except Exception:  # metadata missing in unusual installs
        rocketsim_version = "unknown"
    print(f"rocketrl     {__version__}")
    print(f"python       {platform.python_version()} ({sys.executable})")
    print(f"torch        {torch.__version__}, CUDA available: {torch.cuda.is_available()}")
    print(f"rocketsim    {rocketsim_version}")
    print(f"meshes       {meshes}")
    print(f"cpu cores    {os.cpu_count()}")
    print_cpu_target()
    return 0 if not meshes.startswith("NOT FOUND") else 1


def print_cpu_target() -> None:
    """The CPU, its instruction-set flags, and the target the warp engine's CPU kernels are built for."""
    from rocketrl.diagnostics.cpu_arithmetic import cpu_summary, kernel_target

    cpu = cpu_summary()
    print(f"cpu          {cpu['cpu']} (flags: {' '.join(cpu['flags']) or 'baseline x86-64'})")
    try:
        target = kernel_target()
    except Exception as error:  # warp missing or its LLVM backend unavailable: the RocketSim engine still works
        print(f"warp kernels unavailable ({error})")
        return
    if target["cpu_target"] == "native":
        sets = " ".join(str(s) for s in target.get("instruction_sets", []))
        print(f"warp         {target['warp']}, CPU kernels for this host ({target.get('llvm_host_cpu', '?')}): {sets}")
    else:
        print(f"warp         {target['warp']}, CPU kernels for {target['cpu_target']} (ROCKETRL_WARP_CPU_TARGET)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rocketrl", description="Train Rocket League bots with reinforcement learning, fast."
    )
    parser.add_argument("--version", action="version", version=f"rocketrl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    train = sub.add_parser(
        "train",
        help="train a bot with PPO",
        description="Train with PPO. Any config field can be overridden: --SECTION.FIELD VALUE, "
        "e.g. --ppo.learning-rate 3e-4 --env.num-arenas 64 --model.lstm true.",
    )
    train.add_argument("--config", default=None, help="YAML config (default: the packaged configs/base.yaml)")
    train.add_argument(
        "--preset",
        default=None,
        metavar="NAME",
        help="a packaged preset, configs/presets/NAME.yaml (docs/guide/presets.md), e.g. league_1v1",
    )
    train.add_argument("--timesteps", type=positive_int, default=None, help="agent-steps to train")
    train.add_argument("--device", choices=("auto", "cpu", "cuda"), default=None, help="auto takes CUDA when present")
    train.add_argument("--logdir", default=None, help="folder of run folders (default runs)")
    train.add_argument("--name", default=None, help="run folder name (default: date and time)")
    train.add_argument("--seed", type=int, default=None)
    train.add_argument("--resume", default=None, metavar="PATH|latest", help="continue from a checkpoint")
    train.add_argument(
        "--learners",
        type=positive_int,
        default=1,
        help="train L runs (seeds SEED..SEED+L-1) one after another and choose the bot among them by 32 full "
        "games each against RulePolicy (default 1); single runs of a preset spread, the best of two rarely does",
    )
    train.add_argument("--debug", action="store_true", help=f"a short run ({DEBUG_TIMESTEPS} steps) with checks")
    train.add_argument("--ascii", action="store_true", help="plain ASCII console output")
    train.add_argument(
        "--distributed",
        choices=("none", "ray"),
        default=None,
        help="ray: rollout workers on a Ray cluster (--ray.address local|auto|HOST:PORT, --ray.workers N, "
        '--ray.arenas-per-worker M); needs pip install "rocketrl[distributed]"',
    )
    train.set_defaults(func=cmd_train, takes_overrides=True)

    sim = sub.add_parser("sim", help="run batched arenas with random actions and print throughput")
    sim.add_argument("--arenas", type=positive_int, default=64, help="arenas side by side (default 64)")
    sim.add_argument("--team-size", type=team_size, default=(1, 1), help="BLUEvORANGE, e.g. 1v1, 2v2, 1v2")
    sim.add_argument("--steps", type=positive_int, default=300, help="environment steps (default 300)")
    sim.add_argument("--workers", type=positive_int, default=None, help="worker processes (default: CPU cores)")
    sim.add_argument(
        "--stepping",
        choices=get_args(SteppingSetting),
        default="processes",
        help="how arenas are stepped (default processes)",
    )
    sim.add_argument("--action", choices=("discrete", "continuous"), default="discrete")
    sim.add_argument("--device", default="cpu", help="device of the env tensors: cpu or cuda")
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--compile", action="store_true", help="fuse observations and rewards with torch.compile")
    sim.add_argument("--json", action="store_true", help="print one JSON summary instead of progress")
    sim.set_defaults(func=cmd_sim)

    info = sub.add_parser("info", help="show versions, devices and the collision meshes in use")
    info.set_defaults(func=cmd_info)

    from rocketrl.diagnostics import bench, diagnose, doctor  # diagnose, bench, doctor: parsers and commands
    from rocketrl.eval import cli as eval_cli  # eval: parser and command
    from rocketrl.eval import (
        climb_cli,  # climb: a line of runs from a parent, judged step by step
        judge_cli,  # judge: does a candidate replace its parent, by sets of games
        select_cli,  # select: the best checkpoint of several runs, by games
        stats_cli,  # stats: how each policy played, from replays
    )
    from rocketrl.export import cli as export_cli
    from rocketrl.policy import average_cli  # average: several bots in one network
    from rocketrl.render import cli as render_cli

    for module in (
        average_cli,
        eval_cli,
        judge_cli,
        climb_cli,
        select_cli,
        stats_cli,
        export_cli,
        render_cli,
        diagnose,
        bench,
        doctor,
    ):
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if extra and not getattr(args, "takes_overrides", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if getattr(args, "takes_overrides", False):
            return int(args.func(args, extra) or 0)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, RuntimeError) as error:
        print(f"rocketrl {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
