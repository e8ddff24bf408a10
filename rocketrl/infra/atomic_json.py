"""Atomic JSON files: written through `atomic_file.write_atomic` (a temporary file in the same folder,
fsynced, then renamed over the target), so a reader (or a crash) never sees half a file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rocketrl.infra.atomic_file import write_atomic


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> Path:
    """Write `data` as indented JSON to `path` (parent folders made); numbers of other types become floats."""
    text = json.dumps(data, indent=2, default=float) + "\n"  # fails before anything touches the disk
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
