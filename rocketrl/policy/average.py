"""Weight averaging: several bots of one line of training, averaged into one network (a "model soup").

Runs fine-tuned from the same start (or from a bot and from that bot's own average: two generations) stay close
in weight space, so the mean of their parameters is a network too, and can be a better one than each run alone
(docs/results/generations.md measures when it was and when it was not).
Each run's observation normalizer has drifted a little, though, and a network is only meaningful with its own
statistics: run i reads y_i = (x - m_i) / s_i. So each run's input layer is first rewritten, exactly, to read the
pooled statistics y = (x - m) / s instead (W' = W diag(s / s_i), b' = b + W ((m - m_i) / s_i)), and then every
parameter is averaged. The pooled statistics are those of the runs' observations together, each run weighing the
same: m = mean of m_i, var = mean of var_i + the variance of the m_i. Exact for the network, up to the observation
clip (|y| <= ppo.obs_clip, 10 by default), which each run applied to its own y_i.

The input layers are the MLPs' first linear layers (actor.0 and critic.0), or the LSTM's input weights when the
network has one. The attention network reads the observation through several entity encoders and is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from rocketrl.infra.checkpoint import load_checkpoint, save_checkpoint
from rocketrl.policy.actor_critic import model_config
from rocketrl.policy.load import GAUNTLET_DIR, GAUNTLET_PREFIX, checkpoint_config, resolve_checkpoint, run_tail
from rocketrl.policy.normalize import VAR_EPS

__all__ = ["average_checkpoints", "averaged_leaves", "averaged_network", "pooled_statistics"]

MLP_INPUTS = (("actor.0.weight", "actor.0.bias"), ("critic.0.weight", "critic.0.bias"))
LSTM_INPUTS = (("lstm.weight_ih_l0", "lstm.bias_ih_l0"),)
SAME_SETTINGS = (("model", None), ("env", "action"), ("ppo", "normalize_observations"), ("ppo", "obs_clip"))
"""Config settings every averaged bot must share: the network's shape and kind, its actions, how it reads."""


def pooled_statistics(stats: Sequence[Mapping[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The observation statistics of several runs pooled, each run weighing the same.

    stats: each {'mean': [O], 'var': [O], 'count': []} (float64). Returns the same keys: mean of the means,
    mean of the variances plus the variance of the means (population), mean of the counts.
    """
    means = torch.stack([s["mean"].double() for s in stats])
    variances = torch.stack([s["var"].double() for s in stats])
    return {
        "mean": means.mean(0),
        "var": variances.mean(0) + means.var(0, unbiased=False),
        "count": torch.stack([s["count"].double() for s in stats]).mean(),
    }


def _input_layers(model: Mapping[str, torch.Tensor]) -> tuple[tuple[str, str], ...]:
    """The (weight, bias) names of the layers that read the normalized observation."""
    return LSTM_INPUTS if LSTM_INPUTS[0][0] in model else MLP_INPUTS


def averaged_network(
    models: Sequence[Mapping[str, torch.Tensor]], stats: Sequence[Mapping[str, torch.Tensor]] | None
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor] | None]:
    """The mean of several networks' parameters, each first rewritten to read the pooled statistics.

    models: state dicts of one shape (ValueError naming the first parameter that differs); stats: each one's
    observation statistics (see pooled_statistics), or None where the runs normalized nothing. Returns the
    averaged state dict and the pooled statistics (None when `stats` is None).
    """
    if len(models) < 2:
        raise ValueError(f"averaging needs at least two bots, got {len(models)}")
    first = models[0]
    for index, model in enumerate(models[1:], start=2):
        for name in sorted(set(first) | set(model)):
            if name not in first or name not in model or first[name].shape != model[name].shape:
                shapes = [tuple(m[name].shape) if name in m else "missing" for m in (first, model)]
                raise ValueError(
                    f"bot {index}'s network differs from bot 1's at {name!r} ({shapes[1]} against {shapes[0]}): "
                    "only networks of one shape can be averaged (runs of one preset from one parent)"
                )
    averaged = {name: sum(m[name].double() for m in models) / len(models) for name in first}
    if stats is None:
        return {name: value.to(first[name].dtype) for name, value in averaged.items()}, None
    pooled = pooled_statistics(stats)
    std = (pooled["var"] + VAR_EPS).sqrt()
    for weight_name, bias_name in _input_layers(first):
        weight_sum = torch.zeros_like(averaged[weight_name])
        bias_sum = torch.zeros_like(averaged[bias_name])
        for model, own in zip(models, stats, strict=True):
            own_std = (own["var"].double() + VAR_EPS).sqrt()
            weight = model[weight_name].double()
            weight_sum += weight * (std / own_std)
            bias_sum += model[bias_name].double() + weight @ ((pooled["mean"] - own["mean"].double()) / own_std)
        averaged[weight_name] = weight_sum / len(models)
        averaged[bias_name] = bias_sum / len(models)
    return {name: value.to(first[name].dtype) for name, value in averaged.items()}, pooled


def _setting(config: Mapping[str, Any], section: str, key: str | None) -> Any:
    """One setting of a checkpoint's config; the whole model section as a ModelConfig, so that a bot saved before a
    field was added compares equal to a newer one with that field at its default."""
    part = config.get(section, {})
    if section == "model" and key is None:
        return model_config(part)
    return part if key is None else part.get(key)


def average_checkpoints(specs: Sequence[str | Path], out: str | Path, from_step: int | None = None) -> Path:
    """Average the bots at `specs` (checkpoint paths, shipped names such as 'gauntlet_v10', or run folders for
    their last checkpoint; with `from_step`, agent-steps, for every checkpoint they kept at or past it) into one
    checkpoint at `out`: the averaged network, the pooled observation statistics and the first bot's config, with
    `averaged_from` in its metadata (each bot's checkpoint path, a gauntlet bot by its name, its step, and its run's
    seed and start). Loads with `--checkpoint`, starts a run with `run.init_from`. Raises ValueError naming the
    setting or parameter where the bots differ."""
    if from_step is None:
        paths = [resolve_checkpoint(spec) for spec in specs]
    else:
        paths = [path for spec in specs for path in run_tail(spec, from_step)]
    states, configs, steps, sources = [], [], [], []
    for path in paths:
        state, meta = load_checkpoint(path)
        if not isinstance(state.get("model"), dict):
            raise ValueError(f"{path}: the checkpoint holds no network")
        states.append(state)
        configs.append(checkpoint_config(path, meta))
        steps.append(meta.get("step"))
        sources.append(meta.get("averaged_from"))
    for section, key in SAME_SETTINGS:
        name = section if key is None else f"{section}.{key}"
        values = [_setting(config, section, key) for config in configs]
        for path, value in zip(paths[1:], values[1:], strict=True):
            if value != values[0]:
                raise ValueError(
                    f"{path}: its {name} ({value!r}) differs from {paths[0]}'s ({values[0]!r}); "
                    "average bots trained with the same network and observation settings"
                )
    if _setting(configs[0], "model", "kind") == "attention":
        raise ValueError(
            "model.kind=attention: averaging rewrites the layer that reads the observation, which only the MLP "
            "(with or without an LSTM) has in one place; average MLP bots"
        )
    # Statistics a bot was trained without (ppo.normalize_observations false) are not part of its network.
    normalized = _setting(configs[0], "ppo", "normalize_observations") is not False and all(
        "obs_norm" in state for state in states
    )
    model, stats = averaged_network(
        [state["model"] for state in states], [state["obs_norm"] for state in states] if normalized else None
    )
    kept: dict[str, Any] = {"model": model}
    if stats is not None:
        kept["obs_norm"] = stats
    known = [step for step in steps if isinstance(step, int)]
    meta = {
        "config": configs[0],
        "step": max(known) if known else None,
        "averaged_from": [
            {"checkpoint": source_name(p), "step": s, **({"averaged_from": inner} if inner else _run_of(config))}
            for p, s, inner, config in zip(paths, steps, sources, configs, strict=True)
        ],
    }
    return save_checkpoint(out, kept, meta)


def source_name(path: Path) -> str:
    """How an average records one of its bots: a gauntlet bot by its name ('gauntlet_vN', which loads on any
    installation), any other checkpoint by its path as given."""
    if path.resolve().parent == GAUNTLET_DIR.resolve() and path.stem[1:].isdigit():
        return f"{GAUNTLET_PREFIX}{path.stem[1:]}"
    return str(path)


def _run_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The seed and start of the run a checkpoint came from (its config's run section), kept in its entry so that
    the average still names them when the checkpoint itself is gone."""
    run = config.get("run") or {}
    return {"seed": run.get("seed"), "init_from": run.get("init_from")}


def averaged_leaves(averaged_from: Sequence[Mapping[str, Any]], weight: float = 1.0) -> list[dict[str, Any]]:
    """The checkpoints an average holds in the end, through averages of averages: each `averaged_from` entry, or
    the entries of its own `averaged_from` when it was an average itself, as {"checkpoint", "step", "weight"} (and
    the run's "seed" and "init_from" where the entry kept them), the weights (its share of every weight) summing to
    `weight`."""
    share = weight / len(averaged_from)
    leaves: list[dict[str, Any]] = []
    for entry in averaged_from:
        if entry.get("averaged_from"):
            leaves += averaged_leaves(entry["averaged_from"], share)
        else:
            run = {key: entry[key] for key in ("seed", "init_from") if key in entry}
            leaves.append({"checkpoint": entry["checkpoint"], "step": entry.get("step"), "weight": share, **run})
    return leaves
