"""The configuration summary a training run prints at start-up."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocketrl.ppo.trainer import Trainer


def _precision_text(trainer: Trainer) -> str:
    """fp32, or the autocast dtype and how the rollouts act."""
    chosen = f" (speed.amp auto: {trainer.amp_reason})" if trainer.cfg.speed.amp == "auto" else ""
    if trainer.amp_dtype is None:
        return "fp32" + chosen
    acting = "a bf16 copy of the weights" if trainer.acting_copy is not None else "autocast"
    return f"{trainer.amp_mode} autocast in the update, rollouts act on {acting}{chosen}"


def _engine_text(trainer: Trainer) -> str:
    """The engine, how it steps, and why when `env.stepping: auto` chose."""
    engine, cfg = trainer.env.engine, trainer.cfg.env
    text = f"{cfg.engine} ({engine.stepping}, {engine.num_workers} workers)"
    reason = engine.stepping_reason
    return text + (f" (env.stepping auto: {reason})" if cfg.stepping == "auto" and reason else "")


def summarize(trainer: Trainer) -> str:
    """The configuration summary printed at start-up."""
    import getpass

    cfg, p, m, sp = trainer.cfg, trainer.cfg.ppo, trainer.cfg.model, trainer.cfg.speed
    cuda = trainer.device.type == "cuda"
    params = sum(x.numel() for x in trainer.model.parameters())
    batch = p.rollout_steps * trainer.num_agents
    lines = [
        f"user          {cfg.run.user or getpass.getuser()}",
        f"run           {trainer.run_dir}",
        f"device        {trainer.device}   precision {_precision_text(trainer)}",
        f"engine        {_engine_text(trainer)}",
        f"arenas        {cfg.arenas} x {trainer.env.config.blue_size}v{trainer.env.config.orange_size}, "
        f"{trainer.num_agents} learner agents ({_opponents_text(trainer)})",
        f"network       {'LSTM ' + str(m.lstm_hidden) + ' + ' if m.lstm else ''}actor {m.actor_hidden} "
        f"critic {m.critic_hidden} {m.activation}, {params:,} parameters",
        f"batch         {batch:,} = {p.rollout_steps} steps x {trainer.num_agents} agents, "
        f"{p.minibatches} minibatches of {batch // p.minibatches:,}, {p.epochs} epochs",
        f"learning rate {p.learning_rate:g} ({p.lr_schedule})",
        f"entropy coef  {p.entropy_coef:g}"
        + (f" -> {p.resolved_entropy_coef_end:g} ({p.entropy_schedule})" if p.entropy_schedule != "constant" else ""),
        f"checkpoints   every {cfg.run.checkpoint_interval:,} steps"
        + (f" or {cfg.run.checkpoint_minutes:g} minutes" if cfg.run.checkpoint_minutes is not None else "")
        + f", keep best {cfg.run.keep_best} by {cfg.run.best_by}"
        + (f" and one every {cfg.run.keep_every:,} steps" if cfg.run.keep_every is not None else ""),
        f"timesteps     {cfg.run.timesteps:,}",
        f"speed         amp={sp.amp}{' (fp32 on this device)' if sp.amp == 'fp16' and not cuda else ''}"
        f"{' -> ' + trainer.amp_mode if sp.amp == 'auto' else ''}, "
        f"compile={'on' if sp.compile else 'off'}, env.compile={'on' if cfg.env.compile else 'off'}, "
        f"compile_rule={'on' if sp.compile_rule else 'off'}, "
        f"pinned host memory={'off' if not cfg.env.pin_memory else 'active' if cuda else 'inactive on CPU'}, "
        f"torch threads rollout={sp.rollout_threads or 'default'} learn={sp.learn_threads or 'default'}",
    ]
    return "\n".join(lines)


def _opponents_text(trainer: Trainer) -> str:
    league = trainer.league
    if league is None:
        return "self-play, one policy"
    plan = trainer.plan
    counts = plan.counts if plan is not None else {"selfplay": trainer.env.num_arenas}
    text = "arenas: " + ", ".join(f"{kind} {count}" for kind, count in counts.items() if count)
    if league.curriculum is not None:
        stages = " -> ".join(s.name for s in league.curriculum.stages)
        text += f"; curriculum stage {league.curriculum.index + 1}/{len(league.curriculum.stages)}: {stages}"
    return text
