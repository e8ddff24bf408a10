"""The PPO update: several epochs of clipped PPO over shuffled minibatches of one rollout."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import torch

from rocketrl.policy.actor_critic import ActorCritic
from rocketrl.ppo.loss import explained_variance, normalize_advantages, ppo_losses
from rocketrl.ppo.schedules import set_learning_rate
from rocketrl.ppo.storage import RolloutStorage
from rocketrl.ppo.train_config import PPOConfig


@dataclass
class UpdateStats:
    """Means over the minibatches of one update."""

    values: dict[str, float] = field(default_factory=dict)


def ppo_update(
    model: ActorCritic,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    storage: RolloutStorage,
    p: PPOConfig,
    learning_rate: float,
    entropy_coef: float,
    shuffle: torch.Generator,
    autocast: Callable[[], AbstractContextManager],
    imitation_coef: float = 0.0,
) -> tuple[UpdateStats, int]:
    """Update `model` from the rollout in `storage` (advantages and returns filled in).

    Runs `p.epochs` passes over `p.minibatches` shuffled minibatches, stopping early once a minibatch's
    approximate KL exceeds `p.target_kl`. A minibatch whose loss or gradient norm is not finite changes no
    weight. Returns (means of the loss terms, grad norm, explained variance and learning rate; the number
    of minibatches skipped as non-finite). With `imitation_coef` > 0 and teacher actions in the storage, the
    loss adds imitation_coef * mean(-log pi(teacher action)) (ppo/imitation.py).
    """
    set_learning_rate(optimizer, learning_rate)
    sums: dict[str, float] = {}
    count = skipped = 0
    for _epoch in range(p.epochs):
        kl_exceeded = False
        for mb in storage.minibatches(p.minibatches, generator=shuffle):
            teacher = mb.teacher_actions if imitation_coef > 0 else None
            with autocast():
                logprob, entropy, value, teacher_logprob = model.evaluate_with_teacher(
                    mb.obs, mb.actions, teacher, mb.state, mb.episode_start
                )
            adv = normalize_advantages(mb.advantages) if p.normalize_advantages else mb.advantages
            terms = ppo_losses(
                logprob.reshape(-1),
                mb.logprobs.reshape(-1),
                adv.reshape(-1),
                value.reshape(-1),
                mb.values.reshape(-1),
                mb.returns.reshape(-1),
                entropy.reshape(-1),
                p.clip_coef,
                p.value_clip_coef,
            )
            loss = terms.policy + p.value_coef * terms.value - entropy_coef * terms.entropy
            imitation = -teacher_logprob.mean() if teacher_logprob is not None else None
            if imitation is not None:
                loss = loss + imitation_coef * imitation
            optimizer.zero_grad(set_to_none=True)
            if not torch.isfinite(loss):
                skipped += 1
                continue
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), p.max_grad_norm)
            if not torch.isfinite(grad_norm):
                # A non-finite gradient never reaches the weights (nor, so, a checkpoint).
                optimizer.zero_grad(set_to_none=True)
                scaler.update()
                skipped += 1
                continue
            scaler.step(optimizer)
            scaler.update()
            count += 1
            for name, value_t in (
                ("policy", terms.policy),
                ("value", terms.value),
                ("entropy", terms.entropy),
                ("approx_kl", terms.approx_kl),
                ("clipfrac", terms.clipfrac),
                ("grad_norm", grad_norm),
            ):
                sums[name] = sums.get(name, 0.0) + float(value_t.detach())
            if imitation is not None:
                sums["imitation"] = sums.get("imitation", 0.0) + float(imitation.detach())
            if p.target_kl is not None and float(terms.approx_kl) > p.target_kl:
                kl_exceeded = True
                break
        if kl_exceeded:
            break
    stats = {name: total / max(1, count) for name, total in sums.items()}
    stats["explained_variance"] = float(explained_variance(storage.values, storage.returns))
    stats["learning_rate"] = optimizer.param_groups[0]["lr"]
    stats["entropy_coef"] = entropy_coef
    if imitation_coef > 0:
        stats["imitation_coef"] = imitation_coef
    return UpdateStats(stats), skipped
