"""RandomPolicy: uniform lookup-table actions, a baseline opponent for evaluation and tests."""

from __future__ import annotations

import torch

from rocketrl.env.actions import lookup_table


class RandomPolicy:
    """Picks one of the 90 lookup-table rows uniformly at random each step; seeded, stateless."""

    action_kind = "discrete"

    def __init__(self, seed: int = 0) -> None:
        self.generator = torch.Generator().manual_seed(seed)
        self.num_actions = lookup_table().shape[0]

    def initial_state(self, batch: int, device: torch.device | str) -> None:
        return None

    def act(self, obs: torch.Tensor, state: None = None) -> tuple[torch.Tensor, None]:
        """obs [N, obs_size] -> (indices [N] int64 on obs' device, None)."""
        action = torch.randint(0, self.num_actions, (obs.shape[0],), generator=self.generator)
        return action.to(obs.device), None
