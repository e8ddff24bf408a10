"""ArenaPlan: which cars the learner drives and which its opponents drive, for one team-size stage.

Arenas are split by the opponent shares (largest remainder), contiguous per kind in the order
selfplay, checkpoint, rule, rotation. In selfplay arenas the learner drives every car; in the others it
drives blue in even arenas and orange in odd ones, so it plays each side equally often, and the
opponent drives the other team. Checkpoint arenas are split into `groups` slots, each of which
meets its own snapshot during a rollout. Cars are flattened arena-major: agent = arena * C + car.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rocketrl.league.config import OPPONENT_KINDS
from rocketrl.policy.base import PolicyDriver


@dataclass
class OpponentSlot:
    """Agents of one opponent during a rollout."""

    kind: str
    """'checkpoint', 'rule' or 'rotation'."""
    arenas: torch.Tensor
    """(K,) arena indices."""
    agents: torch.Tensor
    """(M,) flat agent indices the opponent drives."""
    name: str = ""
    """Name of the policy assigned for the current rollout."""
    driver: PolicyDriver | None = None


def allocate_arenas(num_arenas: int, shares: dict[str, float]) -> dict[str, int]:
    """Arenas per opponent kind in proportion to `shares` (largest remainder; sums to num_arenas). Every kind
    but rotation has an entry; rotation only when `shares` names it."""
    kinds = [k for k in OPPONENT_KINDS if k != "rotation" or k in shares]
    total = sum(shares.get(k, 0.0) for k in kinds)
    exact = {k: num_arenas * shares.get(k, 0.0) / total for k in kinds}
    counts = {k: int(v) for k, v in exact.items()}
    left = num_arenas - sum(counts.values())
    for k in sorted(kinds, key=lambda k: (counts[k] - exact[k], OPPONENT_KINDS.index(k)))[:left]:
        counts[k] += 1
    return counts


class ArenaPlan:
    """Learner and opponent agents of A arenas of blue_size v orange_size cars."""

    def __init__(
        self,
        num_arenas: int,
        blue_size: int,
        orange_size: int,
        opponents: dict[str, float],
        groups: int = 1,
        device: torch.device | str = "cpu",
    ) -> None:
        if orange_size == 0 and any(v > 0 for k, v in opponents.items() if k != "selfplay"):
            raise ValueError("opponents other than selfplay need cars on both teams; orange_size is 0")
        self.num_arenas, self.num_cars = num_arenas, blue_size + orange_size
        self.blue_size, self.orange_size = blue_size, orange_size
        self.counts = allocate_arenas(num_arenas, opponents)
        n = self.num_cars
        kinds: list[str] = []
        for kind in OPPONENT_KINDS:
            kinds += [kind] * self.counts.get(kind, 0)
        self.arena_kind = kinds
        arena = torch.arange(num_arenas)
        selfplay = torch.tensor([k == "selfplay" for k in kinds])
        car_team = torch.tensor([0] * blue_size + [1] * orange_size)
        self.learner_team = torch.where(selfplay, -1, arena % 2)
        """(A,) -1: the learner drives both teams; 0: blue; 1: orange."""
        mask = selfplay.view(-1, 1) | (car_team.view(1, -1) == self.learner_team.view(-1, 1))
        self.learner_mask = mask.to(device)
        """(A, C) bool: cars the learner drives."""
        self.learner_index = torch.nonzero(mask.reshape(-1)).flatten().to(device)
        """(B,) flat agent indices of the learner, B = number of learner agents."""
        self.learner_arena = (self.learner_index // n).to(device)
        """(B,) arena of each learner agent."""
        self.pure_selfplay = bool(selfplay.all())
        self.slots: list[OpponentSlot] = []
        for kind, pieces in (("checkpoint", groups), ("rule", 1), ("rotation", 1)):
            arenas = torch.tensor([i for i, k in enumerate(kinds) if k == kind], dtype=torch.long)
            for part in torch.tensor_split(arenas, min(pieces, max(1, len(arenas)))):
                if len(part) == 0:
                    continue
                agents = torch.nonzero(~mask[part].reshape(-1)).flatten()
                flat = (part.view(-1, 1) * n + torch.arange(n).view(1, -1)).reshape(-1)[agents]
                self.slots.append(OpponentSlot(kind, part.to(device), flat.to(device)))

    @property
    def num_learners(self) -> int:
        return int(self.learner_index.numel())

    def learner_outcomes(self, episodes: dict[str, torch.Tensor]) -> list[tuple[int, float]]:
        """(arena, score) of finished episodes in opponent arenas: 1 the learner's team scored more,
        0.5 level, 0 fewer."""
        outcomes = []
        if not episodes:
            return outcomes
        arenas = episodes["arena"].tolist()
        blue, orange = episodes["goals_blue"].tolist(), episodes["goals_orange"].tolist()
        for i, arena in enumerate(arenas):
            team = int(self.learner_team[arena])
            if team < 0:
                continue
            mine, theirs = (blue[i], orange[i]) if team == 0 else (orange[i], blue[i])
            outcomes.append((arena, 1.0 if mine > theirs else 0.0 if mine < theirs else 0.5))
        return outcomes
