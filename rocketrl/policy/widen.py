"""Function-preserving widening: a trained MLP actor-critic's weights placed into one with wider hidden layers.

Each linear layer of the wider network keeps the trained weights in its leading block. A new hidden unit keeps its
fresh incoming weights (so it computes something from the start) and gets zero outgoing weights (so it changes no
output): the wider network acts and values exactly as the trained one until training moves those zeros. Depth, the
observation, the action outputs and an LSTM must match; only hidden widths may grow.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch

__all__ = ["widened_state_dict"]

_LINEAR = re.compile(r"^(actor|critic)\.(\d+)\.(weight|bias)$")


def _linear_layers(state: Mapping[str, torch.Tensor]) -> dict[str, list[int]]:
    """The Sequential indices of each MLP's linear layers, input side first: {"actor": [0, 2, 4], ...}."""
    layers: dict[str, set[int]] = {}
    for key in state:
        match = _LINEAR.match(key)
        if match:
            layers.setdefault(match.group(1), set()).add(int(match.group(2)))
    return {net: sorted(indices) for net, indices in layers.items()}


def widened_state_dict(
    trained: Mapping[str, torch.Tensor], fresh: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """A state dict of `fresh`'s shapes that computes what `trained` computes (see the module docstring).

    trained: the checkpoint's model state; fresh: the wider network's freshly initialised state. Raises ValueError
    naming the first parameter that cannot be widened (a narrower width, another depth, observation or action size).
    """
    if set(trained) != set(fresh):
        name = sorted(set(trained) ^ set(fresh))[0]
        raise ValueError(f"{name!r} is in one network only: widths may grow, the number of layers may not")
    layers = _linear_layers(fresh)  # the same keys, so the same layers as `trained`
    widened: dict[str, torch.Tensor] = {}
    for key, target in fresh.items():
        source = trained[key].to(device=target.device, dtype=target.dtype)
        if source.shape == target.shape:
            widened[key] = source.clone()
            continue
        match = _LINEAR.match(key)
        if match is None or source.dim() != target.dim() or any(s > t for s, t in zip(source.shape, target.shape)):
            raise ValueError(
                f"{key!r} is {tuple(source.shape)} in the checkpoint and {tuple(target.shape)} here: only the hidden "
                "widths of the actor and critic MLPs may grow"
            )
        net, index = match.group(1), int(match.group(2))
        first, last = layers[net][0], layers[net][-1]
        if index == last and source.shape[0] != target.shape[0]:
            raise ValueError(f"{key!r}: the checkpoint has {source.shape[0]} outputs, this network {target.shape[0]}")
        if source.dim() == 2 and index == first and source.shape[1] != target.shape[1]:
            raise ValueError(
                f"{key!r}: the checkpoint reads {source.shape[1]} features, this network {target.shape[1]}"
            )
        value = target.clone()
        if source.dim() == 2:
            rows, cols = source.shape
            value[:, cols:] = 0.0  # inputs from the previous layer's new units: silent
            value[:rows, :cols] = source
        else:
            value[: source.shape[0]] = source
        widened[key] = value
    return widened
