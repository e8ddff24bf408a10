"""`speed.amp: auto`: a probe of a second or two picks fp32 or bf16 for this machine and network.

bf16 pays only where the hardware multiplies bf16 matrices natively (CPUs with AMX or AVX512-BF16, recent
GPUs); elsewhere, e.g. on many AMD EPYC and older Intel CPUs, it runs 2-3x slower than fp32. The probe
times one update cycle of the run's own network both ways, as training would run it: `acting_calls`
acting forwards at the acting batch (bf16: on a bf16 copy of the weights, or under autocast for an LSTM)
and `update_calls` forward and backward passes of the actor and critic at the minibatch size (bf16: under
autocast). bf16 is chosen only when it is at least MIN_GAIN faster; the answer is cached per machine
(`infra.machine_cache`), so later runs start at once.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from rocketrl.infra import machine_cache
from rocketrl.policy.actor_critic import ActorCritic

MIN_GAIN = 0.10
"""bf16 must save at least this share of the fp32 cycle time to be chosen (probe noise is a few percent)."""
SECONDS_PER_TIMING = 0.2
"""Wall time each of the four timings runs for, after two warm-up calls."""
PROBE = "amp"


@dataclass(frozen=True)
class AmpChoice:
    """What `speed.amp: auto` resolved to and why."""

    mode: str
    """'off' (fp32) or 'bf16'."""
    reason: str
    """One line for the start-up summary: the measured cycle times, or why nothing was measured."""


def _seconds_per_call(fn: Callable[[], object], device: torch.device) -> float:
    """Mean wall seconds of one call of `fn`, over about SECONDS_PER_TIMING after two warm-up calls."""

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    fn()
    fn()
    sync()
    calls, started = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        if calls % 4 == 0:
            sync()
            elapsed = time.perf_counter() - started
            if elapsed >= SECONDS_PER_TIMING:
                return elapsed / calls


def cycle_seconds(
    model: ActorCritic, device: torch.device, acting_batch: int, minibatch: int, acting_calls: int, update_calls: int
) -> dict[str, float]:
    """{'off': s, 'bf16': s}: wall seconds of one update cycle's network work in fp32 and in bf16 (inf where
    bf16 does not run at all on this device)."""
    model = copy.deepcopy(model).to(device)
    features = model.lstm_hidden if model.lstm is not None else model.obs_size
    obs = torch.randn(acting_batch, model.obs_size, device=device)
    state = model.initial_state(acting_batch, device)
    head_input = torch.randn(minibatch, features, device=device)
    actions = torch.randint(0, model.num_actions, (minibatch,), device=device) if model.discrete else None

    def update(dtype: torch.dtype | None) -> Callable[[], None]:
        def run() -> None:
            with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
                dist = model.distribution(head_input)
                taken = actions if actions is not None else dist.sample()
                loss = dist.log_prob(taken).mean() + dist.entropy().mean() + model.critic(head_input).float().mean()
            model.zero_grad(set_to_none=True)
            loss.backward()

        return run

    bf16_copy = copy.deepcopy(model).to(torch.bfloat16).requires_grad_(False) if model.lstm is None else None

    def act_fp32() -> None:
        with torch.no_grad():
            model.act(obs, state)

    def act_bf16() -> None:
        with torch.no_grad():
            if bf16_copy is not None:
                bf16_copy.act(obs.to(torch.bfloat16), None)
            else:
                with torch.autocast(device.type, dtype=torch.bfloat16):
                    model.act(obs, state)

    times = {
        "off": acting_calls * _seconds_per_call(act_fp32, device)
        + update_calls * _seconds_per_call(update(None), device)
    }
    try:
        times["bf16"] = acting_calls * _seconds_per_call(act_bf16, device) + update_calls * _seconds_per_call(
            update(torch.bfloat16), device
        )
    except RuntimeError:  # e.g. oneDNN has no bf16 LSTM on a CPU without bf16 instructions
        times["bf16"] = math.inf
    return times


def choose_amp(
    model: ActorCritic, device: torch.device, acting_batch: int, minibatch: int, acting_calls: int, update_calls: int
) -> AmpChoice:
    """Resolve `speed.amp: auto` for this machine and network: from the cache, else by measuring (then cached)."""
    if device.type == "cpu" and not machine_cache.machine_fingerprint(device)["cpu_bf16_flags"]:
        return AmpChoice("off", "fp32: this CPU has no bf16 matrix instructions (amx_bf16, avx512_bf16)")
    fingerprint = machine_cache.machine_fingerprint(device)
    subject = {
        "obs": model.obs_size,
        "actions": model.num_actions,
        "lstm": model.lstm_hidden if model.lstm is not None else 0,
        "actor": [m.out_features for m in model.actor if isinstance(m, torch.nn.Linear)],
        "critic": [m.out_features for m in model.critic if isinstance(m, torch.nn.Linear)],
        "acting_batch": acting_batch,
        "minibatch": minibatch,
        "acting_calls": acting_calls,
        "update_calls": update_calls,
    }
    cached = machine_cache.read_cached(PROBE, fingerprint, subject)
    if cached is not None and cached.get("mode") in ("off", "bf16"):
        return AmpChoice(cached["mode"], f"{cached['reason']} (cached)")
    rng = torch.get_rng_state()
    try:
        times = cycle_seconds(model, device, acting_batch, minibatch, acting_calls, update_calls)
    finally:
        torch.set_rng_state(rng)  # the probe's random inputs leave the run's random stream untouched
    mode = "bf16" if times["bf16"] <= (1.0 - MIN_GAIN) * times["off"] else "off"
    if math.isinf(times["bf16"]):
        reason = "fp32: bf16 does not run for this network on this device"
    else:
        reason = (
            f"{'bf16' if mode == 'bf16' else 'fp32'}: an update cycle's network work took "
            f"{1000 * times['off']:.0f} ms in fp32 and {1000 * times['bf16']:.0f} ms in bf16 on this machine"
        )
    try:
        machine_cache.write_cached(PROBE, fingerprint, subject, {"mode": mode, "reason": reason, "times": times})
    except OSError:
        pass  # an unwritable cache only means the next run measures again
    return AmpChoice(mode, reason)
