"""Argument types shared by the `rocketrl` subcommands, with errors that say how to write the value."""

from __future__ import annotations

import argparse
import sys

from rocketrl.sim.arena import MAX_TEAM_SIZE


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
    if blue > MAX_TEAM_SIZE or orange > MAX_TEAM_SIZE:
        from rocketrl.league.team_sizes import beyond_limit_message

        raise argparse.ArgumentTypeError(beyond_limit_message(text))
    if not 1 <= blue <= 3 or not 0 <= orange <= 3:
        raise argparse.ArgumentTypeError(f"--team-size {text!r}: blue must be 1..3 and orange 0..3")
    return blue, orange


def opposed_team_size(text: str) -> tuple[int, int]:
    """team_size for games between two policies: both teams need at least one car."""
    blue, orange = team_size(text)
    if orange == 0:
        raise argparse.ArgumentTypeError(f"--team-size {text!r}: both teams need at least one car")
    return blue, orange


def warn_team_size(specs: list[str], blue: int, orange: int) -> list[str]:
    """Print to stderr, and return, a warning for each checkpoint in `specs` that was neither trained nor measured
    at blue v orange (rocketrl.league.team_sizes); scripted policies play any size and get none."""
    from rocketrl.league.team_sizes import checkpoint_team_size_warning

    warnings = [w for w in (checkpoint_team_size_warning(s, blue, orange) for s in dict.fromkeys(specs)) if w]
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr, flush=True)
    return warnings
