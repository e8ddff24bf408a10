"""YAML files that build on another: a top-level `extends: other.yaml` reads that file first and lays this one over it.

Sections (top-level mappings such as `ppo:` or `weights:`) are merged key by key; a setting's value, even a mapping
such as `state_setter: {kickoff: 1.0}`, replaces the parent's whole. A variant of a preset then holds only what it
changes, so a change to the preset reaches every variant. The parent's path is relative to the extending file's
folder; 'configs/...' falls back to the packaged configs folder when nothing is there. Chains are followed to the
root; a loop is an error that lists it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

EXTENDS_KEY = "extends"
"""The top-level key naming the file a YAML file builds on."""


def merge_mappings(base: Mapping[str, Any], over: Mapping[str, Any], depth: int) -> dict[str, Any]:
    """`base` with `over` laid on it: keys of `over` win; where both hold a mapping and depth > 1, those are merged
    the same way one level down (depth 1 replaces values whole), and an empty (None) value over a mapping keeps it.
    Neither input is modified."""
    merged: dict[str, Any] = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        if depth > 1 and isinstance(below, Mapping) and value is None:
            continue  # an empty section (`ppo:` with nothing under it) changes nothing
        if depth > 1 and isinstance(below, Mapping) and isinstance(value, Mapping):
            merged[key] = merge_mappings(below, value, depth - 1)
        else:
            merged[key] = value
    return merged


def parent_path(text: str, folder: Path) -> Path:
    """Where `extends: text` in a file of `folder` points: the file relative to `folder` (~ expanded), or, when
    that does not exist and `text` starts with 'configs/', the packaged file of that name."""
    expanded = Path(os.path.expanduser(text))
    local = expanded if expanded.is_absolute() else folder / expanded
    if local.is_file():
        return local
    parts = Path(text).parts
    if not expanded.is_absolute() and parts and parts[0] == "configs":
        packaged = Path(str(resources.files("rocketrl") / "configs")).joinpath(*parts[1:])
        if packaged.is_file():
            return packaged
    return local


def read_yaml(path: Path, loader: type[yaml.SafeLoader] = yaml.SafeLoader) -> Any:
    """The YAML document in the file at `path`, parsed by `loader` (a SafeLoader: no arbitrary objects); a parse
    error names the file."""
    with open(path, encoding="utf-8") as handle:
        try:
            return yaml.load(handle, Loader=loader)
        except yaml.YAMLError as error:
            raise ValueError(f"{path}: not valid YAML: {error}") from None


def read_extending_yaml(
    path: str | Path,
    loader: type[yaml.SafeLoader] = yaml.SafeLoader,
    resolve: Callable[[dict[str, Any], Path], dict[str, Any]] = lambda data, _: data,
    expected: str = "a mapping",
    _chain: tuple[Path, ...] = (),
) -> dict[str, Any]:
    """The mapping in the YAML file at `path`, laid over the file its `extends` names (recursively).

    `loader` parses each file (see `read_yaml`); resolve(data, path) fixes what depends on the file's own folder
    (relative paths) before the merge; `expected` says what the top level must hold. Errors name the file and the
    field.
    """
    path = Path(path)
    key = path.resolve()
    if key in _chain:
        loop = " -> ".join(str(p) for p in (*_chain, key))
        raise ValueError(f"{path}: {EXTENDS_KEY} makes a loop ({loop}); one of these files must not extend another")
    raw = read_yaml(path, loader)
    raw = {} if raw is None else raw
    if not isinstance(raw, Mapping):
        raise ValueError(f"{path}: expected {expected} at the top level, got {type(raw).__name__}")
    data = {str(name): dict(value) if isinstance(value, Mapping) else value for name, value in raw.items()}
    parent_text = data.pop(EXTENDS_KEY, None)
    data = resolve(data, path)
    if parent_text is None:
        return data
    if not isinstance(parent_text, str) or not parent_text.strip():
        raise ValueError(f"{path}: {EXTENDS_KEY} must be the path of a YAML file to build on, got {parent_text!r}")
    parent = parent_path(parent_text, path.parent)
    if not parent.is_file():
        raise ValueError(
            f"{path}: {EXTENDS_KEY}: {parent_text!r} names no file (looked for {parent}); give a path relative "
            "to this file's folder, or configs/... for a packaged file"
        )
    base = read_extending_yaml(parent, loader, resolve, expected, (*_chain, key))
    return merge_mappings(base, data, depth=2)
