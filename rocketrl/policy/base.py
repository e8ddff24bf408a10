"""The policy contract: anything with `act(obs, state) -> (action, state)`.

The learner, its past snapshots, the scripted RulePolicy and a loaded checkpoint all fit, so
evaluation and self-play treat them alike. A policy acts on flat observations [N, obs_size]
(every agent sees the field from the blue side, so one policy plays either team) and says what
its actions are through `action_kind`:

    'discrete'    indices [N] into the 90-row lookup table
    'continuous'  [N, 8] values parsed like a continuous Box(8) (analog clipped, buttons > 0)
    'controls'    [N, 8] car controls ready for the engine

Recurrent state is None (stateless) or an LSTM tuple (h, c) of two [1, N, H] tensors; the helpers
below select, scatter and reset it along the agent axis for any of these.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

import torch

from rocketrl.env.actions import ContinuousAction, LookupTableAction

ActionKind = Literal["discrete", "continuous", "controls"]
PolicyState = tuple[torch.Tensor, torch.Tensor] | None


@runtime_checkable
class Policy(Protocol):
    """What evaluation and self-play need of a policy."""

    action_kind: ActionKind

    def initial_state(self, batch: int, device: torch.device | str) -> PolicyState:
        """The state of `batch` agents at an episode start."""
        ...

    def act(self, obs: torch.Tensor, state: PolicyState) -> tuple[torch.Tensor, PolicyState]:
        """obs [N, obs_size] -> (actions [N] or [N, 8], next state)."""
        ...


def reset_agents(state: PolicyState, episode_start: torch.Tensor) -> PolicyState:
    """Zero the state of agents whose episode starts (episode_start [N] bool)."""
    if state is None:
        return None
    keep = (~episode_start).to(state[0].dtype).view(1, -1, 1)
    return state[0] * keep, state[1] * keep


def select_agents(state: PolicyState, index: torch.Tensor) -> PolicyState:
    """The state of the agents at `index` [K] (a new tensor, [1, K, H] each)."""
    if state is None:
        return None
    return state[0][:, index], state[1][:, index]


def scatter_agents(state: PolicyState, index: torch.Tensor, part: PolicyState) -> PolicyState:
    """`state` with the agents at `index` [K] replaced by `part` ([1, K, H] each)."""
    if state is None or part is None:
        return state
    h, c = state[0].clone(), state[1].clone()
    h[:, index] = part[0].to(h.dtype)
    c[:, index] = part[1].to(c.dtype)
    return h, c


_TABLE: dict[torch.device, LookupTableAction] = {}


def to_controls(kind: ActionKind, action: torch.Tensor) -> torch.Tensor:
    """A policy's actions [N] or [N, 8] -> car controls [N, 8] (float32, on the action's device)."""
    if kind == "discrete":
        parser = _TABLE.get(action.device)
        if parser is None:  # built once per device (the table is 90 rows made in Python)
            parser = _TABLE[action.device] = LookupTableAction(action.device)
        return parser.table[action.long()]
    if kind == "continuous":
        return ContinuousAction().parse(action.view(1, -1, 8), 1, action.shape[0], validate=False).view(-1, 8)
    if kind == "controls":
        return action.float()
    raise ValueError(f"action_kind={kind!r}: expected 'discrete', 'continuous' or 'controls'")


class PolicyDriver:
    """Runs one policy for a fixed set of N agents: keeps their recurrent state, returns controls."""

    def __init__(self, policy: Policy, num_agents: int, device: torch.device | str) -> None:
        self.policy = policy
        self.state = policy.initial_state(num_agents, device)

    def act(self, obs: torch.Tensor, index: torch.Tensor | None = None) -> torch.Tensor:
        """Controls [K, 8] for obs [N, O] of all N agents (index [K]: only those agents act; their
        state advances) or, without index, for every agent."""
        if index is None:
            action, self.state = self.policy.act(obs, self.state)
        else:
            action, part = self.policy.act(obs[index], select_agents(self.state, index))
            self.state = scatter_agents(self.state, index, part)
        return to_controls(self.policy.action_kind, action)

    def reset(self, episode_start: torch.Tensor) -> None:
        """Zero the state of agents whose episode starts (episode_start [N] bool)."""
        self.state = reset_agents(self.state, episode_start)
