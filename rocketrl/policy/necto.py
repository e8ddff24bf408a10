"""Necto, the first published community bot, as an opponent: its TorchScript actor fed from our observation.

Necto (RLGym's first community bot, about Diamond by its authors' account, winner of the 2022 RLBot Championship)
reads the same 24 features per object as Nexto (`rocketrl.policy.nexto`) with three differences, all kept here as
its RLBot bot has them: the ball comes first, positions and velocities are made relative to its car without
turning them to its heading, and the demolished slot holds two timers its RLBot bot keeps itself: on every pad
a countdown that starts at 0.4 (small pad) or 1.0 (big) while the pad is active and restarts when it reaches 0,
and on every car one that starts at 0.3 and runs down over 45 steps, restarting likewise (both cleared at each
kickoff). Those timers are this policy's recurrent state. It acts with five heads (throttle and pitch, steer with
yaw or roll, jump, boost, handbrake), each greedily, every 8 ticks; its RLBot bot plays kickoffs with its network
too. Name it with `necto:PATH`; the actor file (`rlbot-support/Necto/necto-model.pt` in the Necto repository) is
not part of rocketrl (CC BY-NC-SA 4.0).
"""

from __future__ import annotations

from pathlib import Path

import torch

from rocketrl.policy.base import PolicyState
from rocketrl.policy.nexto import (
    DEMOLISHED,
    POS,
    VEL,
    absent_mask,
    check_obs,
    entity_features,
    load_torchscript,
    previous_controls,
)
from rocketrl.sim.arena import BOOST_PADS

SOURCE = "github.com/Rolv-Arild/Necto, file rlbot-support/Necto/necto-model.pt"

STEP_SECONDS = 8 / 120
PAD_TIMER_START = torch.tensor([1.0 if pad[3] else 0.4 for pad in BOOST_PADS], dtype=torch.float64)
PAD_TIMER_STEP = 8 / 1200
CAR_TIMER_START = 3.0
CAR_TIMER_SCALE = 0.1


def advance_timers(
    pad_active: torch.Tensor, pad_timers: torch.Tensor, car_timer: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One step of Necto's timers (float64, as its bot keeps them). pad_active (N, 34) 0/1, pad_timers (N, 34),
    car_timer (N, 1) -> (pad values shown (N, 34), car value shown (N, 1), next pad_timers, next car_timer)."""
    active = pad_active.to(torch.float64)
    start = PAD_TIMER_START.to(pad_timers.device)
    pads = torch.where((active == 1) & (pad_timers == 0), start, pad_timers) * active
    next_pads = (pads - PAD_TIMER_STEP).clamp(min=0.0)
    car = torch.where(
        car_timer <= 0, torch.full_like(car_timer, CAR_TIMER_START), (car_timer - STEP_SECONDS).clamp(min=0.0)
    )
    return pads, car * CAR_TIMER_SCALE, next_pads, car


def necto_inputs(
    obs: torch.Tensor, pad_timers: torch.Tensor, car_timer: torch.Tensor
) -> tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor, torch.Tensor]:
    """Our observations (N, 180) and the timers (N, 34), (N, 1) -> ((query (N, 1, 32), keys (N, 41, 24), mask
    (N, 41)), next pad timers, next car timer). Keys: the ball, this car, the five other car slots (empty ones all
    zero and masked), the 34 pads; positions and velocities relative to this car."""
    check_obs(obs, "Necto")
    me, others, present, ball, pads = entity_features(obs)
    pad_values, car_value, next_pads, next_car = advance_timers(pads[..., DEMOLISHED], pad_timers, car_timer)
    me[:, DEMOLISHED] = car_value[:, 0].float()
    others[..., DEMOLISHED] = car_value.float()
    pads[..., DEMOLISHED] = pad_values.float()
    query = torch.cat([me, previous_controls(obs)], dim=-1)
    keys = torch.cat([ball, me.unsqueeze(1), others, pads], dim=1)
    keys[..., POS.start : VEL.stop] = keys[..., POS.start : VEL.stop] - me[:, None, POS.start : VEL.stop]
    keys[:, 2 : 2 + others.shape[1]] = keys[:, 2 : 2 + others.shape[1]] * present.unsqueeze(-1)
    mask = absent_mask(present, 2, len(BOOST_PADS))
    return (query.unsqueeze(1), keys, mask), next_pads, next_car


def controls_from_heads(choices: torch.Tensor) -> torch.Tensor:
    """Necto's five choices (N, 5): throttle/pitch 0-2, steer 0-2, jump, boost, handbrake 0-1 -> controls (N, 8):
    throttle, steer, pitch, yaw (steer without handbrake), roll (steer with it), jump, boost, handbrake."""
    throttle, steer = choices[:, 0].float() - 1, choices[:, 1].float() - 1
    jump, boost, handbrake = choices[:, 2].float(), choices[:, 3].float(), choices[:, 4].float()
    return torch.stack(
        [throttle, steer, throttle, steer * (1 - handbrake), steer * handbrake, jump, boost, handbrake], dim=-1
    )


class NectoPolicy:
    """Necto's actor as a Policy: controls (N, 8) from its five heads, greedily; its timers are the state."""

    action_kind = "controls"

    def __init__(self, path: str | Path, device: str | torch.device = "cpu") -> None:
        self.model = load_torchscript(path, device, "necto", SOURCE)
        self.device = torch.device(device)

    def initial_state(self, batch: int, device: torch.device | str) -> PolicyState:
        """Both timers cleared: (pad timers (1, batch, 34), car timer (1, batch, 1)), float64."""
        return (
            torch.zeros(1, batch, len(BOOST_PADS), dtype=torch.float64, device=device),
            torch.zeros(1, batch, 1, dtype=torch.float64, device=device),
        )

    @torch.no_grad()
    def act(self, obs: torch.Tensor, state: PolicyState = None) -> tuple[torch.Tensor, PolicyState]:
        """obs (N, 180) -> (controls (N, 8), next timers)."""
        n = obs.shape[0]
        if state is None:
            state = self.initial_state(n, obs.device)
        if n == 0:
            return torch.zeros(0, 8, device=obs.device), state
        inputs, pads, car = necto_inputs(obs.to(self.device), state[0][0].to(self.device), state[1][0].to(self.device))
        heads, _ = self.model(inputs)
        choices = torch.stack([head.reshape(n, -1).argmax(dim=-1) for head in heads], dim=-1)
        return controls_from_heads(choices).to(obs.device), (
            pads.unsqueeze(0).to(obs.device),
            car.unsqueeze(0).to(obs.device),
        )
