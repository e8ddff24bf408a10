"""Atomic file writes: the content goes to a temporary file in the target's folder, is fsynced, then
renamed over the target with os.replace and the folder fsynced. A reader, or a crash at any moment,
sees either the old file or the whole new one, never half a file.

Temporary names are ``.<name>.<pid>.<token>.tmp``, so leftovers of a crashed write can be recognised
(the checkpoint manager removes them) and several processes can write side by side.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

TEMPORARY_SUFFIX = ".tmp"


def fsync_dir(directory: Path) -> None:
    """Make a rename or unlink in `directory` durable (best effort where folders cannot be opened)."""
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


def write_atomic(path: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """Create `path` atomically: `write(tmp)` writes the whole content to the temporary path given,
    which is then fsynced and renamed over `path` (parent folders made). Returns `path`.

    On any error, the temporary file is removed and `path` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMPORARY_SUFFIX}")
    try:
        write(tmp)
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
    fsync_dir(path.parent)
    return path
