"""State trees as (tensors, JSON structure): nested dicts, lists, tuples, tensors, numpy arrays and
JSON scalars become a flat {key: tensor} dict plus a JSON-able structure with markers, and back.

Markers: {"__tensor__": key}, {"__ndarray__": key}, {"__tuple__": [...]}, {"__dict__": [[k, v], ...]}
(int keys), {"__float__": "nan" | "inf" | "-inf"}. Tensors viewing the same memory are stored once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

_TENSOR = "__tensor__"  # {"__tensor__": key} -> torch.Tensor
ARRAY_TAG = "__ndarray__"  # {"__ndarray__": key} -> np.ndarray (stored as a tensor)
_TUPLE = "__tuple__"  # {"__tuple__": [...]} -> tuple
_DICT = "__dict__"  # {"__dict__": [[key, value], ...]} -> dict with int (or marker-like) keys
_FLOAT = "__float__"  # {"__float__": "nan" | "inf" | "-inf"} -> float
_TAGS = frozenset({_TENSOR, ARRAY_TAG, _TUPLE, _DICT, _FLOAT})
_RESERVED_KEYS = frozenset({"__metadata__"})  # safetensors reserves this tensor name


def path_str(path: tuple[str, ...]) -> str:
    return ".".join(path) if path else "<root>"


def _encode_float(value: float) -> Any:
    if math.isfinite(value):
        return value
    return {_FLOAT: "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}


def encode_tree(
    obj: Any, path: tuple[str, ...], on_tensor: Callable[[Any, tuple[str, ...]], Any], seen: set[int]
) -> Any:
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
        return encode_tree(obj.item(), path, on_tensor, seen)
    if not isinstance(obj, (dict, list, tuple)):
        raise TypeError(
            f"cannot checkpoint {type(obj).__name__} at {path_str(path)!r}: only dicts, lists, tuples, "
            "tensors, numpy arrays and JSON scalars (None, bool, int, float, str) are data"
        )
    if id(obj) in seen:
        raise ValueError(f"cannot checkpoint a self-referencing structure at {path_str(path)!r}")
    seen.add(id(obj))
    try:
        if isinstance(obj, dict):
            for key in obj:
                if isinstance(key, bool) or not isinstance(key, (str, int)):
                    raise TypeError(
                        f"cannot checkpoint dict key {key!r} ({type(key).__name__}) at "
                        f"{path_str(path)!r}: keys must be str or int"
                    )
            items = [(key, encode_tree(value, (*path, str(key)), on_tensor, seen)) for key, value in obj.items()]
            plain = all(isinstance(key, str) for key in obj) and not (len(obj) == 1 and next(iter(obj)) in _TAGS)
            if plain:
                return dict(items)
            return {_DICT: [[int(key) if isinstance(key, int) else key, value] for key, value in items]}
        encoded = [encode_tree(value, (*path, str(i)), on_tensor, seen) for i, value in enumerate(obj)]
        return {_TUPLE: encoded} if isinstance(obj, tuple) else encoded
    finally:
        seen.discard(id(obj))


def decode_tree(obj: Any, resolve: Callable[[str, str], Any]) -> Any:
    """Inverse of :func:`encode_tree`; ``resolve(tag, key)`` returns the tensor or array for a marker."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        return [decode_tree(value, resolve) for value in obj]
    if not isinstance(obj, dict):
        raise ValueError(f"malformed checkpoint structure: unexpected {type(obj).__name__}")
    if len(obj) == 1:
        ((tag, value),) = obj.items()
        if tag in (_TENSOR, ARRAY_TAG):
            if not isinstance(value, str):
                raise ValueError(f"malformed checkpoint structure: {tag} marker holds {value!r}")
            return resolve(tag, value)
        if tag == _TUPLE:
            if not isinstance(value, list):
                raise ValueError(f"malformed checkpoint structure: {tag} marker holds {type(value).__name__}")
            return tuple(decode_tree(item, resolve) for item in value)
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
                out[key] = decode_tree(item, resolve)
            return out
    return {key: decode_tree(value, resolve) for key, value in obj.items()}


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
            tag = ARRAY_TAG
            if obj.dtype.hasobject or obj.dtype.fields is not None:
                raise TypeError(f"cannot checkpoint numpy array of dtype {obj.dtype} at {path_str(path)!r}")
            try:
                tensor = torch.from_numpy(np.ascontiguousarray(obj))
            except TypeError as exc:
                raise TypeError(f"cannot checkpoint numpy array at {path_str(path)!r}: {exc}") from exc
        else:
            tensor = obj.detach()
        if tensor.layout != torch.strided:
            raise TypeError(f"cannot checkpoint {tensor.layout} tensor at {path_str(path)!r}: only dense tensors")
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

    structure = encode_tree(state, (), on_tensor, set())
    return tensors, structure


def unflatten_state(tensors: dict[str, torch.Tensor], structure: Any) -> Any:
    """Exact inverse of :func:`flatten_state`: rebuild the nested state from ``(tensors, structure)``."""

    def resolve(tag: str, key: str) -> Any:
        if key not in tensors:
            raise ValueError(f"malformed checkpoint structure: tensor {key!r} is missing")
        tensor = tensors[key]
        return tensor.cpu().numpy() if tag == ARRAY_TAG else tensor

    return decode_tree(structure, resolve)
