"""What travels between the learner and the rollout workers, as whole numpy arrays (Ray's object store holds
them without pickling element by element, and a worker on the same node reads them without a copy).

- The weights payload (learner -> every worker, one `ray.put` per update): the network's state dict, the
  observation statistics and the return statistics.
- A rollout bundle (worker -> learner, one per rollout): the storage tensors [T, B, ...] the update and GAE
  need (observations already normalised as the worker acted on them, actions, log-probs, the critic's values,
  scaled rewards, next values, terminations and episode ends), plus the moments the worker's statistics
  gained during the rollout.

Statistics: each worker starts a rollout from the learner's observation and return statistics and updates
its copy step by step, exactly as a single process does; it sends the moments of what it added (count,
mean, variance) and the learner merges every worker's moments into its own (Chan et al.), then sends the
merged statistics with the next weights. So all workers normalise alike, and nothing is counted twice.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from rocketrl.ppo.algorithm import PPO
from rocketrl.ppo.storage import RolloutStorage

ROLLOUT_FIELDS = ("obs", "actions", "logprobs", "values", "rewards", "next_values", "terminated", "episode_end")
"""Storage tensors [T, B, ...] of a rollout bundle (rewards scaled as the worker scaled them; next_values: V(s_{t+1})
of the same episode, the truncation bootstraps included); recurrent runs add episode_start and lstm_h / lstm_c.
The learner computes the advantages by GAE from them."""

Moments = tuple[float, np.ndarray, np.ndarray]
"""(count, mean, population variance) of the samples a statistic gained."""


def tensor(array: np.ndarray) -> torch.Tensor:
    """A tensor viewing `array` (read-only arrays from the object store included; callers copy from it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(array)


def to_numpy(tree: Any) -> Any:
    """Tensors of a nested dict/list -> numpy arrays on the CPU (bf16 is widened to float32)."""
    if isinstance(tree, torch.Tensor):
        t = tree.detach()
        return (t.float() if t.dtype == torch.bfloat16 else t).cpu().numpy()
    if isinstance(tree, dict):
        return {k: to_numpy(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_numpy(v) for v in tree)
    return tree


def to_tensors(tree: Any, device: torch.device | str = "cpu") -> Any:
    """numpy arrays of a nested dict/list -> tensors (copies) on `device`."""
    if isinstance(tree, np.ndarray):
        return tensor(tree).to(device, copy=True)
    if isinstance(tree, dict):
        return {k: to_tensors(v, device) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_tensors(v, device) for v in tree)
    return tree


# ------------------------------------------------------------------------------------------- weights
def weights_payload(ppo: PPO) -> dict[str, dict[str, np.ndarray]]:
    """The learner's network, observation statistics and return statistics as numpy arrays."""
    assert ppo.return_scaler is not None
    return to_numpy(
        {
            "model": ppo.model.state_dict(),
            "obs_norm": ppo.obs_norm.state_dict(),
            "return_rms": ppo.return_scaler.rms.state_dict(),
        }
    )


def load_weights(ppo: PPO, payload: dict[str, dict[str, np.ndarray]]) -> None:
    """Put the learner's weights and statistics into a worker's PPO (its per-agent running returns stay)."""
    assert ppo.return_scaler is not None
    ppo.model.load_state_dict({k: tensor(v) for k, v in payload["model"].items()})
    ppo.obs_norm.load_state_dict({k: tensor(v) for k, v in payload["obs_norm"].items()})
    ppo.return_scaler.rms.load_state_dict({k: tensor(v) for k, v in payload["return_rms"].items()})


# ------------------------------------------------------------------------------------------- statistics
def moments_between(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> Moments:
    """The moments of the samples a RunningMeanStd merged between two of its state dicts (float64).

    Inverts the parallel merge: n_b = n_1 - n_0, mean_b = (n_1 m_1 - n_0 m_0) / n_b,
    M2_b = n_1 v_1 - n_0 v_0 - (mean_b - m_0)^2 n_0 n_b / n_1, var_b = M2_b / n_b."""
    n0, n1 = float(before["count"]), float(after["count"])
    if n1 - n0 <= 0.5:  # counts are whole numbers of samples (plus a tiny pseudo-count)
        zero = np.zeros(tuple(before["mean"].shape))
        return 0.0, zero, zero.copy()
    m0, m1 = before["mean"].double().cpu(), after["mean"].double().cpu()
    v0, v1 = before["var"].double().cpu(), after["var"].double().cpu()
    nb = n1 - n0
    mean = (n1 * m1 - n0 * m0) / nb
    m2 = n1 * v1 - n0 * v0 - (mean - m0).square() * (n0 * nb / n1)
    return nb, mean.numpy(), (m2 / nb).clamp(min=0.0).numpy()


# ------------------------------------------------------------------------------------------- rollouts
def pack_rollout(storage: RolloutStorage) -> dict[str, np.ndarray]:
    """The storage tensors the update needs, as numpy arrays [T, B, ...] ([S, 1, B, H] for LSTM states)."""
    arrays = {name: to_numpy(getattr(storage, name)) for name in ROLLOUT_FIELDS}
    if storage.lstm_states is not None:
        arrays["episode_start"] = to_numpy(storage.episode_start)
        arrays["lstm_h"], arrays["lstm_c"] = to_numpy(storage.lstm_states[0]), to_numpy(storage.lstm_states[1])
    return arrays


def ingest(storage: RolloutStorage, bundles: list[dict[str, np.ndarray]]) -> None:
    """Copy rollout bundles side by side along the agent dimension of `storage` (B = the bundles' sum).

    Each worker's trajectories are contiguous in time, so GAE over the result (column by column) is GAE over
    each worker's rollout."""
    lo = 0
    for arrays in bundles:
        hi = lo + arrays["logprobs"].shape[1]
        for name in ROLLOUT_FIELDS:
            getattr(storage, name)[:, lo:hi].copy_(tensor(arrays[name]))
        if storage.lstm_states is not None:
            storage.episode_start[:, lo:hi].copy_(tensor(arrays["episode_start"]))
            storage.lstm_states[0][:, :, lo:hi].copy_(tensor(arrays["lstm_h"]))
            storage.lstm_states[1][:, :, lo:hi].copy_(tensor(arrays["lstm_c"]))
        lo = hi
    if lo != storage.agents:
        raise ValueError(f"rollout bundles hold {lo} agents but the learner's storage has {storage.agents}")
