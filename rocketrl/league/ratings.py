"""Ratings of league players: Elo and OpenSkill, kept incrementally, saved as JSON.

Every player is known by name. One player, the anchor (by default `rule_policy` at Elo 1500), has a
fixed rating: a game against it moves only the opponent, so Elo numbers keep one meaning across
runs. Elo uses the usual logistic curve on a 400-point scale; OpenSkill uses the Plackett-Luce model
of the `openskill` library, and its conservative estimate is the ordinal mu - 3 sigma.

A score is from the first player's side: 1 win, 0.5 draw, 0 loss.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from openskill.models import PlackettLuce

from rocketrl.infra.atomic_json import write_json_atomic

DEFAULT_K = 32.0
"""Elo K-factor: the most one game can move a rating."""
DEFAULT_ANCHOR = "rule_policy"
DEFAULT_ANCHOR_ELO = 1500.0
FORMAT_VERSION = 1
"""Version of the dictionary written by `RatingTable.to_dict`."""

_VALID_SCORES = (0.0, 0.5, 1.0)


def expected_score(r_a: float, r_b: float) -> float:
    """Elo's expected score of a player rated r_a against one rated r_b, in (0, 1)."""
    return 1.0 / (1.0 + 10.0 ** ((r_b - r_a) / 400.0))


def elo_update(r_a: float, r_b: float, score_a: float, k: float = DEFAULT_K) -> tuple[float, float]:
    """New Elo ratings (a, b) after one game where a scored score_a (1 win, 0.5 draw, 0 loss)."""
    _check_score(score_a)
    delta = k * (score_a - expected_score(r_a, r_b))
    return r_a + delta, r_b - delta


def win_rate_interval(wins: int, draws: int, losses: int, z: float = 1.96) -> tuple[float, float, float]:
    """Win rate and its Wilson score interval: (rate, low, high).

    The rate counts a draw as half a win: rate = (wins + draws / 2) / games. The interval is the
    Wilson score interval for a binomial proportion at that rate over `games` trials; z = 1.96 gives
    about 95% coverage. Unlike the normal approximation it stays inside [0, 1] and behaves at rates
    of 0 or 1. With no games the rate is 0.5 and the interval (0, 1): nothing is known.
    """
    if min(wins, draws, losses) < 0:
        raise ValueError(f"counts must be non-negative, got wins={wins} draws={draws} losses={losses}")
    n = wins + draws + losses
    if n == 0:
        return 0.5, 0.0, 1.0
    p = (wins + 0.5 * draws) / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / denom
    return p, max(0.0, centre - half), min(1.0, centre + half)


def _check_score(score: float) -> None:
    if score not in _VALID_SCORES:
        raise ValueError(f"score={score!r}: must be 1 (win), 0.5 (draw) or 0 (loss)")


@dataclass
class PlayerRating:
    """One row of a RatingTable."""

    name: str
    elo: float
    mu: float
    """OpenSkill mean skill."""
    sigma: float
    """OpenSkill uncertainty (standard deviation of the skill)."""
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def ordinal(self) -> float:
        """OpenSkill's conservative skill estimate, mu - 3 sigma."""
        return self.mu - 3.0 * self.sigma


class RatingFileError(ValueError):
    """A ratings file that cannot be read: missing fields, wrong types, not JSON."""


class RatingTable:
    """Elo and OpenSkill ratings of named players, with one anchored player whose rating is fixed.

    The anchor is added on construction. Games involving it count in both players' W-D-L records
    but change only the other player's ratings.
    """

    def __init__(
        self, anchor: str | None = DEFAULT_ANCHOR, anchor_elo: float = DEFAULT_ANCHOR_ELO, k: float = DEFAULT_K
    ) -> None:
        self.anchor = anchor
        self.anchor_elo = float(anchor_elo)
        self.k = float(k)
        self.model = PlackettLuce()
        self.players: dict[str, PlayerRating] = {}
        if anchor is not None:
            self.add(anchor, self.anchor_elo)

    # ------------------------------------------------------------------------------ players
    def __contains__(self, name: object) -> bool:
        return name in self.players

    def __len__(self) -> int:
        return len(self.players)

    def __getitem__(self, name: str) -> PlayerRating:
        try:
            return self.players[name]
        except KeyError:
            raise KeyError(f"no player named {name!r} in the rating table") from None

    def add(self, name: str, elo: float | None = None) -> PlayerRating:
        """Add a player at Elo `elo` (default: the anchor's value) and OpenSkill's default rating.

        Adding a name that exists returns the existing player unchanged.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"player name must be a non-empty string, got {name!r}")
        if name in self.players:
            return self.players[name]
        if name == self.anchor:
            elo = self.anchor_elo
        start = self.model.rating()
        player = PlayerRating(
            name=name,
            elo=float(self.anchor_elo if elo is None else elo),
            mu=float(start.mu),
            sigma=float(start.sigma),
        )
        self.players[name] = player
        return player

    # ------------------------------------------------------------------------------ games
    def record(self, name_a: str, name_b: str, score_a: float) -> None:
        """Record one game of a against b (score_a: 1 win, 0.5 draw, 0 loss); unknown names are added."""
        _check_score(score_a)
        if name_a == name_b:
            raise ValueError(f"a player cannot play itself: {name_a!r}")
        a, b = self.add(name_a), self.add(name_b)

        new_a, new_b = elo_update(a.elo, b.elo, score_a, self.k)
        ranks = [0, 0] if score_a == 0.5 else ([0, 1] if score_a == 1.0 else [1, 0])
        (os_a,), (os_b,) = self.model.rate(
            [[self.model.rating(mu=a.mu, sigma=a.sigma)], [self.model.rating(mu=b.mu, sigma=b.sigma)]], ranks=ranks
        )
        if a.name != self.anchor:
            a.elo, a.mu, a.sigma = new_a, float(os_a.mu), float(os_a.sigma)
        if b.name != self.anchor:
            b.elo, b.mu, b.sigma = new_b, float(os_b.mu), float(os_b.sigma)

        a.games += 1
        b.games += 1
        if score_a == 1.0:
            a.wins += 1
            b.losses += 1
        elif score_a == 0.0:
            a.losses += 1
            b.wins += 1
        else:
            a.draws += 1
            b.draws += 1

    def record_many(self, name_a: str, name_b: str, wins: int, draws: int, losses: int) -> None:
        """Record a series of games from a's side, applied in a fixed interleaved order.

        The order is round-robin: a win, a draw, a loss, again, skipping outcomes already used up,
        so the same counts always give the same ratings.
        """
        if min(wins, draws, losses) < 0:
            raise ValueError(f"counts must be non-negative, got wins={wins} draws={draws} losses={losses}")
        remaining = {1.0: wins, 0.5: draws, 0.0: losses}
        while any(remaining.values()):
            for score in (1.0, 0.5, 0.0):
                if remaining[score]:
                    self.record(name_a, name_b, score)
                    remaining[score] -= 1

    # ------------------------------------------------------------------------------ queries
    def win_probability(self, name_a: str, name_b: str) -> float:
        """Elo's expected score of a against b (a draw counting as half a win)."""
        return expected_score(self[name_a].elo, self[name_b].elo)

    def ranking(self) -> list[PlayerRating]:
        """Players by Elo, highest first; ties broken by OpenSkill ordinal, then name."""
        return sorted(self.players.values(), key=lambda p: (-p.elo, -p.ordinal, p.name))

    # ------------------------------------------------------------------------------ files
    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dictionary of the whole table."""
        return {
            "format_version": FORMAT_VERSION,
            "anchor": self.anchor,
            "anchor_elo": self.anchor_elo,
            "k": self.k,
            "players": [asdict(p) for p in self.players.values()],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RatingTable:
        """The table `to_dict` wrote; raises RatingFileError when a field is missing or of the wrong type."""
        if not isinstance(data, dict):
            raise RatingFileError(f"expected a JSON object, got {type(data).__name__}")
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise RatingFileError(f"format_version={version!r}: this code reads version {FORMAT_VERSION}")
        try:
            anchor = data["anchor"]
            if anchor is not None and not isinstance(anchor, str):
                raise TypeError(f"anchor must be a string or null, got {anchor!r}")
            table = cls(anchor=None, anchor_elo=float(data["anchor_elo"]), k=float(data["k"]))
            table.anchor = anchor
            rows = data["players"]
            if not isinstance(rows, list):
                raise TypeError("players must be a list")
            for row in rows:
                player = PlayerRating(
                    name=str(row["name"]),
                    elo=float(row["elo"]),
                    mu=float(row["mu"]),
                    sigma=float(row["sigma"]),
                    games=int(row["games"]),
                    wins=int(row["wins"]),
                    draws=int(row["draws"]),
                    losses=int(row["losses"]),
                )
                if player.name in table.players:
                    raise ValueError(f"player {player.name!r} appears twice")
                table.players[player.name] = player
        except (KeyError, TypeError, ValueError) as err:
            detail = f"missing field {err}" if isinstance(err, KeyError) else str(err)
            raise RatingFileError(f"malformed rating table: {detail}") from err
        if anchor is not None and anchor not in table.players:
            table.add(anchor, table.anchor_elo)
        return table

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the table as JSON, atomically (see rocketrl.infra.atomic_json)."""
        write_json_atomic(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RatingTable:
        """Read a table `save` wrote; raises RatingFileError naming the file when it is malformed."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise RatingFileError(f"{path}: not a valid JSON rating table ({err})") from err
        try:
            return cls.from_dict(data)
        except RatingFileError as err:
            raise RatingFileError(f"{path}: {err}") from err


def format_ranking(table: RatingTable) -> str:
    """The ranking as a plain-text table: rank, name, Elo, OpenSkill ordinal, games, W-D-L.

    The anchored player is marked with '*'.
    """
    rows = table.ranking()
    header = ("#", "name", "Elo", "ordinal", "games", "W-D-L")
    lines = [
        (
            str(i),
            p.name + (" *" if p.name == table.anchor else ""),
            f"{p.elo:.0f}",
            f"{p.ordinal:.2f}",
            str(p.games),
            f"{p.wins}-{p.draws}-{p.losses}",
        )
        for i, p in enumerate(rows, start=1)
    ]
    widths = [max(len(r[j]) for r in [header, *lines]) for j in range(len(header))]
    left = {1}  # the name column is left-aligned, numbers right-aligned

    def fmt(row: tuple[str, ...]) -> str:
        return "  ".join(cell.ljust(w) if j in left else cell.rjust(w) for j, (cell, w) in enumerate(zip(row, widths)))

    out = [fmt(header), "  ".join("-" * w for w in widths)]
    out.extend(fmt(r) for r in lines)
    return "\n".join(line.rstrip() for line in out)
