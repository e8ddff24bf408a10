"""Running statistics for observation normalization, kept on the training device; a trained policy's
ObservationNormalizer travels with its checkpoint and is applied, frozen, whenever the policy acts.

Buffers are float64 by default so that merging billions of samples stays exact; pass
`dtype=torch.float32` on devices without float64 (e.g. MPS). Outputs take the dtype of the input.
State dicts hold tensors only (they go straight into safetensors).
"""

from __future__ import annotations

import torch
from torch import Tensor

VAR_EPS = 1e-8
"""Added to the variance before the square root in `RunningMeanStd.normalize`."""


def load_buffer(dst: Tensor, d: dict[str, Tensor], key: str) -> None:
    """Copy d[key] into dst in place; a missing key or another shape is an error naming it."""
    if key not in d:
        raise KeyError(f"state dict is missing {key!r}; has {sorted(d)}")
    src = d[key]
    if tuple(src.shape) != tuple(dst.shape):
        raise ValueError(f"state dict entry {key!r} has shape {tuple(src.shape)}, expected {tuple(dst.shape)}")
    dst.copy_(src)


class RunningMeanStd:
    """Running mean and population variance of samples of shape `shape`.

    Starts as mean 0, var 1 with a pseudo-count `epsilon` (so normalize is the identity before any data
    and the first merge needs no special case).
    """

    def __init__(
        self,
        shape: tuple[int, ...],
        device: torch.device | str,
        epsilon: float = 1e-4,
        *,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        self.shape = tuple(shape)
        self.mean = torch.zeros(self.shape, dtype=dtype, device=device)
        self.var = torch.ones(self.shape, dtype=dtype, device=device)
        self.count = torch.tensor(epsilon, dtype=dtype, device=device)
        """Number of samples seen (0-dim), including the initial pseudo-count."""

    @property
    def device(self) -> torch.device:
        return self.mean.device

    @torch.no_grad()
    def update(self, x: Tensor) -> None:
        """Merge a batch x [N, *shape] into the statistics (Chan et al. parallel algorithm). N = 0 is a no-op."""
        if tuple(x.shape[1:]) != self.shape:
            raise ValueError(f"RunningMeanStd.update expects [N, *{self.shape}]; got {tuple(x.shape)}")
        n = x.shape[0]
        if n == 0:
            return
        x = x.to(self.mean.dtype)
        self.merge(n, x.mean(dim=0), x.var(dim=0, correction=0))

    @torch.no_grad()
    def merge(self, n: float | Tensor, batch_mean: Tensor, batch_var: Tensor) -> None:
        """Merge the moments of n samples (their mean and population variance, of shape `shape`), e.g. what
        another process's statistics gained (see `moments_since`). n = 0 is a no-op."""
        if float(n) <= 0:
            return
        batch_mean, batch_var = batch_mean.to(self.mean), batch_var.to(self.mean)
        total = self.count + n
        delta = batch_mean - self.mean
        # mean_ab = mean_a + delta * n_b / n_ab
        new_mean = self.mean + delta * (n / total)
        # M2_ab = M2_a + M2_b + delta^2 * n_a * n_b / n_ab, with M2 = var * n (population variance)
        m2 = self.var * self.count + batch_var * n + delta.square() * (self.count * n / total)
        self.mean.copy_(new_mean)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def normalize(self, x: Tensor, clip: float | None = 10.0) -> Tensor:
        """clamp((x - mean) / sqrt(var + 1e-8), -clip, clip) for x [..., *shape], in x's dtype; clip=None: no clamp."""
        mean = self.mean.to(x.dtype)
        std = (self.var + VAR_EPS).sqrt().to(x.dtype)
        y = (x - mean) / std
        return y if clip is None else y.clamp(-clip, clip)

    def state_dict(self) -> dict[str, Tensor]:
        """Copies of the buffers: {'mean', 'var', 'count'}."""
        return {"mean": self.mean.clone(), "var": self.var.clone(), "count": self.count.clone()}

    def load_state_dict(self, d: dict[str, Tensor]) -> None:
        """Copy 'mean', 'var', 'count' into the buffers (any source device; stays on this one's device)."""
        for key, buf in (("mean", self.mean), ("var", self.var), ("count", self.count)):
            load_buffer(buf, d, key)

    def to(self, device: torch.device | str) -> RunningMeanStd:
        """Move the buffers to `device` in place; returns self."""
        self.mean, self.var, self.count = self.mean.to(device), self.var.to(device), self.count.to(device)
        return self


class ObservationNormalizer:
    """Normalizes observations [..., obs_size] with running statistics over every leading dim.

    `frozen = True` stops `update` (e.g. during evaluation) while `normalize` keeps working.
    `raw_columns` (a network's `raw_obs_columns`, e.g. the attention network's presence flags) keep mean 0 and
    variance 1 in the statistics, so they pass unchanged (within 1e-8) wherever the statistics are applied: in
    training, in a loaded checkpoint and in exported bots.
    """

    def __init__(
        self,
        obs_size: int,
        device: torch.device | str,
        epsilon: float = 1e-4,
        clip: float | None = 10.0,
        frozen: bool = False,
        *,
        dtype: torch.dtype = torch.float64,
        raw_columns: tuple[int, ...] = (),
    ) -> None:
        self.obs_size = obs_size
        self.clip = clip
        self.frozen = frozen
        self.rms = RunningMeanStd((obs_size,), device, epsilon, dtype=dtype)
        self.raw_columns = list(raw_columns)

    @property
    def device(self) -> torch.device:
        return self.rms.device

    def update(self, obs: Tensor) -> None:
        """Merge obs [..., obs_size] into the statistics; a no-op while frozen."""
        if not self.frozen:
            self.rms.update(obs.reshape(-1, self.obs_size))
            self._keep_raw()

    def merge(self, n: float | Tensor, batch_mean: Tensor, batch_var: Tensor) -> None:
        """Merge another process's moments of n observations ([obs_size] mean and population variance), keeping
        the raw columns raw; a no-op while frozen."""
        if not self.frozen:
            self.rms.merge(n, batch_mean, batch_var)
            self._keep_raw()

    def _keep_raw(self) -> None:
        if self.raw_columns:
            self.rms.mean[self.raw_columns] = 0.0
            self.rms.var[self.raw_columns] = 1.0

    def normalize(self, obs: Tensor) -> Tensor:
        """clamp((obs - mean) / sqrt(var + 1e-8), -clip, clip), shape and dtype of obs; never updates."""
        return self.rms.normalize(obs, self.clip)

    def __call__(self, obs: Tensor) -> Tensor:
        """Update (unless frozen), then normalize."""
        self.update(obs)
        return self.normalize(obs)

    def state_dict(self) -> dict[str, Tensor]:
        """{'mean', 'var', 'count'} (the `frozen` flag is runtime mode, not state)."""
        return self.rms.state_dict()

    def load_state_dict(self, d: dict[str, Tensor]) -> None:
        self.rms.load_state_dict(d)

    def to(self, device: torch.device | str) -> ObservationNormalizer:
        self.rms.to(device)
        return self
