"""The entity attention actor in numpy (`model.kind: attention` in training; rocketrl/policy/attention.py there).

Tensors under their training names: `actor.query.*`, `actor.teammate.*`, `actor.opponent.*` (embedding MLPs),
`actor.blocks.<l>.{norm_query,norm_tokens,attention.{query,key,value,out},norm_feed_forward,feed_forward}.*`,
`actor.norm.*` and `actor.head.*`. bot.json's "model" gives the widths: embed_size, heads, layers,
query_size (80: ball, previous controls, pads, this car) and entity_size (20 floats per other car).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

F32 = np.float32
LAYER_NORM_EPS = 1e-5
TEAMMATE_SLOTS = 2
"""The first two other-car slots are teammates, the next three opponents."""


def _linear(x: np.ndarray, tensors: dict[str, np.ndarray], name: str) -> np.ndarray:
    return (x @ tensors[f"{name}.weight"].T + tensors[f"{name}.bias"]).astype(F32)


def _layer_norm(x: np.ndarray, tensors: dict[str, np.ndarray], name: str) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = np.square(x - mean).mean(-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + F32(LAYER_NORM_EPS))
    return (y * tensors[f"{name}.weight"] + tensors[f"{name}.bias"]).astype(F32)


class AttentionActor:
    """Normalized observations [N, obs_size] -> actor outputs [N, A], as the training network computes them."""

    def __init__(
        self, tensors: dict[str, np.ndarray], model: dict[str, Any], activation: Callable[[np.ndarray], np.ndarray]
    ) -> None:
        self.tensors = tensors
        self.activation = activation
        self.embed = int(model["embed_size"])
        self.heads = int(model["heads"])
        self.layers = int(model["layers"])
        self.query_size = int(model["query_size"])
        self.entity_size = int(model["entity_size"])

    def _mlp(self, x: np.ndarray, prefix: str) -> np.ndarray:
        """The nn.Sequential of Linear layers (indices 0, 2, 4, ...) with the activation between them."""
        indices = sorted({int(k[len(prefix) + 1 :].split(".")[0]) for k in self.tensors if k.startswith(prefix + ".")})
        for j, index in enumerate(indices):
            x = _linear(x, self.tensors, f"{prefix}.{index}")
            if j < len(indices) - 1:
                x = self.activation(x)
        return x

    def _attention(self, q: np.ndarray, tokens: np.ndarray, present: np.ndarray, name: str) -> np.ndarray:
        """q [N, D] over tokens [N, T, D], present [N, T] bool -> [N, D]."""
        n, t = tokens.shape[:2]
        per_head = self.embed // self.heads
        qh = _linear(q, self.tensors, f"{name}.query").reshape(n, self.heads, per_head)
        k = _linear(tokens, self.tensors, f"{name}.key").reshape(n, t, self.heads, per_head)
        v = _linear(tokens, self.tensors, f"{name}.value").reshape(n, t, self.heads, per_head)
        scores = np.einsum("bhd,bnhd->bhn", qh, k) / F32(np.sqrt(per_head))
        scores = np.where(present[:, None, :], scores, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights = (weights / weights.sum(-1, keepdims=True)).astype(F32)
        pooled = np.einsum("bhn,bnhd->bhd", weights, v).reshape(n, self.embed).astype(F32)
        return _linear(pooled, self.tensors, f"{name}.out")

    def __call__(self, x: np.ndarray) -> np.ndarray:
        n = x.shape[0]
        q = self._mlp(x[:, : self.query_size], "actor.query")
        others = x[:, self.query_size :].reshape(n, -1, self.entity_size)
        tokens = np.concatenate(
            [
                q[:, None],
                self._mlp(others[:, :TEAMMATE_SLOTS], "actor.teammate"),
                self._mlp(others[:, TEAMMATE_SLOTS:], "actor.opponent"),
            ],
            axis=1,
        )
        present = np.concatenate([np.ones((n, 1), bool), others[:, :, -1] > 0], axis=1)
        for layer in range(self.layers):
            block = f"actor.blocks.{layer}"
            normed_q = _layer_norm(q, self.tensors, f"{block}.norm_query")
            normed_tokens = _layer_norm(tokens, self.tensors, f"{block}.norm_tokens")
            q = (q + self._attention(normed_q, normed_tokens, present, f"{block}.attention")).astype(F32)
            normed_q = _layer_norm(q, self.tensors, f"{block}.norm_feed_forward")
            q = (q + self._mlp(normed_q, f"{block}.feed_forward")).astype(F32)
        pooled = _layer_norm(q, self.tensors, "actor.norm")
        return self._mlp(np.concatenate([x[:, : self.query_size], pooled], axis=1).astype(F32), "actor.head")
