"""A function run through torch.compile that falls back to eager mode, with one warning, on failure."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch


class CompiledOrEager:
    """Calls `fn` through torch.compile (compiled at the first call, with `options`). If compiling or a
    compiled call raises, it warns once naming `setting` (the switch that asked for it) and calls `fn`
    eagerly from then on; the eager function computes the same values."""

    def __init__(self, fn: Callable[..., Any], setting: str, **options: Any) -> None:
        self.fn = fn
        self.setting = setting
        self.options = options
        self.active = True
        """False once a failure made it fall back to eager mode."""
        self.compiled_ran = False
        """True once a compiled call returned."""
        self._compiled: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.active:
            try:
                if self._compiled is None:
                    self._compiled = torch.compile(self.fn, **self.options)
                out = self._compiled(*args, **kwargs)
                self.compiled_ran = True
                return out
            except Exception as error:  # any backend failure: the eager function computes the same values
                warnings.warn(f"{self.setting}: torch.compile failed ({error!r}); using eager mode", stacklevel=2)
                self.active = False
        return self.fn(*args, **kwargs)
