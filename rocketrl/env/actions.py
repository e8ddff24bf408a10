"""Action parsers: policy outputs -> car controls (A, C, 8), checked before they reach the engine.

Controls columns: throttle, steer, pitch, yaw, roll in [-1, 1]; jump, boost, handbrake as 0/1.
"""

from __future__ import annotations

import itertools

import torch

NUM_CONTROLS = 8


class InvalidActionError(ValueError):
    """An action batch had the wrong shape or type, a NaN or inf, or an index out of range."""


def lookup_table() -> torch.Tensor:
    """The standard 90-entry Rocket League lookup table (90, 8) of ground and aerial actions.

    Ground rows: every throttle, steer, boost, handbrake, boosting only at full throttle (24 rows).
    Aerial rows: every pitch, yaw, roll, jump, boost; a jump carries no yaw (dodges use roll), the
    no-input case is left to the ground rows, and a jump with a direction holds handbrake (66 rows).
    """
    rows: list[list[float]] = []
    for throttle, steer, boost, handbrake in itertools.product((-1, 0, 1), (-1, 0, 1), (0, 1), (0, 1)):
        if boost == 1 and throttle != 1:
            continue
        rows.append([throttle or boost, steer, 0, steer, 0, 0, boost, handbrake])
    for pitch, yaw, roll, jump, boost in itertools.product((-1, 0, 1), (-1, 0, 1), (-1, 0, 1), (0, 1), (0, 1)):
        if jump == 1 and yaw != 0:
            continue
        if pitch == roll == jump == 0:
            continue
        handbrake = int(jump == 1 and (pitch != 0 or yaw != 0 or roll != 0))
        rows.append([boost, yaw, pitch, yaw, roll, jump, boost, handbrake])
    return torch.tensor(rows, dtype=torch.float32)


class LookupTableAction:
    """Discrete actions: an index (A, C) into the 90-row lookup table."""

    kind = "discrete"

    def __init__(self, device: torch.device | str = "cpu") -> None:
        self.table = lookup_table().to(device)
        self.num_actions = self.table.shape[0]

    def parse(self, actions: torch.Tensor, num_arenas: int, num_cars: int, validate: bool = True) -> torch.Tensor:
        """Indices (A, C) (or (A, C, 1)) of an integer dtype -> controls (A, C, 8).

        validate=False skips the checks (shape, dtype, NaN, range) for callers that guarantee them.
        """
        if actions.dim() == 3 and actions.shape[-1] == 1:
            actions = actions.squeeze(-1)
        if validate:
            self._check(actions, (num_arenas, num_cars))
        return self.table[actions.long().to(self.table.device)]

    def _check(self, actions: torch.Tensor, expected: tuple[int, int]) -> None:
        if tuple(actions.shape) != expected:
            raise InvalidActionError(
                f"discrete actions have shape {tuple(actions.shape)}, expected {expected} (arenas, cars) of indices"
            )
        if actions.dtype.is_floating_point:
            if not torch.isfinite(actions).all():
                raise InvalidActionError("discrete actions contain NaN or inf; expected integer indices 0..89")
            if (actions != actions.round()).any():
                raise InvalidActionError("discrete actions must be whole numbers (indices 0..89)")
        elif actions.dtype == torch.bool or actions.is_complex():
            raise InvalidActionError(f"discrete actions have dtype {actions.dtype}; expected an integer dtype")
        index = actions.long()
        bad = (index < 0) | (index >= self.num_actions)
        if bad.any():
            first = int(index[bad][0])
            raise InvalidActionError(
                f"discrete action index {first} is out of range; valid indices are 0..{self.num_actions - 1}"
            )


class ContinuousAction:
    """Continuous actions (A, C, 8): the first five clipped to [-1, 1]; jump, boost and handbrake
    are on when their value is above 0."""

    kind = "continuous"
    num_actions = NUM_CONTROLS

    def parse(self, actions: torch.Tensor, num_arenas: int, num_cars: int, validate: bool = True) -> torch.Tensor:
        """Controls (A, C, 8) -> controls (A, C, 8); validate=False skips the shape, dtype and NaN checks."""
        if validate:
            expected = (num_arenas, num_cars, NUM_CONTROLS)
            if tuple(actions.shape) != expected:
                raise InvalidActionError(
                    f"continuous actions have shape {tuple(actions.shape)}, expected {expected} "
                    "(arenas, cars, controls)"
                )
            if not actions.dtype.is_floating_point:
                raise InvalidActionError(f"continuous actions have dtype {actions.dtype}; expected a float dtype")
            if not torch.isfinite(actions).all():
                raise InvalidActionError("continuous actions contain NaN or inf; every control must be finite")
        analog = actions[..., :5].clamp(-1.0, 1.0)
        buttons = (actions[..., 5:] > 0).to(analog.dtype)
        return torch.cat([analog, buttons], dim=-1).float()


def make_action_parser(kind: str, device: torch.device | str = "cpu") -> LookupTableAction | ContinuousAction:
    """'discrete' (the 90-entry lookup table) or 'continuous' (Box(8))."""
    if kind == "discrete":
        return LookupTableAction(device)
    if kind == "continuous":
        return ContinuousAction()
    raise ValueError(f"action={kind!r} is unknown; choose 'discrete' or 'continuous'")
