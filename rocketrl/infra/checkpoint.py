"""Crash-safe checkpoints that are data, not code: tensors in safetensors, everything else in JSON.

One checkpoint is one ``.safetensors`` file. Its safetensors metadata (a str -> str dict) holds one entry,
``"rocketrl"``: a strict-JSON document ``{"format": "rocketrl-checkpoint", "version": 1, "meta": ...,
"structure": ..., "sha256": ...}``. ``structure`` is the nested state with every tensor replaced by a marker
naming its safetensors key (see :func:`flatten_state`); ``sha256`` covers every tensor's name, dtype, shape
and bytes, so corrupted data is caught, not only a broken header.

Nothing here executes code from a file. A file is written to a temporary file in the same directory, flushed and
fsynced, renamed over the target with ``os.replace`` and the directory fsynced: a reader sees the old
checkpoint or the new one, never half of one.
"""

from __future__ import annotations

import builtins
import errno
import hashlib
import json
import math
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from rocketrl.infra.atomic_file import TEMPORARY_SUFFIX, fsync_dir, write_atomic
from rocketrl.infra.rng import rng_state, set_rng_state
from rocketrl.infra.state_tree import (
    ARRAY_TAG,
    decode_tree,
    encode_tree,
    flatten_state,
    path_str,
    unflatten_state,
)

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "METADATA_KEY",
    "CheckpointError",
    "CheckpointManager",
    "flatten_state",
    "load_checkpoint",
    "read_meta",
    "rng_state",
    "save_checkpoint",
    "set_rng_state",
    "unflatten_state",
]

FORMAT = "rocketrl-checkpoint"
FORMAT_VERSION = 1
METADATA_KEY = "rocketrl"

# Structure markers: a JSON object with exactly one of these keys is a marker, never user data.


class CheckpointError(ValueError):
    """A file that is not a readable rocketrl checkpoint: truncated, corrupt, foreign or too new."""


# ----------------------------------------------------------------------------------------------------------
# Files
# ----------------------------------------------------------------------------------------------------------


def _digest(tensors: dict[str, torch.Tensor]) -> str:
    """sha256 over every tensor's name, dtype, shape and bytes (CPU, contiguous tensors)."""
    digest = hashlib.sha256()
    for key in sorted(tensors):
        tensor = tensors[key]
        digest.update(json.dumps([key, str(tensor.dtype), list(tensor.shape)]).encode())
        digest.update(b"\0")
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().data)
    return digest.hexdigest()


def _isfinite(tensor: torch.Tensor) -> torch.Tensor:
    try:
        return torch.isfinite(tensor)
    except (NotImplementedError, RuntimeError):  # e.g. float8 types: check in float32
        return torch.isfinite(tensor.to(torch.float32))


def _isnan(tensor: torch.Tensor) -> torch.Tensor:
    try:
        return torch.isnan(tensor)
    except (NotImplementedError, RuntimeError):
        return torch.isnan(tensor.to(torch.float32))


def _prepare_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Refuse non-finite tensors; move to CPU, make contiguous, clone where memory would be shared."""
    prepared: dict[str, torch.Tensor] = {}
    storages: set[int] = set()
    for key, tensor in tensors.items():
        if (tensor.is_floating_point() or tensor.is_complex()) and not bool(_isfinite(tensor).all()):
            n_nan = int(_isnan(tensor).sum())
            n_inf = int(tensor.numel() - n_nan - int(_isfinite(tensor).sum()))
            raise ValueError(
                f"refusing to save checkpoint {path}: tensor {key!r} contains {n_nan} NaN and "
                f"{n_inf} inf values (a NaN must never reach a checkpoint)"
            )
        tensor = tensor.detach().to("cpu").contiguous()
        ptr = tensor.untyped_storage().data_ptr()
        if ptr != 0 and ptr in storages:
            tensor = tensor.clone()
            ptr = tensor.untyped_storage().data_ptr()
        storages.add(ptr)
        prepared[key] = tensor
    return prepared


def save_checkpoint(path: str | Path, state: Any, meta: dict | None = None) -> Path:
    """Atomically write ``state`` (any nested structure, see :func:`flatten_state`) and JSON ``meta`` to ``path``.

    Raises ValueError, before touching the disk, if any tensor holds NaN or inf (the message names its key).
    Returns the path written.
    """
    path = Path(path)
    if meta is not None and not isinstance(meta, dict):
        raise TypeError(f"meta must be a dict or None, not {type(meta).__name__}")
    tensors, structure = flatten_state(state)
    tensors = _prepare_tensors(path, tensors)

    def no_tensor(obj: Any, where: tuple[str, ...]) -> Any:
        raise TypeError(f"meta must be JSON data: found a {type(obj).__name__} at {path_str(where)!r}")

    payload = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "meta": encode_tree(meta or {}, (), no_tensor, set()),
        "structure": structure,
        "sha256": _digest(tensors),
    }
    header = {METADATA_KEY: json.dumps(payload, allow_nan=False, separators=(",", ":"))}

    return write_atomic(path, lambda tmp: save_file(tensors, tmp, metadata=header))


def _read_payload(path: Path, handle: Any) -> dict:
    """Validate and return the rocketrl JSON document from an open safetensors file."""
    header = handle.metadata() or {}
    if METADATA_KEY not in header:
        raise CheckpointError(
            f"{path}: not a rocketrl checkpoint (a safetensors file without {METADATA_KEY!r} metadata)"
        )
    try:
        payload = json.loads(header[METADATA_KEY])
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{path}: corrupt checkpoint header (invalid JSON: {exc})") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a rocketrl checkpoint (format marker is not {FORMAT!r})")
    version = payload.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CheckpointError(f"{path}: corrupt checkpoint header (format version {version!r})")
    if version > FORMAT_VERSION:
        raise CheckpointError(
            f"{path}: checkpoint format version {version} is newer than this rocketrl reads "
            f"(version {FORMAT_VERSION}); upgrade rocketrl to load it"
        )
    for field in ("meta", "structure", "sha256"):
        if field not in payload:
            raise CheckpointError(f"{path}: corrupt checkpoint header (no {field!r})")
    return payload


def _open(path: Path) -> Any:
    """``safe_open`` with clear errors: FileNotFoundError for a missing file, CheckpointError for a bad one."""
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, "checkpoint not found", str(path))
    if path.is_dir():
        raise CheckpointError(f"{path}: is a directory, not a checkpoint file")
    try:
        return safe_open(str(path), framework="pt", device="cpu")
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(
            f"{path}: not a readable checkpoint (truncated, corrupt or not safetensors: {exc})"
        ) from exc


def _decode_meta(path: Path, payload: dict) -> dict:
    def no_tensor(tag: str, key: str) -> Any:
        raise ValueError(f"meta holds a {tag} marker")

    try:
        meta = decode_tree(payload["meta"], no_tensor)
    except ValueError as exc:
        raise CheckpointError(f"{path}: corrupt checkpoint meta ({exc})") from exc
    if not isinstance(meta, dict):
        raise CheckpointError(f"{path}: corrupt checkpoint meta (not a dict)")
    return meta


def read_meta(path: str | Path) -> dict:
    """Return a checkpoint's meta, reading only its header (no tensor data)."""
    path = Path(path)
    with _open(path) as handle:
        payload = _read_payload(path, handle)
    return _decode_meta(path, payload)


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes (hex): the same bot copied to another path has the same digest."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> tuple[Any, dict]:
    """Read a checkpoint written by :func:`save_checkpoint`; return ``(state, meta)`` with tensors on ``device``.

    Raises FileNotFoundError for a missing file and CheckpointError (naming the file) for a truncated,
    corrupt or foreign file, a checksum mismatch, or a newer format version. Only tensors and JSON are read, never code.
    """
    path = Path(path)
    device = torch.device(device)
    with _open(path) as handle:
        payload = _read_payload(path, handle)
        try:
            # clone: safe_open tensors are views of a mapping of the file; ours must outlive it
            tensors = {key: handle.get_tensor(key).clone() for key in handle.keys()}
        except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
            raise CheckpointError(f"{path}: cannot read tensor data ({exc})") from exc
    if _digest(tensors) != payload["sha256"]:
        raise CheckpointError(f"{path}: corrupt checkpoint (tensor data does not match its sha256 checksum)")
    meta = _decode_meta(path, payload)
    on_device = tensors if device.type == "cpu" else {key: tensor.to(device) for key, tensor in tensors.items()}
    used: set[str] = set()

    def resolve(tag: str, key: str) -> Any:
        if key not in tensors:
            raise ValueError(f"tensor {key!r} is missing")
        used.add(key)
        return tensors[key].numpy() if tag == ARRAY_TAG else on_device[key]

    try:
        state = decode_tree(payload["structure"], resolve)
    except ValueError as exc:
        raise CheckpointError(f"{path}: corrupt checkpoint structure ({exc})") from exc
    if used != set(tensors):
        raise CheckpointError(
            f"{path}: corrupt checkpoint structure (tensors {sorted(set(tensors) - used)} are not referenced)"
        )
    return state, meta


# ----------------------------------------------------------------------------------------------------------
# Retention
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    path: Path
    step: int
    score: float | None


def _valid_score(score: Any) -> float | None:
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return None
    return float(score)


class CheckpointManager:
    """Checkpoints ``step_{step:012d}.safetensors`` in one directory, pruned to the newest plus the best.

    Keeps the ``keep_latest`` newest by step plus the ``keep_best`` with the highest score (ties: the newer
    wins); checkpoints without a score count only as latest. With ``keep_every`` (agent-steps), the first
    checkpoint at or past each multiple of it is kept for good too (the bots at 8M, 16M, 24M... of a learning
    curve). The file just saved is always kept. Step and
    score live in each file's meta, so a new manager on the same directory (after a restart) sees the same
    view, rebuilt from the file headers alone. Files it cannot read are skipped with a warning, never deleted.
    One manager (one process) writes a directory at a time.
    """

    _NAME = re.compile(r"^step_(\d+)\.safetensors$")

    def __init__(
        self, directory: str | Path, keep_best: int = 5, keep_latest: int = 1, keep_every: int | None = None
    ) -> None:
        if keep_latest < 1:
            raise ValueError(f"keep_latest must be >= 1, got {keep_latest}")
        if keep_best < 0:
            raise ValueError(f"keep_best must be >= 0, got {keep_best}")
        if keep_every is not None and (type(keep_every) is not int or keep_every < 1):
            raise ValueError(f"keep_every must be a positive number of agent-steps or None, got {keep_every!r}")
        self.directory = Path(directory)
        self.keep_best = keep_best
        self.keep_latest = keep_latest
        self.keep_every = keep_every
        self.directory.mkdir(parents=True, exist_ok=True)
        self._cache: dict[str, tuple[tuple[int, int, int], _Entry | None]] = {}

    def path_for(self, step: int) -> Path:
        """Where the checkpoint for ``step`` lives."""
        return self.directory / f"step_{step:012d}.safetensors"

    def save(self, step: int, state: Any, meta: dict | None = None, score: float | None = None) -> Path:
        """Atomically write the checkpoint for ``step`` (meta gains "step" and "score"), then prune."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"step must be a non-negative int, got {step!r}")
        meta = dict(meta or {})
        if meta.get("step", step) != step:
            raise ValueError(f"meta['step'] = {meta['step']!r} disagrees with step = {step}")
        if score is None:
            score = meta.get("score")
        elif "score" in meta and meta["score"] != score:
            raise ValueError(f"meta['score'] = {meta['score']!r} disagrees with score = {score!r}")
        if score is not None and _valid_score(score) is None:
            raise ValueError(f"score must be a finite number or None, got {score!r}")
        meta["step"] = step
        meta["score"] = None if score is None else float(score)
        self._remove_temporaries()
        path = save_checkpoint(self.path_for(step), state, meta)
        self._prune(keep=path)
        return path

    def latest(self) -> Path | None:
        """The checkpoint with the highest step, or None."""
        entries = self._entries()
        return entries[-1].path if entries else None

    def best(self) -> Path | None:
        """The checkpoint with the highest score (ties: the higher step), or None if none has a score."""
        scored = [entry for entry in self._entries() if entry.score is not None]
        return max(scored, key=lambda e: (e.score, e.step)).path if scored else None

    def list(self) -> list[Path]:
        """Every readable checkpoint, sorted by step."""
        return [entry.path for entry in self._entries()]

    def since(self, step: int) -> builtins.list[Path]:
        """Every readable checkpoint at or past `step` (agent-steps), sorted by step."""
        return [entry.path for entry in self._entries() if entry.step >= step]

    def _entries(self) -> builtins.list[_Entry]:
        """Readable checkpoints sorted by step, from file headers (cached while a file is unchanged)."""
        entries: list[_Entry] = []
        live: set[str] = set()
        for path in self.directory.iterdir():
            match = self._NAME.match(path.name)
            if match is None:
                continue
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            live.add(path.name)
            stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
            cached = self._cache.get(path.name)
            if cached is None or cached[0] != stamp:
                cached = (stamp, self._read_entry(path, int(match.group(1))))
                self._cache[path.name] = cached
            if cached[1] is not None:
                entries.append(cached[1])
        for name in set(self._cache) - live:
            del self._cache[name]
        return sorted(entries, key=lambda e: (e.step, e.path.name))

    @staticmethod
    def _read_entry(path: Path, name_step: int) -> _Entry | None:
        try:
            meta = read_meta(path)
        except (CheckpointError, OSError) as exc:
            warnings.warn(f"skipping unreadable checkpoint: {exc}", stacklevel=3)
            return None
        step = meta.get("step")
        if isinstance(step, bool) or not isinstance(step, int):
            step = name_step
        return _Entry(path, step, _valid_score(meta.get("score")))

    def _prune(self, keep: Path) -> None:
        entries = self._entries()
        kept = {keep.name}
        kept.update(entry.path.name for entry in entries[-self.keep_latest :])
        scored = sorted((e for e in entries if e.score is not None), key=lambda e: (e.score, e.step), reverse=True)
        kept.update(entry.path.name for entry in scored[: self.keep_best])
        kept.update(entry.path.name for entry in self._marks(entries))
        removed = False
        for entry in entries:
            if entry.path.name not in kept:
                try:
                    entry.path.unlink()
                except FileNotFoundError:
                    pass
                except OSError as exc:  # a checkpoint we could not prune must not stop training
                    warnings.warn(f"could not remove old checkpoint {entry.path}: {exc}", stacklevel=3)
                    continue
                removed = True
        if removed:
            fsync_dir(self.directory)

    def _marks(self, entries: builtins.list[_Entry]) -> builtins.list[_Entry]:
        """The first checkpoint at or past each multiple of keep_every (entries sorted by step). Checkpoints only
        come later in a run, so one kept as a mark stays the first of its span."""
        if self.keep_every is None:
            return []
        marks: dict[int, _Entry] = {}
        for entry in entries:
            span = entry.step // self.keep_every
            if span >= 1 and span not in marks:
                marks[span] = entry
        return list(marks.values())

    def _remove_temporaries(self) -> None:
        """Delete temporary files a crashed save left behind (``.<name>.safetensors.<pid>.<token>.tmp``)."""
        for path in self.directory.iterdir():
            name = path.name
            if name.startswith(".") and name.endswith(TEMPORARY_SUFFIX) and ".safetensors." in name:
                try:
                    path.unlink()
                except (FileNotFoundError, IsADirectoryError, PermissionError):
                    pass
