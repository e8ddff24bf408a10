"""Start-up helpers of a training run: the run folder, the configuration summary and the fail-fast check."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from rocketrl.config import TrainConfig, config_to_dict, save_resolved_config

if TYPE_CHECKING:
    from rocketrl.ppo.trainer import Trainer


def _precision_text(trainer: Trainer) -> str:
    """fp32, or the autocast dtype and how the rollouts act."""
    if trainer.amp_dtype is None:
        return "fp32"
    acting = "a bf16 copy of the weights" if trainer.acting_copy is not None else "autocast"
    return f"{trainer.cfg.speed.amp} autocast in the update, rollouts act on {acting}"


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
        f"engine        {cfg.env.engine} ({cfg.env.stepping}, {trainer.env.engine.num_workers} workers)",
        f"arenas        {cfg.env.num_arenas} x {trainer.env.config.blue_size}v{trainer.env.config.orange_size}, "
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
        + f", keep best {cfg.run.keep_best} by {cfg.run.best_by}",
        f"timesteps     {cfg.run.timesteps:,}",
        f"speed         amp={sp.amp}{' (fp32 on this device)' if sp.amp == 'fp16' and not cuda else ''}, "
        f"compile={'on' if sp.compile else 'off'}, compile_env={'on' if cfg.env.compile else 'off'}, "
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


def uses_league(cfg: TrainConfig) -> bool:
    """A league is needed for opponents other than self-play, a curriculum, evaluation matches or replays."""
    lg = cfg.league
    return not lg.pure_selfplay or lg.curriculum is not None or lg.eval_interval > 0 or lg.replay_top > 0


def make_run_dir(cfg: TrainConfig) -> Path:
    """<logdir>/<name> with the resolved config written inside. Resuming reuses the run's folder:
    the folder of the checkpoint given, or with 'latest' and no name the newest run with checkpoints."""
    name = cfg.run.name
    if name is None and cfg.run.resume:
        if cfg.run.resume == "latest":
            runs = [d for d in Path(cfg.run.logdir).glob("*/checkpoints") if any(d.glob("*.safetensors"))]
            if not runs:
                raise FileNotFoundError(f"--resume latest: no run with checkpoints in {cfg.run.logdir}")
            return _prepare_run_dir(max(runs, key=lambda d: d.stat().st_mtime).parent, cfg)
        return _prepare_run_dir(Path(cfg.run.resume).resolve().parent.parent, cfg)
    return _prepare_run_dir(Path(cfg.run.logdir) / (name or time.strftime("run-%Y%m%d-%H%M%S")), cfg)


def _prepare_run_dir(run_dir: Path, cfg: TrainConfig) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    save_resolved_config(cfg, run_dir / "config.yaml")
    (run_dir / "config.json").write_text(json.dumps(config_to_dict(cfg), indent=2))
    return run_dir


def verify(trainer: Trainer) -> None:
    """Fail fast: one env step and one forward pass, spaces agree with the network.

    Leaves every random generator as it found it, so verification does not change the run.
    """
    env_rng, torch_rng = trainer.env.generator.get_state(), torch.get_rng_state()
    try:
        obs = trainer.env.reset()
        if obs.shape != (trainer.env.num_arenas, trainer.env.num_cars, trainer.model.obs_size):
            raise RuntimeError(
                f"verify: observations have shape {tuple(obs.shape)} but the network expects "
                f"(arenas, cars, {trainer.model.obs_size})"
            )
        with torch.no_grad():
            flat = obs.reshape(trainer.env.num_arenas * trainer.env.num_cars, -1)
            state = trainer.model.initial_state(flat.shape[0], trainer.device)
            action, logprob, value, _ = trainer.model.act(flat, state, deterministic=True)
        if not (torch.isfinite(logprob).all() and torch.isfinite(value).all()):
            raise RuntimeError("verify: the network returned NaN or inf on the first observations")
        result = trainer.env.step(action.reshape(trainer.env.num_arenas, trainer.env.num_cars, *action.shape[1:]))
        if not (torch.isfinite(result.obs).all() and torch.isfinite(result.reward).all()):
            raise RuntimeError("verify: the environment returned NaN or inf after one step")
        _verify_league(trainer)
    finally:
        trainer.env.generator.set_state(env_rng)
        torch.set_rng_state(torch_rng)


def _verify_league(trainer: Trainer) -> None:
    """Every curriculum stage is readable and its observations fit the network; opponents can act."""
    if trainer.league is None:
        return
    from rocketrl.env.obs import DefaultObs

    stages = trainer.league.curriculum.stages if trainer.league.curriculum is not None else []
    for stage in stages:
        size = DefaultObs(stage.blue_size, stage.orange_size, trainer.device).size
        if size != trainer.model.obs_size:
            raise RuntimeError(
                f"verify: curriculum stage {stage.name!r} ({stage.blue_size}v{stage.orange_size}) has "
                f"observations of {size} floats but the network takes {trainer.model.obs_size}"
            )
    if trainer.plan is not None and any(slot.kind == "rule" for slot in trainer.plan.slots):
        obs = trainer.env.reset().reshape(-1, trainer.model.obs_size)[:2]
        controls = trainer.league.rule.act(obs, trainer.league.rule.initial_state(2, trainer.device))[0]
        if tuple(controls.shape) != (2, 8) or not torch.isfinite(controls).all():
            raise RuntimeError(f"verify: RulePolicy returned controls of shape {tuple(controls.shape)}")
