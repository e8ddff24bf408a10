"""The shipping rule: does a candidate bot replace its parent? Decided over several independent sets of games.

A candidate replaces its parent (the bot it was trained from, or the shipped bot) when it won every set, more
wins than losses in each, and the pooled win rate's 95% Wilson interval (a draw as half a win) lies above even.
One set of 100 games is noisy (a bot level with its parent wins 40-60 of them); five sets of 100 from different
kickoff spawns tell a bot that is stronger from one that was lucky once. Every shipped bot since gauntlet_v9 was
judged by this rule (docs/results/learning.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketrl.league.ratings import win_rate_interval

if TYPE_CHECKING:
    from rocketrl.league.match import MatchResult  # torch and the env: not needed to judge counts

SET_SEEDS: tuple[int, ...] = (0, 7, 11, 13, 17)
"""Arena seeds of the five sets every shipped bot was judged by (`rocketrl eval --seed S`)."""


@dataclass(frozen=True)
class Verdict:
    """What the sets say: the pooled counts, the win rate and its interval (fractions), and whether it ships."""

    wins: int
    draws: int
    losses: int
    win_rate: float
    win_rate_low: float
    win_rate_high: float
    ships: bool
    reasons: tuple[str, ...]
    """Why it does not ship (empty when it ships): each lost or level set, an interval that reaches even."""

    @property
    def num_games(self) -> int:
        return self.wins + self.draws + self.losses

    def summary(self) -> str:
        pooled = (
            f"{self.wins}W {self.draws}D {self.losses}L of {self.num_games}, win rate {self.win_rate:.1%} "
            f"(95% CI {self.win_rate_low:.1%}-{self.win_rate_high:.1%})"
        )
        if self.ships:
            return f"{pooled}: ships (every set won, the interval above even)"
        return f"{pooled}: does not ship ({'; '.join(self.reasons)})"

    def to_dict(self) -> dict:
        return {
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "num_games": self.num_games,
            "win_rate": self.win_rate,
            "win_rate_low": self.win_rate_low,
            "win_rate_high": self.win_rate_high,
            "ships": self.ships,
            "reasons": list(self.reasons),
        }


def judge_sets(sets: Sequence[MatchResult], seeds: Sequence[int] | None = None) -> Verdict:
    """The verdict of the shipping rule over `sets`, each one candidate-vs-parent match (the candidate is side A).

    `seeds` (one per set) only names the sets in the reasons. No sets is refused: nothing is known."""
    if not sets:
        raise ValueError("judge_sets: no sets of games to judge")
    names = [f"seed {s}" for s in seeds] if seeds is not None else [f"set {i + 1}" for i in range(len(sets))]
    if len(names) != len(sets):
        raise ValueError(f"judge_sets: {len(seeds or ())} seeds for {len(sets)} sets; give one seed per set")
    reasons = [
        f"{name} {'level' if r.wins == r.losses else 'lost'}: {r.wins}W {r.draws}D {r.losses}L"
        for name, r in zip(names, sets, strict=True)
        if r.wins <= r.losses
    ]
    wins, draws, losses = (sum(getattr(r, k) for r in sets) for k in ("wins", "draws", "losses"))
    rate, low, high = win_rate_interval(wins, draws, losses)
    if low <= 0.5:
        reasons.append(f"the pooled interval's low end {low:.1%} is not above even")
    return Verdict(wins, draws, losses, rate, low, high, ships=not reasons, reasons=tuple(reasons))
