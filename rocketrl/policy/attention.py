"""Entity attention network (`model.kind: attention`): one network for every team size up to 3v3, invariant to
the order of teammates among themselves and of opponents among themselves.

The 180-float observation (rocketrl.env.obs) splits into

    query      obs[0:80]    everything that is not a set: ball (9), this car's previous controls (8), the boost
                            pads (34) and this car (29); one MLP embeds it to the query vector q [B, D]
    entities   obs[80:180]  the five other-car slots, 20 floats each: slots 0-1 teammates, 2-4 opponents; each
                            entity type has its own embedding MLP (the type flag is which MLP reads the slot)

The key and value set is the query's own embedding (always present) followed by the five car embeddings; a slot
whose `present` float (its last) is not above 0 is masked out of the attention. The query's own token keeps
at least one key unmasked, so a game with no other car attends to itself and never divides by zero.
Each of `layers` blocks is pre-norm: q += attention(norm(q), norm(tokens)); q += feed_forward(norm(q)). The
query is the only token that is updated (a single query attending over the set is an attention pooling), so
the output q, layer-normed, is the pooled state [B, D]. The MLP head (actor_hidden or critic_hidden widths) reads
the query's own 80 floats beside it, as an MLP would read them, and gives the logits or the value.

Masking reads the `present` float as the network receives it: raw observations (1 present, 0 absent), or
normalized ones whose presence columns the normalizer keeps raw (ObservationNormalizer(raw_columns=...),
`PRESENCE_COLUMNS`). A slot masked out contributes an exact zero, so absent slots holding any finite values give
the same output as zeroed ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from rocketrl.env.obs import MAX_TEAMMATES, NUM_OTHER_SLOTS, OBS_SIZE, OTHER_PRESENT, OTHER_SIZE, OTHERS
from rocketrl.policy.config import LSTM_UNSUPPORTED
from rocketrl.policy.mlp import mlp

__all__ = ["AttentionShape", "EntityAttentionNet", "LSTM_UNSUPPORTED", "PRESENCE_COLUMNS", "QUERY_SIZE"]

QUERY_SIZE = OTHERS.start
"""Floats of the query entity: ball, previous controls, pads and this car (obs[0:80])."""
ENTITY_SIZE = OTHER_SIZE
PRESENCE_COLUMNS = tuple(QUERY_SIZE + k * OTHER_SIZE + OTHER_PRESENT for k in range(NUM_OTHER_SLOTS))
"""Observation indices of the five `present` floats (99, 119, ..., 179)."""
FEED_FORWARD_WIDTH = 2
"""The feed-forward layer of each block is FEED_FORWARD_WIDTH x the embedding size wide."""


@dataclass(frozen=True)
class AttentionShape:
    """Widths of the entity attention network."""

    embed_size: int = 64
    """D: width of every entity embedding and of the attention."""
    heads: int = 4
    """Attention heads; must divide embed_size."""
    layers: int = 1
    """Attention blocks, each attention then feed-forward."""


def _linear(fan_in: int, fan_out: int, gain: float = 1.0) -> nn.Linear:
    linear = nn.Linear(fan_in, fan_out)
    nn.init.orthogonal_(linear.weight, gain=gain)
    nn.init.zeros_(linear.bias)
    return linear


class QueryAttention(nn.Module):
    """Multi-head attention of one query vector over a set of tokens, masked slots excluded."""

    def __init__(self, embed_size: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.query = _linear(embed_size, embed_size)
        self.key = _linear(embed_size, embed_size)
        self.value = _linear(embed_size, embed_size)
        self.out = _linear(embed_size, embed_size)

    def forward(self, q: torch.Tensor, tokens: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        """q [B, D], tokens [B, N, D], present [B, N] bool (at least one true per row) -> [B, D]."""
        embed, n = q.shape[-1], tokens.shape[1]
        per_head = embed // self.heads
        # Broadcast products rather than batched matmuls: with N = 6 tokens and heads of 16-32 floats these are
        # a few times faster on a CPU (one elementwise pass instead of B x heads tiny matrix products).
        qh = self.query(q).reshape(-1, 1, self.heads, per_head)
        k = self.key(tokens).reshape(-1, n, self.heads, per_head)
        v = self.value(tokens).reshape(-1, n, self.heads, per_head)
        scores = (qh * k).sum(-1) / math.sqrt(per_head)  # [B, N, heads]
        scores = scores.masked_fill(~present.unsqueeze(-1), float("-inf"))
        weights = torch.softmax(scores, dim=1)
        pooled = (weights.unsqueeze(-1) * v).sum(1).reshape(-1, embed)
        return self.out(pooled)


class AttentionBlock(nn.Module):
    """Pre-norm block: q += attention(norm(q), norm(tokens)); q += feed_forward(norm(q))."""

    def __init__(self, embed_size: int, heads: int, activation: str) -> None:
        super().__init__()
        self.norm_query = nn.LayerNorm(embed_size)
        self.norm_tokens = nn.LayerNorm(embed_size)
        self.attention = QueryAttention(embed_size, heads)
        self.norm_feed_forward = nn.LayerNorm(embed_size)
        width = FEED_FORWARD_WIDTH * embed_size
        self.feed_forward = mlp([embed_size, width, embed_size], activation, out_gain=1.0)

    def forward(self, q: torch.Tensor, tokens: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        """q [B, D], tokens [B, N, D], present [B, N] -> the updated q [B, D]."""
        q = q + self.attention(self.norm_query(q), self.norm_tokens(tokens), present)
        return q + self.feed_forward(self.norm_feed_forward(q))


class EntityAttentionNet(nn.Module):
    """obs [..., 180] -> out [..., out_size]: entity embeddings, attention from this car's query, an MLP head."""

    def __init__(
        self, shape: AttentionShape, head_hidden: Sequence[int], out_size: int, activation: str, out_gain: float
    ) -> None:
        super().__init__()
        check_shape(shape)
        d = shape.embed_size
        self.query = mlp([QUERY_SIZE, d, d], activation, out_gain=1.0)
        self.teammate = mlp([ENTITY_SIZE, d, d], activation, out_gain=1.0)
        self.opponent = mlp([ENTITY_SIZE, d, d], activation, out_gain=1.0)
        self.blocks = nn.ModuleList(AttentionBlock(d, shape.heads, activation) for _ in range(shape.layers))
        self.norm = nn.LayerNorm(d)
        self.head = mlp([QUERY_SIZE + d, *head_hidden, out_size], activation, out_gain=out_gain)

    def pooled(self, obs: torch.Tensor) -> torch.Tensor:
        """obs [B, 180] -> the pooled state [B, D]."""
        q = self.query(obs[:, :QUERY_SIZE])
        others = obs[:, QUERY_SIZE:OBS_SIZE].reshape(-1, NUM_OTHER_SLOTS, ENTITY_SIZE)
        tokens = torch.cat(
            [q.unsqueeze(1), self.teammate(others[:, :MAX_TEAMMATES]), self.opponent(others[:, MAX_TEAMMATES:])],
            dim=1,
        )
        present = others[:, :, OTHER_PRESENT] > 0
        present = torch.cat([torch.ones_like(present[:, :1]), present], dim=1)
        for block in self.blocks:
            q = block(q, tokens, present)
        return self.norm(q)

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        """obs [B, 180] -> what the head reads [B, 80 + D]: the query's own floats beside the pooled state."""
        return torch.cat([obs[:, :QUERY_SIZE], self.pooled(obs)], dim=-1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """obs [B, 180] (or [..., 180]) -> [B, out_size] (or [..., out_size])."""
        if obs.dim() == 2:
            return self.head(self.features(obs))
        flat = obs.reshape(-1, obs.shape[-1])
        return self.head(self.features(flat)).reshape(*obs.shape[:-1], -1)


def check_shape(shape: AttentionShape) -> None:
    """Raise ValueError naming the model field when the attention widths do not fit together."""
    for name, value in (("embed_size", shape.embed_size), ("attention_heads", shape.heads)):
        if value < 1:
            raise ValueError(f"model.{name}={value}: must be at least 1")
    if shape.layers < 1:
        raise ValueError(f"model.attention_layers={shape.layers}: must be at least 1 (the attention pools the cars)")
    if shape.embed_size % shape.heads:
        raise ValueError(
            f"model.embed_size={shape.embed_size} is not a multiple of model.attention_heads={shape.heads}; "
            "choose an embed_size that the number of heads divides (e.g. 64 with 4 heads)"
        )
