"""Choosing the bot: candidate checkpoints of one or several runs play the same games; the most points wins.

A run's candidates are its latest checkpoint and the best others by the score its training gave them (the
in-training evaluations' win rate for the vs_rule presets). Every candidate of every run plays the same
full games against one opponent; the most points (wins + draws / 2) wins, ties to the higher step, then
to the earlier run. Training several seeds and keeping the best of them is the surest way to a strong bot
when single runs spread (docs/learn_vs_rule_runs.jsonl): `rocketrl select RUN_DIR [RUN_DIR ...]`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from rocketrl.infra.checkpoint import CheckpointManager, read_meta
from rocketrl.league.match import MatchConfig, play_match


@dataclass
class Candidate:
    """One checkpoint that may become the bot, and how it played the selection games."""

    checkpoint: Path
    step: int | None
    score: float | None
    score_by: str
    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def points(self) -> float:
        return self.wins + 0.5 * self.draws

    def row(self) -> dict:
        """The candidate as one JSON-ready row of the selection table."""
        return {
            "checkpoint": str(self.checkpoint),
            "step": self.step,
            "score": self.score,
            "score_by": self.score_by,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "points": self.points,
        }


def checkpoint_folder(run: str | Path) -> Path:
    """The checkpoint folder of a run folder (RUN/checkpoints) or a checkpoint folder itself.

    Raises FileNotFoundError naming the path when it holds no readable checkpoint."""
    path = Path(run)
    folder = path / "checkpoints" if (path / "checkpoints").is_dir() else path
    if not folder.is_dir() or CheckpointManager(folder).latest() is None:
        raise FileNotFoundError(
            f"{run}: no checkpoints (step_*.safetensors) here or in its checkpoints/ folder; give a run folder "
            "that `rocketrl train` wrote"
        )
    return folder


def run_candidates(run: str | Path, count: int) -> list[Candidate]:
    """The latest checkpoint of a run and its `count` - 1 best others by score, sorted by step."""
    if count < 1:
        raise ValueError(f"count={count}: at least 1 candidate per run")
    paths = CheckpointManager(checkpoint_folder(run)).list()  # readable ones only: a torn file is skipped, said
    kept = sorted(((path, read_meta(path)) for path in paths), key=lambda entry: entry[1].get("step") or 0)
    latest, others = kept[-1], kept[:-1]
    scored = sorted(
        (entry for entry in others if entry[1].get("score") is not None),
        key=lambda entry: (entry[1]["score"], entry[1].get("step") or 0),
        reverse=True,
    )
    chosen = sorted([latest, *scored[: count - 1]], key=lambda entry: entry[1].get("step") or 0)
    return [
        Candidate(path, meta.get("step"), meta.get("score"), meta.get("score_by", "return")) for path, meta in chosen
    ]


def select_bot(
    runs: list[str | Path],
    opponent,
    match: MatchConfig,
    candidates_per_run: int = 4,
    deterministic: bool = True,
    device: str | torch.device = "cpu",
    log=print,
) -> tuple[list[Candidate], Candidate]:
    """Every candidate of `runs` (run_candidates) plays `match` against `opponent` (a policy, or a list of them,
    such as the gauntlet: `match` against each); (all candidates, the best).

    The best has the most points over all its games; ties go to the higher step, then to the earlier run."""
    from rocketrl.policy.load import policy_from_checkpoint

    if not runs:
        raise ValueError("select_bot: give at least one run")
    opponents = opponent if isinstance(opponent, list | tuple) else [opponent]
    table: list[Candidate] = []
    for run in runs:
        for candidate in run_candidates(run, candidates_per_run):
            policy = policy_from_checkpoint(candidate.checkpoint, device=device, deterministic=deterministic)
            for each in opponents:
                result = play_match(policy, each, match, "learner", "opponent", device=device)
                candidate.wins += result.wins
                candidate.draws += result.draws
                candidate.losses += result.losses
            table.append(candidate)
            log(f"select: {candidate.checkpoint}: {candidate.wins}-{candidate.draws}-{candidate.losses}")
    _, best = max(enumerate(table), key=lambda entry: (entry[1].points, entry[1].step or 0, -entry[0]))
    return table, best


def jittered_games(
    num_games: int,
    seed: int,
    blue_size: int = 1,
    orange_size: int = 1,
    kickoff_jitter: float = 5.0,
    game_seconds: float = 300.0,
) -> MatchConfig:
    """Full games on arena seeds `seed`, each car's spawn moved by up to `kickoff_jitter` uu (independent trials
    for a greedy bot), in up to 50 arenas side by side: the games that choose and measure a bot."""
    return MatchConfig.games(
        num_games=num_games,
        game_seconds=game_seconds,
        num_arenas=min(num_games, 50),
        blue_size=blue_size,
        orange_size=orange_size,
        seed=seed,
        kickoff_jitter=kickoff_jitter,
    )


def format_selection(table: list[Candidate], best: Candidate, games: int) -> str:
    """The selection table as console lines: points of `games`, the checkpoint, and the chosen one marked."""
    return "\n".join(
        f"{candidate.points:5.1f} of {games}  {candidate.checkpoint}{'  <- chosen' if candidate is best else ''}"
        for candidate in table
    )
