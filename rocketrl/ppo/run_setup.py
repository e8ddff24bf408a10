"""Start-up helpers of a training run: the run folder and the fail-fast check (the summary is in summary.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from rocketrl.ppo.train_config import TrainConfig, config_to_dict, save_resolved_config

if TYPE_CHECKING:
    from rocketrl.env.batched import BatchedEnv
    from rocketrl.league.league import League
    from rocketrl.league.plan import ArenaPlan
    from rocketrl.policy.actor_critic import ActorCritic


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


def verify(
    env: BatchedEnv,
    model: ActorCritic,
    device: torch.device,
    league: League | None = None,
    plan: ArenaPlan | None = None,
) -> None:
    """Fail fast: one env step and one forward pass, spaces agree with the network.

    Leaves every random generator as it found it, so verification does not change the run.
    """
    env_rng, torch_rng = env.generator.get_state(), torch.get_rng_state()
    try:
        obs = env.reset()
        if obs.shape != (env.num_arenas, env.num_cars, model.obs_size):
            raise RuntimeError(
                f"verify: observations have shape {tuple(obs.shape)} but the network expects "
                f"(arenas, cars, {model.obs_size})"
            )
        with torch.no_grad():
            flat = obs.reshape(env.num_arenas * env.num_cars, -1)
            state = model.initial_state(flat.shape[0], device)
            action, logprob, value, _ = model.act(flat, state, deterministic=True)
        if not (torch.isfinite(logprob).all() and torch.isfinite(value).all()):
            raise RuntimeError("verify: the network returned NaN or inf on the first observations")
        result = env.step(action.reshape(env.num_arenas, env.num_cars, *action.shape[1:]))
        if not (torch.isfinite(result.obs).all() and torch.isfinite(result.reward).all()):
            raise RuntimeError("verify: the environment returned NaN or inf after one step")
        if league is not None:
            _verify_league(env, model, device, league, plan)
    finally:
        env.generator.set_state(env_rng)
        torch.set_rng_state(torch_rng)


def _verify_league(
    env: BatchedEnv, model: ActorCritic, device: torch.device, league: League, plan: ArenaPlan | None
) -> None:
    """Every curriculum stage is readable and its observations fit the network; opponents can act."""
    from rocketrl.env.obs import DefaultObs

    stages = league.curriculum.stages if league.curriculum is not None else []
    for stage in stages:
        size = DefaultObs(stage.blue_size, stage.orange_size, device).size
        if size != model.obs_size:
            raise RuntimeError(
                f"verify: curriculum stage {stage.name!r} ({stage.blue_size}v{stage.orange_size}) has "
                f"observations of {size} floats but the network takes {model.obs_size}"
            )
    if plan is not None and any(slot.kind == "rule" for slot in plan.slots):
        obs = env.reset().reshape(-1, model.obs_size)[:2]
        controls = league.rule.act(obs, league.rule.initial_state(2, device))[0]
        if tuple(controls.shape) != (2, 8) or not torch.isfinite(controls).all():
            raise RuntimeError(f"verify: RulePolicy returned controls of shape {tuple(controls.shape)}")
