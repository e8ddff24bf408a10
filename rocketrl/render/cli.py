"""`rocketrl render` (a replay file -> MP4, GIF or PNG frames) and `rocketrl watch` (play a game, render it).

rocketrl render REPLAY [--out game.mp4|game.gif|frames/] [--fps 30] [--speed 1] [--view top|side|both]
rocketrl watch --checkpoint PATH|pretrained [--opponent rule_policy|random|shadow_goalie|ball_chaser|rotation|PATH]
    [--team-size 1v1] [--seconds 60] [--seed N] [--games N] [--sample] --out game.mp4 [--live]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from rocketrl.cli_args import opposed_team_size, positive_int, warn_team_size


def _video_args(p: argparse.ArgumentParser, default_out: str | None) -> None:
    p.add_argument("--out", default=default_out, help="a .mp4 or .gif file, or a folder ending in / for PNG frames")
    p.add_argument("--fps", type=float, default=30.0, help="frames per second of video (default 30)")
    p.add_argument("--speed", type=float, default=1.0, help="game seconds per video second (default 1)")
    p.add_argument("--view", choices=("top", "side", "both"), default="top", help="top, side or both (default top)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    render = sub.add_parser(
        "render",
        help="draw a replay file to an MP4, a GIF or PNG frames",
        description="Draw a replay (rocketrl/league/replay.py) without a display or GPU: the field to scale, "
        "boost pads, cars in team colours with their boost, the ball with its height, score, clock, and marks "
        "on goals, touches and demolitions.",
    )
    render.add_argument("replay", help="a replay file (.safetensors) from rocketrl eval --replays or training")
    _video_args(render, None)
    render.set_defaults(func=cmd_render)

    watch = sub.add_parser(
        "watch",
        help="play a checkpoint in a game and render it (or stream it to RLViser with --live)",
        description="Play full games of a bot against an opponent and render each to a video.",
    )
    watch.add_argument(
        "--checkpoint",
        required=True,
        help="a checkpoint path, a run folder (its last checkpoint), 'pretrained' (the shipped 1v1 bot) or "
        "'pretrained_team' (the team bot)",
    )
    watch.add_argument(
        "--opponent",
        default="rule_policy",
        help="rule_policy, random, shadow_goalie, ball_chaser, rotation or a checkpoint",
    )
    watch.add_argument("--team-size", type=opposed_team_size, default=(1, 1), help="1, 2, 3 or BLUEvORANGE (1v1)")
    watch.add_argument("--seconds", type=float, default=60.0, help="game clock in seconds (default 60)")
    watch.add_argument("--no-overtime", action="store_true", help="a level game at the end of the clock is a draw")
    watch.add_argument("--games", type=positive_int, default=1, help="games to play (default 1); the bot swaps sides")
    watch.add_argument("--seed", type=int, default=0)
    watch.add_argument("--kickoff-jitter", type=float, default=5.0, help="move kickoff spawns by up to UU (default 5)")
    watch.add_argument("--sample", action="store_true", help="sample the bot's actions (default: its greedy play)")
    watch.add_argument("--live", action="store_true", help="stream the game to RLViser instead of writing a video")
    watch.add_argument("--keep-replays", default=None, metavar="DIR", help="also keep the games' replay files here")
    _video_args(watch, "watch.mp4")
    watch.set_defaults(func=cmd_watch)


def _check_video_args(args: argparse.Namespace) -> str | None:
    """An error message for bad --out, --fps or --speed values, or None."""
    from rocketrl.render.video import output_kind

    if args.fps <= 0 or args.speed <= 0:
        return "--fps and --speed must be positive"
    try:
        output_kind(args.out)
    except ValueError as err:
        return str(err)
    return None


def render_replay(replay_path: str | Path, out: str | Path, fps: float, speed: float, view: str) -> tuple[Path, int]:
    """Render one replay file; returns the output path and the number of frames written."""
    from rocketrl.league.replay import load_replay
    from rocketrl.render.frames import render_frames
    from rocketrl.render.video import write_frames

    replay = load_replay(replay_path)
    return write_frames(render_frames(replay, view, fps, speed), out, fps)


def cmd_render(args: argparse.Namespace) -> int:
    from rocketrl.render.video import RenderDependencyError, check_dependencies

    if args.out is None:
        args.out = str(Path(args.replay).with_suffix(".mp4"))
    problem = _check_video_args(args)
    if problem:
        raise ValueError(problem)
    try:
        check_dependencies()
    except RenderDependencyError as err:  # rocketrl's main reports ValueError and RuntimeError, not ImportError
        raise RuntimeError(str(err)) from err
    started = time.perf_counter()
    path, frames = render_replay(args.replay, args.out, args.fps, args.speed, args.view)
    seconds = time.perf_counter() - started
    print(f"{frames} frames ({frames / args.fps:.1f} s of video) written to {path} in {seconds:.1f} s")
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    import torch

    from rocketrl.league.match import MatchConfig, play_match
    from rocketrl.policy.load import load_policy, policy_name
    from rocketrl.render.video import RenderDependencyError, check_dependencies

    rlviser = None
    if args.live:
        from rocketrl.render.live import load_rlviser

        try:
            rlviser = load_rlviser()
        except ImportError as err:  # rocketrl's main reports ValueError and RuntimeError, not ImportError
            raise RuntimeError(str(err)) from err
    else:
        problem = _check_video_args(args)
        if problem:
            raise ValueError(problem)
        try:
            check_dependencies()
        except RenderDependencyError as err:
            raise RuntimeError(str(err)) from err
    torch.set_num_threads(1)
    warn_team_size([args.checkpoint, args.opponent], *args.team_size)
    bot = load_policy(args.checkpoint, deterministic=not args.sample, seed=args.seed)
    opponent = load_policy(args.opponent, seed=args.seed)
    names = (policy_name(args.checkpoint), policy_name(args.opponent))
    replay_dir = Path(args.keep_replays) if args.keep_replays else Path(tempfile.mkdtemp(prefix="rocketrl-watch-"))
    blue, orange = args.team_size
    config = MatchConfig.games(
        num_games=args.games,
        blue_size=blue,
        orange_size=orange,
        game_seconds=args.seconds,
        overtime=not args.no_overtime,
        num_arenas=1 if args.live else min(args.games, 8),
        seed=args.seed,
        kickoff_jitter=args.kickoff_jitter,
        stepping="serial" if args.live else "processes",
        num_workers=1 if args.live else None,
        replay_games=() if args.live else "all",
        replay_dir=None if args.live else str(replay_dir),
    )
    try:
        if rlviser is not None:
            from rocketrl.render.live import LiveStream

            stream = LiveStream(rlviser, config.tick_skip, args.speed)
            try:
                result = play_match(bot, opponent, config, *names, on_step=stream)
            finally:
                stream.close()
            print(result.summary())
            return 0
        result = play_match(bot, opponent, config, *names)
        print(result.summary())
        outputs = _outputs(args.out, args.games)
        for game, out in zip(sorted(result.games, key=lambda g: g.index), outputs):
            side = "blue" if game.a_team == 0 else "orange"
            replay = replay_dir / f"game_{game.index:04d}.safetensors"
            path, frames = render_replay(replay, out, args.fps, args.speed, args.view)
            print(
                f"game {game.index}: {names[0]} ({side}) {game.goals_a}-{game.goals_b} {names[1]}, "
                f"{game.seconds:.0f} s of game -> {path} ({frames} frames)"
            )
    finally:
        if not args.keep_replays:
            shutil.rmtree(replay_dir, ignore_errors=True)
    return 0


def _outputs(out: str, games: int) -> list[str]:
    """One output per game: `out` itself for one game, else out with _0000, _0001, ... before its suffix."""
    if games == 1:
        return [out]
    if out.endswith("/"):
        return [f"{out}game_{i:04d}/" for i in range(games)]
    path = Path(out)
    return [str(path.with_name(f"{path.stem}_{i:04d}{path.suffix}")) for i in range(games)]
