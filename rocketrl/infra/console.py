"""What the console can print."""

from __future__ import annotations

import sys


def console_can_print_unicode(stream: object = None) -> bool:
    """False when the console's encoding cannot print box-drawing characters."""
    encoding = getattr(stream or sys.stdout, "encoding", None) or "ascii"
    try:
        "━│█".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True
