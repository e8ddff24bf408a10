"""The exported actor in numpy: observation normalization, MLP (or LSTM + MLP, or the entity attention network of
attention.py), greedy action -> controls.

Copied into exported bot folders; needs numpy and safetensors. Files (written by `rocketrl export`):
model.safetensors holds the actor's tensors under their training names (`actor.0.weight` [out, in],
`actor.0.bias` [out], ..., `lstm.weight_ih_l0` [4H, O] ... for an LSTM core, `log_std` for continuous
actions); bot.json holds the settings: "model" (kind, activation, layer names or attention widths, lstm size,
action kind),
"obs_norm" (mean and var as float64 lists, clip), "actions" (the lookup table rows), "tick_skip", "obs".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load_file

from .attention import AttentionActor

F32 = np.float32
VAR_EPS = 1e-8
"""Added to the variance before its square root, as in training."""


def _elu(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0))).astype(F32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-x))).astype(F32)


ACTIVATIONS = {"elu": _elu, "relu": lambda x: np.maximum(x, F32(0)), "tanh": np.tanh}


def load_settings(folder: str | Path) -> dict[str, Any]:
    """bot.json of an exported bot folder."""
    return json.loads((Path(folder) / "bot.json").read_text())


class ExportedPolicy:
    """Greedy controls for observations [N, obs_size], as the checkpoint played with `--deterministic`.

    Recurrent bots keep their (h, c) state per agent row; `reset()` zeroes it (at every kickoff).
    """

    def __init__(self, folder: str | Path, num_agents: int = 1) -> None:
        folder = Path(folder)
        self.settings = load_settings(folder)
        model = self.settings["model"]
        tensors = load_file(str(folder / "model.safetensors"))
        self.activation = ACTIVATIONS[model["activation"]]
        self.attention = None
        if model.get("kind", "mlp") == "attention":
            self.attention = AttentionActor(tensors, model, self.activation)
            self.layers = []
        else:
            self.layers = [(tensors[f"{name}.weight"], tensors[f"{name}.bias"]) for name in model["actor_layers"]]
        self.discrete = model["action_kind"] == "discrete"
        self.table = np.asarray(self.settings["actions"]["table"], dtype=F32) if self.discrete else None
        norm = self.settings["obs_norm"]
        if norm is not None:
            mean = np.asarray(norm["mean"], dtype=np.float64)
            var = np.asarray(norm["var"], dtype=np.float64)
            self.mean: np.ndarray | None = mean.astype(F32)
            self.std = np.sqrt(var + VAR_EPS).astype(F32)
            self.clip = norm["clip"]
        else:
            self.mean = None
        self.lstm = None
        if model.get("lstm_hidden"):
            self.lstm = tuple(tensors[f"lstm.{k}_l0"] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
            self.hidden = int(model["lstm_hidden"])
        self.num_agents = num_agents
        self.reset()

    def reset(self, rows: np.ndarray | None = None) -> None:
        """Zero the recurrent state of every agent (or of `rows`); a no-op for feed-forward bots."""
        if self.lstm is None:
            return
        if rows is None:
            self.h = np.zeros((self.num_agents, self.hidden), F32)
            self.c = np.zeros((self.num_agents, self.hidden), F32)
        else:
            self.h[rows] = 0.0
            self.c[rows] = 0.0

    def normalize(self, obs: np.ndarray) -> np.ndarray:
        """clip((obs - mean) / sqrt(var + 1e-8), -clip, clip) in float32, as training normalized."""
        if self.mean is None:
            return obs.astype(F32)
        y = (obs.astype(F32) - self.mean) / self.std
        return y if self.clip is None else np.clip(y, -self.clip, self.clip).astype(F32)

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Actor outputs [N, A] (logits, or action means for continuous bots); advances an LSTM's state."""
        x = self.normalize(obs)
        if self.attention is not None:
            return self.attention(x)
        if self.lstm is not None:
            w_ih, w_hh, b_ih, b_hh = self.lstm
            gates = x @ w_ih.T + b_ih + self.h @ w_hh.T + b_hh  # [N, 4H]: input, forget, cell, output
            i, f, g, o = np.split(gates, 4, axis=-1)
            self.c = (_sigmoid(f) * self.c + _sigmoid(i) * np.tanh(g)).astype(F32)
            self.h = (_sigmoid(o) * np.tanh(self.c)).astype(F32)
            x = self.h
        for k, (weight, bias) in enumerate(self.layers):
            x = (x @ weight.T + bias).astype(F32)
            if k < len(self.layers) - 1:
                x = self.activation(x)
        return x

    def controls(self, obs: np.ndarray) -> np.ndarray:
        """Greedy car controls [N, 8] (throttle, steer, pitch, yaw, roll, jump, boost, handbrake)."""
        out = self.logits(obs)
        if self.discrete:
            return self.table[out.argmax(-1)]
        analog = np.clip(out[:, :5], -1.0, 1.0)
        buttons = (out[:, 5:] > 0).astype(F32)
        return np.concatenate([analog, buttons], axis=-1).astype(F32)
