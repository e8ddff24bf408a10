"""Typed values for config dataclasses: check a value against a field's type hint, parse a
command-line string into one, and the range checks whose messages name the field."""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import fields
from typing import Any, Literal, Union


def _optional_inner(hint: Any) -> Any | None:
    """T for `T | None` (or Optional[T]); None for any other hint."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0]
    return None


def type_name(hint: Any) -> str:
    """Readable name of a field type for error messages and help."""
    inner = _optional_inner(hint)
    if inner is not None:
        return f"{type_name(inner)} or null"
    origin = typing.get_origin(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(hint))
    if origin is list:
        return f"list of {type_name(typing.get_args(hint)[0])}"
    if origin is dict:
        key, value = typing.get_args(hint)
        return f"mapping of {type_name(key)} to {type_name(value)}"
    if hint is bool:
        return "bool (true or false)"
    return getattr(hint, "__name__", str(hint))


def check_value(value: Any, hint: Any, name: str) -> Any:
    """`value` checked against `hint` and normalised (int -> float, integral float -> int, tuple -> list).

    Raises ValueError naming the field, the expected type and the value.
    """

    def fail() -> typing.NoReturn:
        raise ValueError(f"{name}: expected {type_name(hint)}, got {value!r} ({type(value).__name__})")

    inner = _optional_inner(hint)
    if inner is not None:
        if value is None:
            return None
        try:
            return check_value(value, inner, name)
        except ValueError:
            fail()
    origin = typing.get_origin(hint)
    if origin is Literal:
        if not isinstance(value, str) or value not in typing.get_args(hint):
            fail()
        return value
    if origin is list:
        if not isinstance(value, (list, tuple)):
            fail()
        (item,) = typing.get_args(hint)
        try:
            return [check_value(v, item, name) for v in value]
        except ValueError:
            fail()
    if origin is dict:
        if not isinstance(value, Mapping):
            fail()
        key_hint, value_hint = typing.get_args(hint)
        try:
            return {check_value(k, key_hint, name): check_value(v, value_hint, name) for k, v in value.items()}
        except ValueError:
            fail()
    if hint is bool:
        if not isinstance(value, bool):
            fail()
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail()
        if isinstance(value, float):
            if not value.is_integer():
                fail()
            return int(value)
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail()
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            fail()
        return value
    raise TypeError(f"{name}: unsupported config field type {hint!r}")


def parse_text(text: str, hint: Any, name: str) -> Any:
    """Value of a CLI override token, parsed by the field's type, then checked by `_check`."""

    def fail() -> typing.NoReturn:
        raise ValueError(f"{name}: expected {type_name(hint)}, got {text!r}")

    inner = _optional_inner(hint)
    if inner is not None:
        if text.strip().lower() in ("none", "null"):
            return None
        try:
            return parse_text(text, inner, name)
        except ValueError:
            fail()
    origin = typing.get_origin(hint)
    if origin is list:
        body = text.strip().removeprefix("[").removesuffix("]").strip()
        (item,) = typing.get_args(hint)
        try:
            return [parse_text(part.strip(), item, name) for part in body.split(",")] if body else []
        except ValueError:
            fail()
    if origin is dict:
        body = text.strip().removeprefix("{").removesuffix("}").strip()
        key_hint, value_hint = typing.get_args(hint)
        result = {}
        for part in body.split(",") if body else []:
            key, sep, value = part.partition("=") if "=" in part else part.partition(":")
            if not sep or not key.strip():
                fail()
            try:
                result[parse_text(key.strip(), key_hint, name)] = parse_text(value.strip(), value_hint, name)
            except ValueError:
                fail()
        return result
    if hint is bool:
        word = text.strip().lower()
        if word in ("true", "yes", "1"):
            return True
        if word in ("false", "no", "0"):
            return False
        fail()
    if hint is int:
        try:
            return int(text.strip(), 10)
        except ValueError:
            pass
        try:
            number = float(text.strip())
        except ValueError:
            fail()
        if not number.is_integer():
            fail()
        return int(number)
    if hint is float:
        try:
            return float(text.strip())
        except ValueError:
            fail()
    return check_value(text, hint, name)  # str and Literal


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """Resolved type hints of a dataclass's fields (ClassVars left out)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def check_field_types(obj: Any, section: str) -> None:
    for name, hint in field_types(type(obj)).items():
        check_value(getattr(obj, name), hint, f"{section}.{name}")


def at_least(value: float, low: float, name: str) -> None:
    if value < low:
        raise ValueError(f"{name}={value!r}: must be at least {low}")


def positive(value: float, name: str) -> None:
    if not value > 0:
        raise ValueError(f"{name}={value!r}: must be greater than 0")


def positive_or_none(value: float | None, name: str) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{name}={value!r}: must be greater than 0, or null to turn it off")
