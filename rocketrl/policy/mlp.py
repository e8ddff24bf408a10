"""The multilayer perceptron every network of the policy package is built from: linear layers with an
activation between them, orthogonally initialised."""

from __future__ import annotations

import math
from collections.abc import Sequence

from torch import nn

ACTIVATIONS: dict[str, type[nn.Module]] = {"elu": nn.ELU, "relu": nn.ReLU, "tanh": nn.Tanh}


def mlp(sizes: Sequence[int], activation: str, out_gain: float) -> nn.Sequential:
    """Linear layers of the given sizes with `activation` between them; orthogonal init
    (gain sqrt(2) for hidden layers, `out_gain` for the last), zero biases."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"model.activation={activation!r}: choose one of {', '.join(ACTIVATIONS)}")
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        linear = nn.Linear(fan_in, fan_out)
        last = i == len(sizes) - 2
        nn.init.orthogonal_(linear.weight, gain=out_gain if last else math.sqrt(2))
        nn.init.zeros_(linear.bias)
        layers.append(linear)
        if not last:
            layers.append(ACTIVATIONS[activation]())
    return nn.Sequential(*layers)
