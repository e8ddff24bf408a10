"""Preallocated rollout storage on the training device: [T, B, ...] for T steps of B agents."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from rocketrl.policy.actor_critic import RecurrentState


@dataclass
class Minibatch:
    """One minibatch. Feed-forward: every field [N, ...]. Recurrent: [L, N, ...] sequences and the
    LSTM state at their starts ([1, N, H] each)."""

    obs: torch.Tensor
    actions: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    episode_start: torch.Tensor | None = None
    state: RecurrentState = None
    teacher_actions: torch.Tensor | None = None
    """The imitation teacher's action in each sample (shaped like `actions`), when imitating."""


class RolloutStorage:
    """Holds one rollout. Index t is the step, b the agent (arena-major: b = arena * C + car)."""

    def __init__(
        self,
        steps: int,
        agents: int,
        obs_size: int,
        action_shape: tuple[int, ...],
        action_dtype: torch.dtype,
        device: torch.device,
        lstm_hidden: int | None = None,
        sequence_length: int = 16,
        teacher: bool = False,
    ) -> None:
        t, b = steps, agents
        self.steps, self.agents, self.device = steps, agents, device
        self.obs = torch.zeros(t, b, obs_size, device=device)
        self.actions = torch.zeros(t, b, *action_shape, dtype=action_dtype, device=device)
        self.logprobs = torch.zeros(t, b, device=device)
        self.values = torch.zeros(t, b, device=device)
        self.rewards = torch.zeros(t, b, device=device)
        self.next_values = torch.zeros(t, b, device=device)
        """V(s_{t+1}) of the same episode: the value of the final observation after a truncation."""
        self.terminated = torch.zeros(t, b, dtype=torch.bool, device=device)
        self.episode_end = torch.zeros(t, b, dtype=torch.bool, device=device)
        self.episode_start = torch.zeros(t, b, dtype=torch.bool, device=device)
        """True where obs[t] is the first observation of an episode (the LSTM state is reset there)."""
        self.advantages = torch.zeros(t, b, device=device)
        self.returns = torch.zeros(t, b, device=device)
        self.teacher_actions = torch.zeros(t, b, dtype=torch.long, device=device) if teacher else None
        """[T, B] the imitation teacher's table action at each step (ppo/imitation.py), when imitating."""
        self.sequence_length = sequence_length
        self.lstm_states: tuple[torch.Tensor, torch.Tensor] | None = None
        if lstm_hidden:
            if steps % sequence_length:
                raise ValueError(f"rollout steps {steps} must be a multiple of sequence_length {sequence_length}")
            segments = steps // sequence_length
            # LSTM state at each segment start: [segments, 1, B, H].
            self.lstm_states = (
                torch.zeros(segments, 1, b, lstm_hidden, device=device),
                torch.zeros(segments, 1, b, lstm_hidden, device=device),
            )

    def store_state(self, t: int, state: RecurrentState) -> None:
        """Record the LSTM state before step t when t starts a segment."""
        if self.lstm_states is not None and t % self.sequence_length == 0 and state is not None:
            self.lstm_states[0][t // self.sequence_length].copy_(state[0])
            self.lstm_states[1][t // self.sequence_length].copy_(state[1])

    def minibatches(self, num_minibatches: int, generator: torch.Generator | None = None) -> Iterator[Minibatch]:
        """Shuffled minibatches covering the rollout once (feed-forward: agent-steps; recurrent:
        whole segments of `sequence_length` steps)."""
        if self.lstm_states is None:
            n = self.steps * self.agents
            order = torch.randperm(n, device=self.device, generator=generator)
            flat = {
                "obs": self.obs.reshape(n, -1),
                "actions": self.actions.reshape(n, *self.actions.shape[2:]),
                "logprobs": self.logprobs.reshape(n),
                "values": self.values.reshape(n),
                "advantages": self.advantages.reshape(n),
                "returns": self.returns.reshape(n),
            }
            if self.teacher_actions is not None:
                flat["teacher_actions"] = self.teacher_actions.reshape(n)
            for chunk in order.chunk(num_minibatches):
                yield Minibatch(**{key: value[chunk] for key, value in flat.items()})
            return
        length, segments = self.sequence_length, self.steps // self.sequence_length

        def by_segment(x: torch.Tensor) -> torch.Tensor:
            # [T, B, ...] -> [L, segments * B, ...]: sequence s*B + b is agent b's segment s.
            x = x.reshape(segments, length, self.agents, *x.shape[2:]).transpose(0, 1)
            return x.reshape(length, segments * self.agents, *x.shape[3:])

        h = self.lstm_states[0].transpose(0, 1).reshape(1, segments * self.agents, -1)
        c = self.lstm_states[1].transpose(0, 1).reshape(1, segments * self.agents, -1)
        seq = {
            "obs": by_segment(self.obs),
            "actions": by_segment(self.actions),
            "logprobs": by_segment(self.logprobs),
            "values": by_segment(self.values),
            "advantages": by_segment(self.advantages),
            "returns": by_segment(self.returns),
            "episode_start": by_segment(self.episode_start),
        }
        if self.teacher_actions is not None:
            seq["teacher_actions"] = by_segment(self.teacher_actions)
        order = torch.randperm(segments * self.agents, device=self.device, generator=generator)
        for chunk in order.chunk(num_minibatches):
            fields = {key: value[:, chunk] for key, value in seq.items()}
            yield Minibatch(**fields, state=(h[:, chunk], c[:, chunk]))
