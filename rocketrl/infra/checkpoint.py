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
import os
import random
import re
import secrets
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

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
_TENSOR = "__tensor__"  # {"__tensor__": key} -> torch.Tensor
_NDARRAY = "__ndarray__"  # {"__ndarray__": key} -> np.ndarray (stored as a tensor)
_TUPLE = "__tuple__"  # {"__tuple__": [...]} -> tuple
_DICT = "__dict__"  # {"__dict__": [[key, value], ...]} -> dict with int (or marker-like) keys
_FLOAT = "__float__"  # {"__float__": "nan" | "inf" | "-inf"} -> float
_TAGS = frozenset({_TENSOR, _NDARRAY, _TUPLE, _DICT, _FLOAT})
_RESERVED_KEYS = frozenset({"__metadata__"})  # safetensors reserves this tensor name

_TMP_SUFFIX = ".tmp"


class CheckpointError(ValueError):
    """A file that is not a readable rocketrl checkpoint: truncated, corrupt, foreign or too new."""


# ----------------------------------------------------------------------------------------------------------
# State flattening
# ----------------------------------------------------------------------------------------------------------


def _path_str(path: tuple[str, ...]) -> str:
    return ".".join(path) if path else "<root>"


def _encode_float(value: float) -> Any:
    if math.isfinite(value):
        return value
    return {_FLOAT: "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}


def _encode(obj: Any, path: tuple[str, ...], on_tensor: Callable[[Any, tuple[str, ...]], Any], seen: set[int]) -> Any:
    """Encode ``obj`` as strict JSON, handing tensors and arrays to ``on_tensor``."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return _encode_float(float(obj))
    if isinstance(obj, (torch.Tensor, np.ndarray)):
        return on_tensor(obj, path)
    if isinstance(obj, np.generic):  # numpy scalar: stored as the matching Python scalar
        return _encode(obj.item(), path, on_tensor, seen)
    if not isinstance(obj, (dict, list, tuple)):
        raise TypeError(
            f"cannot checkpoint {type(obj).__name__} at {_path_str(path)!r}: only dicts, lists, tuples, "
            "tensors, numpy arrays and JSON scalars (None, bool, int, float, str) are data"
        )
    if id(obj) in seen:
        raise ValueError(f"cannot checkpoint a self-referencing structure at {_path_str(path)!r}")
    seen.add(id(obj))
    try:
        if isinstance(obj, dict):
            for key in obj:
                if isinstance(key, bool) or not isinstance(key, (str, int)):
                    raise TypeError(
                        f"cannot checkpoint dict key {key!r} ({type(key).__name__}) at "
                        f"{_path_str(path)!r}: keys must be str or int"
                    )
            items = [(key, _encode(value, (*path, str(key)), on_tensor, seen)) for key, value in obj.items()]
            plain = all(isinstance(key, str) for key in obj) and not (len(obj) == 1 and next(iter(obj)) in _TAGS)
            if plain:
                return dict(items)
            return {_DICT: [[int(key) if isinstance(key, int) else key, value] for key, value in items]}
        encoded = [_encode(value, (*path, str(i)), on_tensor, seen) for i, value in enumerate(obj)]
        return {_TUPLE: encoded} if isinstance(obj, tuple) else encoded
    finally:
        seen.discard(id(obj))


def _decode(obj: Any, resolve: Callable[[str, str], Any]) -> Any:
    """Inverse of :func:`_encode`; ``resolve(tag, key)`` returns the tensor or array for a marker."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        return [_decode(value, resolve) for value in obj]
    if not isinstance(obj, dict):
        raise ValueError(f"malformed checkpoint structure: unexpected {type(obj).__name__}")
    if len(obj) == 1:
        ((tag, value),) = obj.items()
        if tag in (_TENSOR, _NDARRAY):
            if not isinstance(value, str):
                raise ValueError(f"malformed checkpoint structure: {tag} marker holds {value!r}")
            return resolve(tag, value)
        if tag == _TUPLE:
            if not isinstance(value, list):
                raise ValueError(f"malformed checkpoint structure: {tag} marker holds {type(value).__name__}")
            return tuple(_decode(item, resolve) for item in value)
        if tag == _FLOAT:
            if value not in ("nan", "inf", "-inf"):
                raise ValueError(f"malformed checkpoint structure: {tag} marker holds {value!r}")
            return float(value)
        if tag == _DICT:
            if not isinstance(value, list) or not all(isinstance(item, list) and len(item) == 2 for item in value):
                raise ValueError(f"malformed checkpoint structure: {tag} marker does not hold [key, value] pairs")
            out = {}
            for key, item in value:
                if isinstance(key, bool) or not isinstance(key, (str, int)):
                    raise ValueError(f"malformed checkpoint structure: dict key {key!r}")
                out[key] = _decode(item, resolve)
            return out
    return {key: _decode(value, resolve) for key, value in obj.items()}


def _view_id(tensor: torch.Tensor) -> tuple | None:
    """Identity of the memory a tensor views (None when it has no storage to compare)."""
    try:
        ptr = tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None
    if ptr == 0:
        return None
    return (str(tensor.device), ptr, tensor.storage_offset(), tuple(tensor.shape), tensor.stride(), tensor.dtype)


def flatten_state(state: Any, prefix: str = "") -> tuple[dict[str, torch.Tensor], Any]:
    """Split nested state into ``(tensors, structure)``: tensors by unique dotted key, the rest as strict JSON.

    Walks dicts (str or int keys; int keys come back as int), lists, tuples (come back as tuples), tensors,
    numpy arrays (come back as arrays) and JSON scalars (non-finite floats survive). Each tensor is stored
    under its dotted path (``prefix.`` + path, ``#n`` appended on a name clash) and replaced in the
    structure by ``{"__tensor__": key}``. Tensors are detached, not copied; two entries viewing exactly the
    same memory share one key and come back as one tensor.
    """
    tensors: dict[str, torch.Tensor] = {}
    keys_by_view: dict[tuple, str] = {}

    def on_tensor(obj: Any, path: tuple[str, ...]) -> Any:
        tag = _TENSOR
        if isinstance(obj, np.ndarray):
            tag = _NDARRAY
            if obj.dtype.hasobject or obj.dtype.fields is not None:
                raise TypeError(f"cannot checkpoint numpy array of dtype {obj.dtype} at {_path_str(path)!r}")
            try:
                tensor = torch.from_numpy(np.ascontiguousarray(obj))
            except TypeError as exc:
                raise TypeError(f"cannot checkpoint numpy array at {_path_str(path)!r}: {exc}") from exc
        else:
            tensor = obj.detach()
        if tensor.layout != torch.strided:
            raise TypeError(f"cannot checkpoint {tensor.layout} tensor at {_path_str(path)!r}: only dense tensors")
        view = _view_id(tensor) if tag == _TENSOR else None
        if view is not None and view in keys_by_view:
            return {tag: keys_by_view[view]}
        base = ".".join(p for p in (prefix, *path) if p) or "tensor"
        key, n = base, 1
        while key in tensors or key in _RESERVED_KEYS:
            n += 1
            key = f"{base}#{n}"
        tensors[key] = tensor
        if view is not None:
            keys_by_view[view] = key
        return {tag: key}

    structure = _encode(state, (), on_tensor, set())
    return tensors, structure


def unflatten_state(tensors: dict[str, torch.Tensor], structure: Any) -> Any:
    """Exact inverse of :func:`flatten_state`: rebuild the nested state from ``(tensors, structure)``."""

    def resolve(tag: str, key: str) -> Any:
        if key not in tensors:
            raise ValueError(f"malformed checkpoint structure: tensor {key!r} is missing")
        tensor = tensors[key]
        return tensor.cpu().numpy() if tag == _NDARRAY else tensor

    return _decode(structure, resolve)


# ----------------------------------------------------------------------------------------------------------
# RNG state
# ----------------------------------------------------------------------------------------------------------


def rng_state() -> dict:
    """Capture Python ``random``, numpy's global RNG, torch's CPU RNG and (if available) every CUDA RNG.

    The result is plain flatten-able data: tuples of ints, JSON scalars and uint8 tensors.
    """
    kind, key, pos, has_gauss, cached_gaussian = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {
            "bit_generator": str(kind),
            "key": [int(k) for k in key],
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = list(torch.cuda.get_rng_state_all())
    return state


def set_rng_state(state: dict) -> None:
    """Restore RNG state captured by :func:`rng_state` (also accepts it after a checkpoint round trip)."""
    if "python" in state:
        version, internal, gauss_next = state["python"]
        random.setstate((int(version), tuple(int(x) for x in internal), gauss_next))
    if "numpy" in state:
        np_state = state["numpy"]
        np.random.set_state(
            (
                np_state["bit_generator"],
                np.asarray(np_state["key"], dtype=np.uint32),
                int(np_state["pos"]),
                int(np_state["has_gauss"]),
                float(np_state["cached_gaussian"]),
            )
        )
    if "torch" in state:
        torch.set_rng_state(torch.as_tensor(state["torch"]).to("cpu", torch.uint8))
    cuda_states = state.get("cuda")
    if cuda_states:
        if not torch.cuda.is_available():
            warnings.warn("checkpoint holds CUDA RNG state but CUDA is not available; not restored", stacklevel=2)
            return
        count = torch.cuda.device_count()
        if len(cuda_states) != count:
            warnings.warn(
                f"checkpoint holds CUDA RNG state for {len(cuda_states)} devices, this machine has "
                f"{count}; restoring the first {min(count, len(cuda_states))}",
                stacklevel=2,
            )
        for index, cuda_state in enumerate(cuda_states[:count]):
            torch.cuda.set_rng_state(torch.as_tensor(cuda_state).to("cpu", torch.uint8), device=index)


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


def _fsync_dir(directory: Path) -> None:
    """Make a rename or unlink in ``directory`` durable (best effort where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


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
        raise TypeError(f"meta must be JSON data: found a {type(obj).__name__} at {_path_str(where)!r}")

    payload = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "meta": _encode(meta or {}, (), no_tensor, set()),
        "structure": structure,
        "sha256": _digest(tensors),
    }
    header = {METADATA_KEY: json.dumps(payload, allow_nan=False, separators=(",", ":"))}

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{_TMP_SUFFIX}")
    try:
        save_file(tensors, tmp, metadata=header)
        fd = os.open(tmp, os.O_RDWR)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)
    return path


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
        meta = _decode(payload["meta"], no_tensor)
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
        return tensors[key].numpy() if tag == _NDARRAY else on_device[key]

    try:
        state = _decode(payload["structure"], resolve)
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
    wins); checkpoints without a score count only as latest. The file just saved is always kept. Step and
    score live in each file's meta, so a new manager on the same directory (after a restart) sees the same
    view, rebuilt from the file headers alone. Files it cannot read are skipped with a warning, never deleted.
    One manager (one process) writes a directory at a time.
    """

    _NAME = re.compile(r"^step_(\d+)\.safetensors$")

    def __init__(self, directory: str | Path, keep_best: int = 5, keep_latest: int = 1) -> None:
        if keep_latest < 1:
            raise ValueError(f"keep_latest must be >= 1, got {keep_latest}")
        if keep_best < 0:
            raise ValueError(f"keep_best must be >= 0, got {keep_best}")
        self.directory = Path(directory)
        self.keep_best = keep_best
        self.keep_latest = keep_latest
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
            _fsync_dir(self.directory)

    def _remove_temporaries(self) -> None:
        """Delete temporary files a crashed save left behind (``.<name>.safetensors.<pid>.<token>.tmp``)."""
        for path in self.directory.iterdir():
            name = path.name
            if name.startswith(".") and name.endswith(_TMP_SUFFIX) and ".safetensors." in name:
                try:
                    path.unlink()
                except (FileNotFoundError, IsADirectoryError, PermissionError):
                    pass
