"""The shipping rule: does a candidate bot replace its parent? Decided over several independent sets of games.

Two rules, each chosen before the games are played (`rocketrl judge --rule`):

- every-set (the default; every shipped bot from gauntlet_v9 to gauntlet_v16): the candidate won every set, more
  wins than losses in each, and the pooled win rate's 95% Wilson interval (a draw as half a win) lies above even.
- pooled (gauntlet_v17 on): at least `POOLED_MIN_GAMES` games, the pooled interval above even, and the
  candidate at least level with its parent against a field of other bots on the same games (the difference in
  points per game not below zero).
  A bot at a true 56% against its parent passes the every-set rule on five sets of 100 about 47 times in 100 (64
  with the one re-judging allowed after a single lost set) and the pooled rule on 1,000 games 97 times in 100; a
  bot level with its parent passes them against the parent about 1 and 3 times in 100, the pooled rule then asks
  the field too (`pass_chance`; docs/results/generations.md, "Which rule ships").

One set of 100 games is noisy (a bot level with its parent wins 40-60 of them); sets from different kickoff spawns
tell a bot that is stronger from one that was lucky once.

Beating the parent is not the same as being stronger: self-play can learn to exploit the one bot it started from
(gauntlet_v10 to gauntlet_v14 each beat their parent in about 59 of 100 games, yet all score about 0.6 against
gauntlet_v9). So a candidate can also be compared with its parent against a field of other bots, on the same
games: under either rule it is refused when it is clearly weaker there (the 95% interval of the difference in
points per game lies below zero); the pooled rule, which does not ask every set, asks the field (and that the
candidate is not behind its parent there).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from rocketrl.league.ratings import win_rate_interval

if TYPE_CHECKING:
    from rocketrl.league.match import MatchResult  # torch and the env: not needed to judge counts

SET_SEEDS: tuple[int, ...] = (0, 7, 11, 13, 17)
"""Arena seeds of the five sets every shipped bot was judged by (`rocketrl eval --seed S`)."""

RULES: tuple[str, ...] = ("every-set", "pooled")
"""The shipping rules `judge_sets` knows (module docstring)."""

POOLED_MIN_GAMES = 1000
"""Games against the parent the pooled rule needs: at 1,000 the 95% interval is about +-3 points wide."""


SCRIPTED_FLOOR: dict[str, float] = {"rule_policy": 0.97, "shadow_goalie": 0.90, "ball_chaser": 0.90}
"""`--floor scripted`: the share of games a candidate must win against each scripted bot (the shipped bot's
targets: 97 of 100 against RulePolicy, 90 against each scripted style)."""


@dataclass(frozen=True)
class FloorResult:
    """The candidate's games against one floor bot and the share of them it must win (a draw is not a win)."""

    opponent: str
    wins: int
    draws: int
    losses: int
    required: float
    """Fraction of the games, in (0, 1]."""

    @property
    def num_games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def met(self) -> bool:
        """At least `required` of the games won (97% of 100 games: 97 wins)."""
        return self.num_games > 0 and self.wins >= math.ceil(self.required * self.num_games - 1e-9)

    def summary(self) -> str:
        state = "met" if self.met else "not met"
        return f"{self.opponent}: won {self.wins} of {self.num_games}, floor {self.required:.0%} {state}"

    def to_dict(self) -> dict:
        """Every field, and the two it derives (`num_games`, `met`)."""
        return asdict(self) | {"num_games": self.num_games, "met": self.met}


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
    rule: str = "every-set"
    """Which of `RULES` decided."""
    floor: tuple[str, ...] = ()
    """The bots the candidate was held to a floor against (`judge_sets(floor=...)`), met or not."""

    @property
    def num_games(self) -> int:
        return self.wins + self.draws + self.losses

    def summary(self) -> str:
        pooled = (
            f"{self.wins}W {self.draws}D {self.losses}L of {self.num_games}, win rate {self.win_rate:.1%} "
            f"(95% CI {self.win_rate_low:.1%}-{self.win_rate_high:.1%})"
        )
        floor = f", the floor met against {', '.join(self.floor)}" if self.floor else ""
        if self.ships and self.rule == "pooled":
            return f"{pooled}: ships (pooled rule: the interval above even, not behind the parent on the field{floor})"
        if self.ships:
            return f"{pooled}: ships (every set won, the interval above even{floor})"
        return f"{pooled}: does not ship ({'; '.join(self.reasons)})"

    def to_dict(self) -> dict:
        """Every field (tuples as lists, for JSON), and `num_games`."""
        return asdict(self) | {
            "num_games": self.num_games,
            "reasons": list(self.reasons),
            "floor": list(self.floor),
        }


@dataclass(frozen=True)
class FieldComparison:
    """The candidate and its parent against the same field bots on the same games: points per game (a draw as half)
    of each, and the candidate's minus the parent's with its 95% interval (two independent proportions)."""

    opponents: tuple[str, ...]
    games: int
    """Games each of the two played against the field, all opponents together."""
    candidate_rate: float
    parent_rate: float
    difference: float
    difference_low: float
    difference_high: float

    @property
    def clearly_weaker(self) -> bool:
        """The whole interval of the difference lies below zero."""
        return self.difference_high < 0.0

    def summary(self) -> str:
        return (
            f"against {', '.join(self.opponents)} ({self.games} games each): candidate {self.candidate_rate:.1%}, "
            f"parent {self.parent_rate:.1%}, difference {self.difference:+.1%} "
            f"(95% CI {self.difference_low:+.1%} to {self.difference_high:+.1%})"
        )

    def to_dict(self) -> dict:
        return {
            "opponents": list(self.opponents),
            "games": self.games,
            "candidate_rate": self.candidate_rate,
            "parent_rate": self.parent_rate,
            "difference": self.difference,
            "difference_low": self.difference_low,
            "difference_high": self.difference_high,
            "clearly_weaker": self.clearly_weaker,
        }


def pass_chance(true_rate: float, rule: str = "every-set", num_sets: int = 5, games_per_set: int = 100) -> float:
    """The chance that a candidate passes `rule` against its parent over `num_sets` sets of `games_per_set` games
    when it wins each game with probability `true_rate` (games independent, no draws), the field left out.

    Exact: the binomial of each set, convolved over the sets; for the every-set rule each set must be won (more wins
    than losses) and the pooled Wilson interval must lie above even, for the pooled rule the interval alone (and at
    least `POOLED_MIN_GAMES` games, else 0)."""
    if rule not in RULES:
        raise ValueError(f"pass_chance: rule {rule!r} is not one of {', '.join(RULES)}")
    if not 0.0 <= true_rate <= 1.0:
        raise ValueError(f"pass_chance: true_rate {true_rate} is not a probability")
    n = games_per_set
    one_set = [math.comb(n, k) * true_rate**k * (1.0 - true_rate) ** (n - k) for k in range(n + 1)]
    if rule == "every-set":
        one_set = [chance if 2 * k > n else 0.0 for k, chance in enumerate(one_set)]
    elif num_sets * n < POOLED_MIN_GAMES:
        return 0.0
    totals = [1.0]
    for _ in range(num_sets):  # the distribution of the pooled wins, one set at a time
        merged = [0.0] * (len(totals) + n)
        for total, chance in enumerate(totals):
            if chance:
                for k, set_chance in enumerate(one_set):
                    merged[total + k] += chance * set_chance
        totals = merged
    games = num_sets * n
    return sum(c for wins, c in enumerate(totals) if win_rate_interval(wins, 0, games - wins)[1] > 0.5)


def compare_field(candidate: Sequence[MatchResult], parent: Sequence[MatchResult], z: float = 1.96) -> FieldComparison:
    """The candidate's results against field bots (`candidate`, side A the candidate) beside the parent's against the
    same bots (`parent`, in the same order, side A the parent); a bot may appear once per seed of the field's games.
    Refuses results that do not pair up by opponent."""
    met = tuple(r.name_b for r in candidate)
    if not met or met != tuple(r.name_b for r in parent):
        raise ValueError(f"compare_field: the candidate met {met}, the parent {tuple(r.name_b for r in parent)}")
    opponents = tuple(dict.fromkeys(met))

    def points(results: Sequence[MatchResult]) -> tuple[float, int]:
        games = sum(r.wins + r.draws + r.losses for r in results)
        return sum(r.wins + 0.5 * r.draws for r in results) / max(games, 1), games

    (p_candidate, n_candidate), (p_parent, n_parent) = points(candidate), points(parent)
    if n_candidate != n_parent:
        raise ValueError(f"compare_field: {n_candidate} games of the candidate, {n_parent} of the parent")
    spread = z * math.sqrt((p_candidate * (1 - p_candidate) + p_parent * (1 - p_parent)) / max(n_candidate, 1))
    difference = p_candidate - p_parent
    return FieldComparison(
        opponents, n_candidate, p_candidate, p_parent, difference, difference - spread, difference + spread
    )


def judge_sets(
    sets: Sequence[MatchResult],
    seeds: Sequence[int] | None = None,
    field: FieldComparison | None = None,
    rule: str = "every-set",
    floor: Sequence[FloorResult] = (),
) -> Verdict:
    """The verdict of `rule` (one of `RULES`) over `sets`, each one candidate-vs-parent match (the candidate is
    side A), and, with `field`, the candidate not clearly weaker than its parent against other bots (the pooled
    rule needs `field` and the candidate not behind there); every `floor` result must be met under either rule.

    `seeds` (one per set) only names the sets in the reasons. No sets, or an unknown rule, is refused."""
    if rule not in RULES:
        raise ValueError(f"judge_sets: rule {rule!r} is not one of {', '.join(RULES)}")
    if not sets:
        raise ValueError("judge_sets: no sets of games to judge")
    names = [f"seed {s}" for s in seeds] if seeds is not None else [f"set {i + 1}" for i in range(len(sets))]
    if len(names) != len(sets):
        raise ValueError(f"judge_sets: {len(seeds or ())} seeds for {len(sets)} sets; give one seed per set")
    reasons = []
    if rule == "every-set":
        reasons = [
            f"{name} {'level' if r.wins == r.losses else 'lost'}: {r.wins}W {r.draws}D {r.losses}L"
            for name, r in zip(names, sets, strict=True)
            if r.wins <= r.losses
        ]
    wins, draws, losses = (sum(getattr(r, k) for r in sets) for k in ("wins", "draws", "losses"))
    if rule == "pooled" and wins + draws + losses < POOLED_MIN_GAMES:
        reasons.append(
            f"the pooled rule needs {POOLED_MIN_GAMES} games against the parent, {wins + draws + losses} were played"
        )
    rate, low, high = win_rate_interval(wins, draws, losses)
    if low <= 0.5:
        reasons.append(f"the pooled interval's low end {low:.1%} is not above even")
    if field is not None and field.clearly_weaker:
        reasons.append(
            f"against the field it scored {field.candidate_rate:.1%} to the parent's {field.parent_rate:.1%} "
            f"(difference {field.difference_low:+.1%} to {field.difference_high:+.1%}: below zero)"
        )
    elif rule == "pooled" and field is None:
        reasons.append("the pooled rule needs the field (--field): it does not ask every set, so it asks that")
    elif rule == "pooled" and field.difference < 0.0:
        reasons.append(
            f"against the field it scored {field.candidate_rate:.1%} to the parent's {field.parent_rate:.1%}: "
            f"behind it ({field.difference:+.1%})"
        )
    reasons += [
        f"against {f.opponent} it won {f.wins} of {f.num_games}, under the floor of {f.required:.0%}"
        for f in floor
        if not f.met
    ]
    bots = tuple(f.opponent for f in floor)
    return Verdict(wins, draws, losses, rate, low, high, not reasons, tuple(reasons), rule=rule, floor=bots)
