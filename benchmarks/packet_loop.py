"""Full games through the exported bot's packet path against the same checkpoint played directly.

Exports a checkpoint (default: the shipped bot) to a bot folder, then plays `--games` jittered 1v1 games of
`--seconds` in RocketSim in which the folder's own agent receives RLBot v5 GamePackets written the game's way and
its ControllerStates drive its car (rocketrl.export.packet_game), against RulePolicy; then the same number of games
of the checkpoint's policy played directly (rocketrl.league.match). Prints JSON: both win rates with their 95%
intervals, the gap, and on the states where the bot chose, how often the direct policy chose the same controls;
where they differ, why (through_packets.differences: what the bot read or the arithmetic, and how near a tie).

    python benchmarks/packet_loop.py [--checkpoint pretrained] [--games 100] [--seconds 120] [--drop 0.02]
                                     [--repeat 0.02] [--out FILE]

100 games of 120 s took 55 minutes on 2 cores shared with a training run (about 2.1M packets).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from rocketrl.export.bundle import export_rlbot
from rocketrl.export.packet_game import PacketGameConfig, PacketGames
from rocketrl.infra.bench_report import emit_report, machine_info
from rocketrl.league.match import MatchConfig, play_match
from rocketrl.policy.load import load_policy, policy_from_checkpoint, resolve_checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="pretrained", help="'pretrained' or a checkpoint path")
    parser.add_argument("--opponent", default="rule_policy", help="the opponent (load_policy spec)")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=120.0, help="game clock")
    parser.add_argument("--jitter", type=float, default=5.0, help="kickoff jitter, uu")
    parser.add_argument("--arenas", type=int, default=10, help="packet games played side by side")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--drop", type=float, default=0.02, help="chance a packet never reaches the bot")
    parser.add_argument("--repeat", type=float, default=0.02, help="chance a packet reaches the bot twice")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON report here")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)  # one agent's small forward passes: one thread is fastest and leaves a core free
    direct = policy_from_checkpoint(resolve_checkpoint(args.checkpoint), deterministic=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = export_rlbot(args.checkpoint, Path(tmp) / "bot")
        config = PacketGameConfig(
            num_games=args.games, game_seconds=args.seconds, kickoff_jitter=args.jitter,
            num_arenas=min(args.arenas, args.games), seed=args.seed, drop_probability=args.drop,
            repeat_probability=args.repeat,
        )  # fmt: skip
        packets = PacketGames(folder, load_policy(args.opponent), direct, config).play()
    match = MatchConfig.games(
        args.games, game_seconds=args.seconds, kickoff_jitter=args.jitter, seed=args.seed, stepping="serial"
    )
    result = play_match(direct, load_policy(args.opponent), match, "direct", args.opponent)
    rate, low, high = result.win_rate_interval()
    report = {
        "machine": machine_info(),
        "checkpoint": str(args.checkpoint),
        "opponent": args.opponent,
        "games": args.games,
        "game_seconds": args.seconds,
        "kickoff_jitter_uu": args.jitter,
        "drop_probability": args.drop,
        "repeat_probability": args.repeat,
        "through_packets": packets,
        "direct": {
            "games": result.num_games,
            "wins": result.wins,
            "draws": result.draws,
            "losses": result.losses,
            "goals_for": result.goals_for,
            "goals_against": result.goals_against,
            "win_rate": rate,
            "win_rate_low": low,
            "win_rate_high": high,
        },  # fmt: skip
        "win_rate_gap_points": round(100 * (packets["win_rate"] - rate), 1),
        "agreement": packets["agreement"],
    }
    emit_report(report, args.out)


if __name__ == "__main__":
    main()
