"""Actor-critic networks: separate actor and critic networks (MLPs, optionally behind one LSTM core, or entity
attention networks, rocketrl.policy.attention), built from the model config by `ActorCritic.from_config`.

The recurrent state is passed in and out explicitly (never kept inside the module), as a tuple
(h, c) of two [1, B, H] tensors, or None for the feed-forward network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

import torch
from torch import nn
from torch.distributions import Normal

from rocketrl.env.obs import OBS_SIZE
from rocketrl.policy.attention import LSTM_UNSUPPORTED, PRESENCE_COLUMNS, AttentionShape, EntityAttentionNet
from rocketrl.policy.config import ModelConfig
from rocketrl.policy.discrete import DiscreteDistribution
from rocketrl.policy.mlp import mlp

__all__ = ["ActorCritic", "PolicyActor", "RecurrentState", "mlp", "model_config", "reset_state", "weights_obs_size"]

RecurrentState = tuple[torch.Tensor, torch.Tensor] | None


def reset_state(state: RecurrentState, episode_start: torch.Tensor) -> RecurrentState:
    """Zero the recurrent state (h, c) [1, B, H] of agents whose episode starts (episode_start [B])."""
    if state is None:
        return None
    keep = (~episode_start).float().view(1, -1, 1)
    return state[0] * keep, state[1] * keep


def model_config(model_cfg: ModelConfig | Mapping[str, Any]) -> ModelConfig:
    """A ModelConfig from itself or from a checkpoint's "model" section (fields it does not know are ignored,
    fields it lacks take their defaults, so older checkpoints read as MLPs)."""
    if isinstance(model_cfg, ModelConfig):
        return model_cfg
    known = {f.name for f in fields(ModelConfig)}
    return ModelConfig(**{k: v for k, v in model_cfg.items() if k in known})


def weights_obs_size(weights: Mapping[str, torch.Tensor]) -> int:
    """The observation size a network's state dict reads: the LSTM's or the first MLP layer's input width, or the
    observation layout's size for an entity attention network (which splits that layout)."""
    if "lstm.weight_ih_l0" in weights:
        return int(weights["lstm.weight_ih_l0"].shape[1])
    if "actor.0.weight" in weights:
        return int(weights["actor.0.weight"].shape[1])
    return OBS_SIZE


class ActorCritic(nn.Module):
    """Policy and value function over observations [B, obs_size].

    discrete: a categorical over `num_actions` (the lookup table); continuous: a diagonal Gaussian
    over `num_actions` controls with a learned, state-independent log standard deviation.
    kind "mlp": actor and critic are MLPs of actor_hidden / critic_hidden widths, optionally behind an LSTM;
    kind "attention": each is an EntityAttentionNet (`attention` its widths) whose head has those widths.
    """

    def __init__(
        self,
        obs_size: int,
        num_actions: int,
        discrete: bool = True,
        actor_hidden: Sequence[int] = (1024, 512, 256),
        critic_hidden: Sequence[int] = (1024, 512, 256),
        activation: str = "elu",
        lstm_hidden: int | None = None,
        kind: str = "mlp",
        attention: AttentionShape | None = None,
    ) -> None:
        super().__init__()
        if kind not in ("mlp", "attention"):
            raise ValueError(f"model.kind={kind!r}: choose mlp or attention")
        if kind == "attention" and lstm_hidden:
            raise ValueError(LSTM_UNSUPPORTED)
        if kind == "attention" and obs_size != OBS_SIZE:
            raise ValueError(
                f"model.kind=attention reads the {OBS_SIZE}-float observation layout of rocketrl.env.obs; "
                f"this observation has {obs_size} floats (use model.kind=mlp)"
            )
        self.obs_size = obs_size
        self.num_actions = num_actions
        self.discrete = discrete
        self.lstm_hidden = lstm_hidden
        self.kind = kind
        features = obs_size
        self.lstm: nn.LSTM | None = None
        if lstm_hidden:
            self.lstm = nn.LSTM(obs_size, lstm_hidden)
            for name, param in self.lstm.named_parameters():
                if "weight" in name:
                    nn.init.orthogonal_(param)
                else:
                    nn.init.zeros_(param)
            features = lstm_hidden
        self.actor: nn.Module
        self.critic: nn.Module
        if kind == "attention":
            shape = attention or AttentionShape()
            self.actor = EntityAttentionNet(shape, actor_hidden, num_actions, activation, out_gain=0.01)
            self.critic = EntityAttentionNet(shape, critic_hidden, 1, activation, out_gain=1.0)
        else:
            self.actor = mlp([features, *actor_hidden, num_actions], activation, out_gain=0.01)
            self.critic = mlp([features, *critic_hidden, 1], activation, out_gain=1.0)
        self.log_std = nn.Parameter(torch.full((num_actions,), -0.5)) if not discrete else None

    @classmethod
    def from_config(
        cls,
        obs_size: int,
        num_actions: int,
        model_cfg: ModelConfig | Mapping[str, Any],
        discrete: bool = True,
    ) -> ActorCritic:
        """The network `model_cfg` describes (a ModelConfig, or a checkpoint's "model" section as a dict)."""
        m = model_config(model_cfg)
        return cls(
            obs_size,
            num_actions,
            discrete=discrete,
            actor_hidden=m.actor_hidden,
            critic_hidden=m.critic_hidden,
            activation=m.activation,
            lstm_hidden=m.lstm_hidden if m.lstm else None,
            kind=m.kind,
            attention=AttentionShape(m.embed_size, m.attention_heads, m.attention_layers),
        )

    @property
    def raw_obs_columns(self) -> tuple[int, ...]:
        """Observation columns the network needs unnormalized (the attention's presence flags; none for an MLP),
        for ObservationNormalizer(raw_columns=...)."""
        return PRESENCE_COLUMNS if self.kind == "attention" else ()

    @property
    def recurrent(self) -> bool:
        return self.lstm is not None

    def initial_state(self, batch: int, device: torch.device | str) -> RecurrentState:
        """Zero recurrent state (h, c) of [1, batch, H], or None without an LSTM."""
        if self.lstm is None:
            return None
        zeros = torch.zeros(1, batch, self.lstm.hidden_size, device=device)
        return zeros, zeros.clone()

    # ------------------------------------------------------------------------------ core
    def _features_step(self, obs: torch.Tensor, state: RecurrentState) -> tuple[torch.Tensor, RecurrentState]:
        """One time step: obs [B, O] -> features [B, F] and the next state."""
        if self.lstm is None:
            return obs, None
        out, (h, c) = self.lstm(obs.unsqueeze(0), state)
        return out.squeeze(0), (h, c)

    def _features_sequence(self, obs: torch.Tensor, state: RecurrentState, episode_start: torch.Tensor) -> torch.Tensor:
        """Sequences obs [L, N, O] from state ([1, N, H] each), zeroing the state where
        episode_start [L, N] is true, -> features [L, N, F]."""
        if self.lstm is None:
            return obs
        assert state is not None
        outputs = []
        for t in range(obs.shape[0]):
            out, state = self.lstm(obs[t].unsqueeze(0), reset_state(state, episode_start[t]))
            outputs.append(out.squeeze(0))
        return torch.stack(outputs)

    def distribution(self, features: torch.Tensor) -> DiscreteDistribution | Normal:
        logits_or_mean = self.actor(features)
        if self.discrete:
            return DiscreteDistribution(logits_or_mean.float())
        assert self.log_std is not None
        return Normal(logits_or_mean.float(), self.log_std.float().exp().expand_as(logits_or_mean))

    # ------------------------------------------------------------------------------ API
    def act(
        self,
        obs: torch.Tensor,
        state: RecurrentState = None,
        episode_start: torch.Tensor | None = None,
        deterministic: bool = False,
        with_value: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, RecurrentState]:
        """Sample actions for obs [B, O]: (action [B] or [B, A], log-prob [B], value [B], next state).

        episode_start [B] bool zeroes the recurrent state of agents whose episode just began.
        with_value=False skips the critic and returns None for the value (for callers that batch it).
        """
        if episode_start is not None:
            state = reset_state(state, episode_start)
        features, state = self._features_step(obs, state)
        dist = self.distribution(features)
        if deterministic:
            action = dist.mode() if self.discrete else dist.mean  # type: ignore[union-attr]
        else:
            action = dist.sample()
        logprob = dist.log_prob(action)
        if not self.discrete:
            logprob = logprob.sum(-1)
        value = self.critic(features).squeeze(-1).float() if with_value else None
        return action, logprob, value, state

    def value(self, obs: torch.Tensor, state: RecurrentState = None) -> torch.Tensor:
        """V(obs) [B] for obs [B, O] (state is read, not advanced beyond this call)."""
        features, _ = self._features_step(obs, state)
        return self.critic(features).squeeze(-1).float()

    def evaluate(
        self,
        obs: torch.Tensor,
        actions: torch.Tensor,
        state: RecurrentState = None,
        episode_start: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Log-prob, entropy and value of stored actions.

        Feed-forward: obs [N, O], actions [N] -> three [N]. Recurrent: obs [L, N, O], actions [L, N],
        state at the sequence starts, episode_start [L, N] -> three [L, N].
        """
        logprob, entropy, value, _ = self.evaluate_with_teacher(obs, actions, None, state, episode_start)
        return logprob, entropy, value

    def evaluate_with_teacher(
        self,
        obs: torch.Tensor,
        actions: torch.Tensor,
        teacher_actions: torch.Tensor | None,
        state: RecurrentState = None,
        episode_start: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """`evaluate` plus the log-prob of a teacher's actions (shaped like `actions`) under the same
        distribution, from one forward pass; None when `teacher_actions` is None."""
        if self.lstm is not None:
            assert episode_start is not None
            features = self._features_sequence(obs, state, episode_start)
        else:
            features = obs
        dist = self.distribution(features)
        logprob, entropy = dist.log_prob(actions), dist.entropy()
        teacher_logprob = dist.log_prob(teacher_actions) if teacher_actions is not None else None
        if not self.discrete:
            logprob, entropy = logprob.sum(-1), entropy.sum(-1)
            teacher_logprob = teacher_logprob.sum(-1) if teacher_logprob is not None else None
        return logprob, entropy, self.critic(features).squeeze(-1).float(), teacher_logprob


class PolicyActor:
    """`act(obs, state) -> (action, state)` view of an ActorCritic, for evaluation and opponents.

    `normalizer` (an ObservationNormalizer) is applied without updating its statistics.
    """

    def __init__(self, model: ActorCritic, normalizer: object | None = None, deterministic: bool = False) -> None:
        self.model = model
        self.normalizer = normalizer
        self.deterministic = deterministic
        self.action_kind = "discrete" if model.discrete else "continuous"

    def initial_state(self, batch: int, device: torch.device | str) -> RecurrentState:
        """Zero recurrent state for `batch` agents (None for a feed-forward model)."""
        return self.model.initial_state(batch, device)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, state: RecurrentState = None) -> tuple[torch.Tensor, RecurrentState]:
        """obs [B, O] -> (actions [B] or [B, A], next recurrent state)."""
        if self.normalizer is not None:
            obs = self.normalizer.normalize(obs)  # type: ignore[attr-defined]
        action, _, _, state = self.model.act(obs, state, deterministic=self.deterministic)
        return action, state
