"""Argument types shared by the `rocketrl` subcommands, with errors that say how to write the value."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def team_size(text: str) -> tuple[int, int]:
    """'2' -> (2, 2); '2v3' -> (2, 3); '1v0' -> (1, 0). Blue 1..3, orange 0..3."""
    try:
        parts = [int(part) for part in text.lower().split("v")]
    except ValueError:
        parts = []
    if len(parts) not in (1, 2):
        raise argparse.ArgumentTypeError(f"--team-size {text!r}: write it as N or BLUEvORANGE, e.g. 1, 1v1, 2v2, 1v2")
    blue, orange = (parts[0], parts[0]) if len(parts) == 1 else parts
    if not 1 <= blue <= 3 or not 0 <= orange <= 3:
        raise argparse.ArgumentTypeError(f"--team-size {text!r}: blue must be 1..3 and orange 0..3")
    return blue, orange


def opposed_team_size(text: str) -> tuple[int, int]:
    """team_size for games between two policies: both teams need at least one car."""
    blue, orange = team_size(text)
    if orange == 0:
        raise argparse.ArgumentTypeError(f"--team-size {text!r}: both teams need at least one car")
    return blue, orange
