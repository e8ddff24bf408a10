"""Nexto, a published community bot, as an opponent: its TorchScript actor fed from our observation.

Nexto (RLGym's second community bot, about Grand Champion 1 in 1v1, 2v2 and 3v3 by its authors' account) acts
every 8 ticks from an attention observation: one query (this car's 24 features and its previous controls) and
one key per object on the field (cars, ball, 34 boost pads), 24 features each, normalized and seen from its own
team's side, relative to and rotated into its car's heading. Its 90 actions are the same lookup table as ours.

The actor file, `nexto-model.pt`, is not part of rocketrl (its licence is CC BY-NC-SA 4.0): it is published in
the Necto repository (github.com/Rolv-Arild/Necto, `rlbot-support/Nexto/nexto-model.pt`). Name it as a policy
with `nexto:PATH`, e.g. `rocketrl eval --checkpoint pretrained --opponents nexto:nexto-model.pt`.

What our 180-float observation cannot give it (see `nexto_inputs`): the other cars' angular velocity (zero
here), and its RLBot bot's scripted 120 Hz speed-flip kickoff, which an 8-tick step cannot play; it takes
kickoffs with its network, as it was trained. It acts greedily, as its RLBot bot does outside kickoffs.
TorchScript is loaded with torch.jit.load, whose reader builds only TorchScript modules and tensors.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import torch

from rocketrl.env import obs as layout
from rocketrl.policy.base import PolicyState
from rocketrl.sim.arena import BOOST_PADS, MAX_TEAM_SIZE

SOURCE = "github.com/Rolv-Arild/Necto, file rlbot-support/Nexto/nexto-model.pt"

FEATURES = 24
IS_SELF, IS_MATE, IS_OPPONENT, IS_BALL, IS_PAD = range(5)
POS, VEL, FORWARD, UP, ANG_VEL = slice(5, 8), slice(8, 11), slice(11, 14), slice(14, 17), slice(17, 20)
BOOST, DEMOLISHED, ON_GROUND, HAS_FLIP = range(20, 24)
DISTANCE_SCALE = 2300.0
ANG_VEL_SCALE = 5.5
SMALL_PAD, BIG_PAD = 0.12, 1.0
NUM_OTHERS = layout.NUM_OTHER_SLOTS
NUM_KEYS = 1 + NUM_OTHERS + 1 + len(BOOST_PADS)
"""Keys per agent: this car, the five other car slots, the ball, the pads (absent cars are masked)."""

_BALL_ANG_VEL_TO_NEXTO = (1.0 / layout.BALL_ANG_VEL_SCALE) / ANG_VEL_SCALE


def _pad_keys() -> torch.Tensor:
    """The 34 pad keys (34, 24) before the relative transform: position / 2300, size, and 'active' left zero."""
    keys = torch.zeros(len(BOOST_PADS), FEATURES)
    keys[:, IS_PAD] = 1.0
    keys[:, POS] = torch.tensor([pad[:3] for pad in BOOST_PADS]) / DISTANCE_SCALE
    keys[:, BOOST] = torch.tensor([BIG_PAD if pad[3] else SMALL_PAD for pad in BOOST_PADS])
    return keys


_PAD_KEYS = _pad_keys()


def check_obs(obs: torch.Tensor, who: str) -> None:
    """Raise ValueError unless obs is (N, 180)."""
    if obs.dim() != 2 or obs.shape[1] != layout.OBS_SIZE:
        raise ValueError(f"{who} reads observations of shape (N, {layout.OBS_SIZE}); got {tuple(obs.shape)}")


def entity_features(obs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The 24 features of every object, as Nexto and Necto lay them out, from our observations (N, 180):
    this car (N, 24), the five other car slots (N, 5, 24; teammates then opponents, angular velocity zero as our
    observation does not carry it), which slots hold a car (N, 5) bool, the ball (N, 1, 24) and the pads (N, 34,
    24; 'active' in the demolished slot). Absolute, / 2300 (angular velocity / 5.5), seen from the agent's side.

    Our observation already sees the field from the agent's side (x and y negated for orange, pads in mirrored
    order), as theirs do; positions and velocities are / 2300 in both, car angular velocity / 5.5 in both and
    boost 0-1. The agent's pad order lists pad i at pad i's blue-side place, so the pad keys are the same set."""
    n, device = obs.shape[0], obs.device
    obs = obs.float()
    me = torch.zeros(n, FEATURES, device=device)
    me[:, IS_SELF] = 1.0
    me[:, IS_MATE] = 1.0
    me[:, POS] = obs[:, layout.CAR_POS]
    me[:, VEL] = obs[:, layout.CAR_VEL]
    me[:, FORWARD] = obs[:, layout.CAR_FORWARD]
    me[:, UP] = obs[:, layout.CAR_UP]
    me[:, ANG_VEL] = obs[:, layout.CAR_ANG_VEL]
    me[:, BOOST] = obs[:, layout.CAR_BOOST]
    me[:, DEMOLISHED] = obs[:, layout.CAR_DEMOLISHED]
    me[:, ON_GROUND] = obs[:, layout.CAR_ON_GROUND]
    me[:, HAS_FLIP] = obs[:, layout.CAR_HAS_FLIP]

    slots = obs[:, layout.OTHERS].reshape(n, NUM_OTHERS, layout.OTHER_SIZE)
    others = torch.zeros(n, NUM_OTHERS, FEATURES, device=device)
    others[:, : MAX_TEAM_SIZE - 1, IS_MATE] = 1.0
    others[:, MAX_TEAM_SIZE - 1 :, IS_OPPONENT] = 1.0
    others[..., POS] = me[:, None, POS] + slots[..., 0:3]
    others[..., VEL] = slots[..., 6:9]
    others[..., FORWARD] = slots[..., 9:12]
    others[..., UP] = slots[..., 12:15]
    others[..., BOOST] = slots[..., 15]
    others[..., ON_GROUND] = slots[..., 16]
    others[..., HAS_FLIP] = slots[..., 17]
    others[..., DEMOLISHED] = slots[..., 18]
    present = slots[..., layout.OTHER_PRESENT] > 0.5

    ball = torch.zeros(n, 1, FEATURES, device=device)
    ball[:, 0, IS_BALL] = 1.0
    ball[:, 0, POS] = obs[:, layout.BALL_POS]
    ball[:, 0, VEL] = obs[:, layout.BALL_VEL]
    ball[:, 0, ANG_VEL] = obs[:, 6:9] * _BALL_ANG_VEL_TO_NEXTO

    pads = _PAD_KEYS.to(device).expand(n, -1, -1).clone()
    pads[..., DEMOLISHED] = obs[:, layout.PADS]
    return me, others, present, ball, pads


def previous_controls(obs: torch.Tensor) -> torch.Tensor:
    """The agent's previous controls (N, 8) in our observation."""
    return obs[:, layout.BALL_SIZE : layout.BALL_SIZE + layout.CONTROLS_SIZE].float()


def absent_mask(present: torch.Tensor, before: int, after: int) -> torch.Tensor:
    """The attention mask (N, before + 5 + after): 0 where a key is on the field, -inf for an empty car slot
    (both actors add it to the attention logits)."""
    n = present.shape[0]
    mask = torch.zeros(n, before + NUM_OTHERS + after, device=present.device)
    mask[:, before : before + NUM_OTHERS] = torch.where(present, 0.0, -math.inf)
    return mask


def nexto_inputs(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Our observations (N, 180) -> Nexto's (query (N, 1, 32), keys (N, 41, 24), mask (N, 41)).

    Keys: this car, the five other car slots, the ball and the 34 pads (`entity_features`). Every key's position
    is then relative to this car, and every vector's x and y turned so that the car's heading is +y; the query
    (this car's features and its previous controls) stays as it is. Empty car slots are all zero and masked.
    """
    check_obs(obs, "Nexto")
    me, others, present, ball, pads = entity_features(obs)
    n = obs.shape[0]
    query = torch.cat([me, previous_controls(obs)], dim=-1)
    keys = torch.cat([me.unsqueeze(1), others, ball, pads], dim=1)
    keys[..., POS] = keys[..., POS] - me[:, None, POS]
    heading = torch.atan2(me[:, FORWARD.start], me[:, FORWARD.start + 1]).view(n, 1, 1)
    cos, sin = torch.cos(heading), torch.sin(heading)
    x = keys[..., POS.start : ANG_VEL.stop : 3].clone()
    y = keys[..., POS.start + 1 : ANG_VEL.stop : 3].clone()
    keys[..., POS.start : ANG_VEL.stop : 3] = cos * x - sin * y
    keys[..., POS.start + 1 : ANG_VEL.stop : 3] = sin * x + cos * y
    keys[:, 1 : 1 + NUM_OTHERS] = keys[:, 1 : 1 + NUM_OTHERS] * present.unsqueeze(-1)  # empty slots all zero
    return query.unsqueeze(1), keys, absent_mask(present, 1, 1 + len(BOOST_PADS))


def load_torchscript(path: str | Path, device: str | torch.device, who: str, source: str) -> torch.jit.ScriptModule:
    """A community bot's TorchScript actor, with errors that name the file and where to get it."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{who}: no file at {path}; its actor is not part of rocketrl (CC BY-NC-SA 4.0): get it from {source} "
            f"and give its path, e.g. {who}:path/to/{Path(source.split()[-1]).name}"
        )
    try:
        with warnings.catch_warnings():  # torch 2.9+ marks TorchScript deprecated; the file is TorchScript
            warnings.simplefilter("ignore", DeprecationWarning)
            model = torch.jit.load(str(path), map_location=torch.device(device))
    except RuntimeError as error:
        raise ValueError(
            f"{who}: {path} is not a TorchScript actor ({str(error).splitlines()[0]}); expected the file from {source}"
        ) from error
    model.eval()
    return model


class NextoPolicy:
    """Nexto's actor as a Policy: greedy indices into the 90-row lookup table (ours is the same table)."""

    action_kind = "discrete"

    def __init__(self, path: str | Path, device: str | torch.device = "cpu") -> None:
        self.model = load_torchscript(path, device, "nexto", SOURCE)
        self.device = torch.device(device)

    def initial_state(self, batch: int, device: torch.device | str) -> PolicyState:
        return None

    @torch.no_grad()
    def act(self, obs: torch.Tensor, state: PolicyState = None) -> tuple[torch.Tensor, PolicyState]:
        """obs (N, 180) -> (action indices (N,), None)."""
        if obs.shape[0] == 0:
            return torch.zeros(0, dtype=torch.long, device=obs.device), None
        query, keys, mask = nexto_inputs(obs.to(self.device))
        logits, _ = self.model((query, keys, mask))
        return logits.reshape(obs.shape[0], -1).argmax(dim=-1).to(obs.device), None
