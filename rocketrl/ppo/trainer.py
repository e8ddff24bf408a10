"""PPO trainer: collect a rollout from BatchedEnv, compute GAE, update, log, checkpoint.

Self-play: every car of every arena is an agent of the same policy (orange sees a mirrored field),
so B = arenas x cars agents act in one batched forward pass. `Trainer.learn()` reads top to bottom.
"""

from __future__ import annotations

import json
import signal
import time
import warnings
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from rocketrl.config import TrainConfig, config_to_dict, save_resolved_config
from rocketrl.env.batched import BatchedEnv
from rocketrl.infra.checkpoint import CheckpointManager, load_checkpoint, rng_state, set_rng_state
from rocketrl.infra.notify import DiscordNotifier
from rocketrl.policy.actor_critic import ActorCritic, reset_state
from rocketrl.ppo.gae import compute_gae
from rocketrl.ppo.loss import explained_variance, normalize_advantages, ppo_losses
from rocketrl.ppo.normalize import ObservationNormalizer, ReturnScaler
from rocketrl.ppo.schedules import Schedule, set_learning_rate
from rocketrl.ppo.storage import RolloutStorage


def resolve_device(name: str) -> torch.device:
    """'auto' -> cuda when available, else cpu."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("run.device=cuda but no CUDA device is available; use --device cpu or auto")
    return torch.device(name)


@dataclass
class Counters:
    """Progress counters saved with every checkpoint."""

    global_step: int = 0
    """Agent-steps collected."""
    updates: int = 0
    skipped_updates: int = 0
    """Minibatch updates skipped for a non-finite loss or gradient."""
    episodes: int = 0


@dataclass
class UpdateStats:
    """Means over the minibatches of one update."""

    values: dict[str, float] = field(default_factory=dict)


class Trainer:
    """Owns the environment, the model, the optimizer and the run folder."""

    def __init__(self, cfg: TrainConfig, run_dir: Path | None = None, env: BatchedEnv | None = None) -> None:
        """`env` replaces the BatchedEnv built from cfg.env (anything with BatchedEnv's interface)."""
        self.cfg = cfg
        self.device = resolve_device(cfg.run.device)
        torch.manual_seed(cfg.run.seed)
        np.random.seed(cfg.run.seed)
        self.env = env if env is not None else BatchedEnv(cfg.env, device=self.device)
        self.num_agents = self.env.num_arenas * self.env.num_cars
        discrete = self.env.action_parser.kind == "discrete"
        m = cfg.model
        self.model = ActorCritic(
            self.env.obs_size,
            self.env.action_parser.num_actions,
            discrete=discrete,
            actor_hidden=m.actor_hidden,
            critic_hidden=m.critic_hidden,
            activation=m.activation,
            lstm_hidden=m.lstm_hidden if m.lstm else None,
        ).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.ppo.learning_rate, eps=1e-5)
        p = cfg.ppo
        self.lr_schedule = Schedule(kind=p.lr_schedule, start=p.learning_rate, end=p.resolved_lr_end)
        self.obs_norm = ObservationNormalizer(self.env.obs_size, self.device, clip=p.obs_clip)
        self.return_scaler = ReturnScaler(self.num_agents, p.gamma, self.device, clip=p.reward_clip)
        action_shape = () if discrete else (self.env.action_parser.num_actions,)
        action_dtype = torch.long if discrete else torch.float32
        self.storage = RolloutStorage(
            p.rollout_steps,
            self.num_agents,
            self.env.obs_size,
            action_shape,
            action_dtype,
            self.device,
            lstm_hidden=m.lstm_hidden if m.lstm else None,
            sequence_length=m.sequence_length,
        )
        self.counters = Counters()
        sp = cfg.speed
        # Mixed precision: bf16 autocast on any device; fp16 (CUDA only) with a gradient scaler.
        self.amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(sp.amp)
        self.scaler = torch.amp.GradScaler("cuda", enabled=sp.amp == "fp16" and self.device.type == "cuda")
        if sp.compile:
            self._compile_model()
        self.run_dir = run_dir or make_run_dir(cfg)
        self.checkpoints = CheckpointManager(self.run_dir / "checkpoints", keep_best=cfg.run.keep_best)
        self.notifier = DiscordNotifier(cfg.run.discord_webhook_env, self.run_dir.name)
        self.shuffle = torch.Generator(device=self.device).manual_seed(cfg.run.seed)
        self.recent_returns: deque[float] = deque(maxlen=100)
        self.recent_lengths: deque[float] = deque(maxlen=100)
        self.recent_touch_rates: deque[float] = deque(maxlen=100)
        self.step_seconds = cfg.env.tick_skip / 120.0
        self._stop_signal: int | None = None

    def _autocast(self) -> torch.autocast:
        return torch.autocast(
            self.device.type, dtype=self.amp_dtype or torch.float32, enabled=self.amp_dtype is not None
        )

    def _compile_model(self) -> None:
        """torch.compile the actor and critic in place (state_dict keys unchanged); eager on failure.

        One warm-up forward compiles both now, so a failure shows at start-up; RNG is left untouched.
        """
        rng = torch.get_rng_state()
        try:
            self.model.actor.compile()
            self.model.critic.compile()
            dummy = torch.zeros(2, self.model.obs_size, device=self.device)
            with torch.no_grad(), self._autocast():
                self.model.act(dummy, self.model.initial_state(2, self.device))
        except Exception as error:  # any backend failure: eager computes the same values
            warnings.warn(f"speed.compile: torch.compile failed ({error!r}); using eager mode", stacklevel=2)
            self.model.actor._compiled_call_impl = None
            self.model.critic._compiled_call_impl = None
        finally:
            torch.set_rng_state(rng)

    # ---------------------------------------------------------------------------------- state
    def state_dict(self) -> dict:
        """Everything needed to continue this run exactly (tensors and JSON-able values)."""
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "obs_norm": self.obs_norm.state_dict(),
            "return_scaler": self.return_scaler.state_dict(),
            "counters": vars(self.counters).copy(),
            "rng": rng_state(),
            "env_generator": self.env.generator.get_state(),
            "shuffle_generator": self.shuffle.get_state(),
            "recent_returns": list(self.recent_returns),
            "recent_lengths": list(self.recent_lengths),
            "recent_touch_rates": list(self.recent_touch_rates),
        }

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.obs_norm.load_state_dict(state["obs_norm"])
        self.return_scaler.load_state_dict(state["return_scaler"])
        self.counters = Counters(**state["counters"])
        set_rng_state(state["rng"])
        self.env.generator.set_state(state["env_generator"].cpu())
        self.shuffle.set_state(state["shuffle_generator"].to(self.shuffle.device))
        self.recent_returns = deque(state["recent_returns"], maxlen=100)
        self.recent_lengths = deque(state["recent_lengths"], maxlen=100)
        self.recent_touch_rates = deque(state["recent_touch_rates"], maxlen=100)

    def save_checkpoint(self) -> Path:
        score = float(np.mean(self.recent_returns)) if self.recent_returns else None
        meta = {"step": self.counters.global_step, "run": self.run_dir.name, "score": score}
        path = self.checkpoints.save(self.counters.global_step, self.state_dict(), meta=meta, score=score)
        self.notifier.send("checkpoint", f"step {self.counters.global_step:,}, mean return {score}")
        return path

    def resume(self, path: str | Path) -> Path:
        """Continue from a checkpoint file, or from this run's latest with 'latest'."""
        if str(path) == "latest":
            latest = self.checkpoints.latest()
            if latest is None:
                raise FileNotFoundError(f"--resume latest: no checkpoint in {self.checkpoints.directory}")
            path = latest
        state, _ = load_checkpoint(path, device=self.device)
        self.load_state_dict(state)
        return Path(path)

    # ---------------------------------------------------------------------------------- loop
    def learn(self, logger: object | None = None) -> Counters:
        """Train until run.timesteps agent-steps; returns the final counters."""
        cfg, p = self.cfg, self.cfg.ppo
        self._install_signal_handlers()
        obs = self.env.reset().reshape(self.num_agents, -1)
        state = self.model.initial_state(self.num_agents, self.device)
        episode_start = torch.ones(self.num_agents, dtype=torch.bool, device=self.device)
        next_checkpoint = (self.counters.global_step // cfg.run.checkpoint_interval + 1) * cfg.run.checkpoint_interval
        saved_at = -1
        self.notifier.send("start", f"step {self.counters.global_step:,} of {cfg.run.timesteps:,}")
        try:
            while self.counters.global_step < cfg.run.timesteps and self._stop_signal is None:
                started = time.perf_counter()
                timings = {"env": 0.0, "copy": 0.0, "inference": 0.0, "learn": 0.0}
                obs, state, episode_start = self._collect(obs, state, episode_start, timings)
                t0 = time.perf_counter()
                stats = self._update()
                timings["learn"] = time.perf_counter() - t0
                self.counters.updates += 1
                sps = p.rollout_steps * self.num_agents / (time.perf_counter() - started)
                if logger is not None:
                    logger.log_update(self, stats, timings, sps)  # type: ignore[attr-defined]
                if self.counters.global_step >= next_checkpoint:
                    self.save_checkpoint()
                    saved_at = self.counters.global_step
                    next_checkpoint += cfg.run.checkpoint_interval
                    # Episodes restart at checkpoints, so a resumed run continues exactly.
                    obs = self.env.reset().reshape(self.num_agents, -1)
                    state = self.model.initial_state(self.num_agents, self.device)
                    episode_start = torch.ones_like(episode_start)
        except Exception as error:
            self.notifier.send("crash", f"step {self.counters.global_step:,}: {type(error).__name__}: {error}")
            raise
        finally:
            self._restore_signal_handlers()
        if saved_at != self.counters.global_step:
            self.save_checkpoint()
        how = "stopped by signal" if self._stop_signal is not None else "finished"
        self.notifier.send(how, f"step {self.counters.global_step:,} after {self.counters.updates} updates")
        return self.counters

    def _collect(
        self, obs: torch.Tensor, state, episode_start: torch.Tensor, timings: dict[str, float]
    ) -> tuple[torch.Tensor, object, torch.Tensor]:
        """Fill the storage with rollout_steps steps of every agent."""
        p, s, a, n = self.cfg.ppo, self.storage, self.env.num_arenas, self.env.num_cars
        for t in range(p.rollout_steps):
            t0 = time.perf_counter()
            with torch.no_grad():
                if p.normalize_observations:
                    self.obs_norm.update(obs)
                    norm_obs = self.obs_norm.normalize(obs)
                else:
                    norm_obs = obs
                state = reset_state(state, episode_start)
                s.store_state(t, state)
                with self._autocast():
                    action, logprob, value, state = self.model.act(norm_obs, state)
            t1 = time.perf_counter()
            copied = getattr(self.env.engine, "copy_seconds", 0.0)
            result = self.env.step(action.reshape(a, n, *action.shape[1:]))
            t2 = time.perf_counter()
            copy = getattr(self.env.engine, "copy_seconds", 0.0) - copied
            if self.cfg.run.debug:
                self._check_finite(t, norm_obs=norm_obs, reward=result.reward, value=value, logprob=logprob)
            reward = result.reward.reshape(-1)
            ended = (result.terminated | result.truncated).repeat_interleave(n)
            terminated = result.terminated.repeat_interleave(n)
            truncated = result.truncated.repeat_interleave(n)
            s.obs[t] = norm_obs
            s.actions[t] = action
            s.logprobs[t] = logprob
            s.values[t] = value
            s.episode_start[t] = episode_start
            s.rewards[t] = self.return_scaler.update_and_scale(reward, ended) if p.scale_rewards else reward
            s.terminated[t] = terminated
            s.episode_end[t] = ended
            s.next_values[t] = 0.0
            next_obs = result.obs.reshape(self.num_agents, -1)
            with torch.no_grad():
                if bool(truncated.any()):
                    # Bootstrap truncated episodes from the value of their final observation.
                    final = result.final_obs.reshape(self.num_agents, -1)
                    final = self.obs_norm.normalize(final) if p.normalize_observations else final
                    s.next_values[t] = torch.where(truncated, self.model.value(final, state), 0.0)
            if result.episodes:
                self.counters.episodes += len(result.episodes["arena"])
                self.recent_returns.extend(result.episodes["return"].mean(dim=1).tolist())
                self.recent_lengths.extend(result.episodes["length"].float().tolist())
                # Touches per car per minute of game time, over each finished episode.
                minutes = result.episodes["length"].float() * self.step_seconds / 60.0
                rate = result.episodes["touches"].float().mean(dim=1) / minutes
                self.recent_touch_rates.extend(rate.tolist())
            obs, episode_start = next_obs, ended
            self.counters.global_step += self.num_agents
            timings["inference"] += t1 - t0
            timings["env"] += t2 - t1 - copy
            timings["copy"] += copy
        with torch.no_grad():
            last = self.obs_norm.normalize(obs) if p.normalize_observations else obs
            last_value = self.model.value(last, reset_state(state, episode_start))
        # next_values[t] = V(s_{t+1}) inside an episode; set above for truncations; 0 after termination.
        following = torch.cat([s.values[1:], last_value.unsqueeze(0)])
        s.next_values.copy_(torch.where(s.episode_end, s.next_values, following))
        s.advantages, s.returns = compute_gae(
            s.rewards, s.values, s.next_values, s.terminated, s.episode_end, p.gamma, p.gae_lambda
        )
        return obs, state, episode_start

    @staticmethod
    def _check_finite(step: int, **tensors: torch.Tensor) -> None:
        """--debug: stop at the first NaN or inf, naming the tensor and the rollout step."""
        for name, tensor in tensors.items():
            if not torch.isfinite(tensor).all():
                raise FloatingPointError(f"debug check: {name} holds NaN or inf at rollout step {step}")

    def _update(self) -> UpdateStats:
        """Several epochs of clipped PPO over shuffled minibatches, with KL early stopping."""
        p = self.cfg.ppo
        progress = min(1.0, self.counters.global_step / max(1, self.cfg.run.timesteps))
        set_learning_rate(self.optimizer, self.lr_schedule.value(progress))
        sums: dict[str, float] = {}
        count = 0
        for _epoch in range(p.epochs):
            kl_exceeded = False
            for mb in self.storage.minibatches(p.minibatches, generator=self.shuffle):
                with self._autocast():
                    logprob, entropy, value = self.model.evaluate(mb.obs, mb.actions, mb.state, mb.episode_start)
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
                loss = terms.policy + p.value_coef * terms.value - p.entropy_coef * terms.entropy
                self.optimizer.zero_grad(set_to_none=True)
                if not torch.isfinite(loss):
                    self.counters.skipped_updates += 1
                    continue
                self.scaler.scale(loss).backward()
                self.scaler.unscale_(self.optimizer)
                grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), p.max_grad_norm)
                if not torch.isfinite(grad_norm):
                    # A non-finite gradient never reaches the weights (nor, so, a checkpoint).
                    self.optimizer.zero_grad(set_to_none=True)
                    self.scaler.update()
                    self.counters.skipped_updates += 1
                    continue
                self.scaler.step(self.optimizer)
                self.scaler.update()
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
                if p.target_kl is not None and float(terms.approx_kl) > p.target_kl:
                    kl_exceeded = True
                    break
            if kl_exceeded:
                break
        stats = {name: total / max(1, count) for name, total in sums.items()}
        stats["explained_variance"] = float(explained_variance(self.storage.values, self.storage.returns))
        stats["learning_rate"] = self.optimizer.param_groups[0]["lr"]
        return UpdateStats(stats)

    # ---------------------------------------------------------------------------------- signals
    def _install_signal_handlers(self) -> None:
        self._previous_handlers = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous_handlers[sig] = signal.signal(sig, self._on_signal)
            except ValueError:  # not the main thread: leave signals alone
                pass

    def _restore_signal_handlers(self) -> None:
        for sig, handler in getattr(self, "_previous_handlers", {}).items():
            signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: object) -> None:
        """First signal: finish the current update, save a checkpoint and stop. Second: stop now."""
        if self._stop_signal is not None:
            raise KeyboardInterrupt(f"signal {signum} received twice: stopping without a checkpoint")
        self._stop_signal = signum
        print("stopping after this update (a checkpoint will be saved); signal again to stop at once", flush=True)

    @property
    def stopped_by_signal(self) -> int | None:
        return self._stop_signal

    def verify(self) -> None:
        """Fail fast: one env step and one forward pass, spaces agree with the network.

        Leaves every random generator as it found it, so verification does not change the run.
        """
        env_rng, torch_rng = self.env.generator.get_state(), torch.get_rng_state()
        try:
            obs = self.env.reset()
            if obs.shape != (self.env.num_arenas, self.env.num_cars, self.model.obs_size):
                raise RuntimeError(
                    f"verify: observations have shape {tuple(obs.shape)} but the network expects "
                    f"(arenas, cars, {self.model.obs_size})"
                )
            with torch.no_grad():
                flat = obs.reshape(self.num_agents, -1)
                state = self.model.initial_state(self.num_agents, self.device)
                action, logprob, value, _ = self.model.act(flat, state, deterministic=True)
            if not (torch.isfinite(logprob).all() and torch.isfinite(value).all()):
                raise RuntimeError("verify: the network returned NaN or inf on the first observations")
            result = self.env.step(action.reshape(self.env.num_arenas, self.env.num_cars, *action.shape[1:]))
            if not (torch.isfinite(result.obs).all() and torch.isfinite(result.reward).all()):
                raise RuntimeError("verify: the environment returned NaN or inf after one step")
        finally:
            self.env.generator.set_state(env_rng)
            torch.set_rng_state(torch_rng)

    def close(self) -> None:
        self.env.close()


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
        f"device        {trainer.device}   precision {'fp32' if sp.amp == 'off' or not cuda else sp.amp}",
        f"engine        {cfg.env.engine} ({cfg.env.stepping}, {trainer.env.engine.num_workers} workers)",
        f"arenas        {cfg.env.num_arenas} x {cfg.env.blue_size}v{cfg.env.orange_size} "
        f"= {trainer.num_agents} agents (self-play, one policy)",
        f"network       {'LSTM ' + str(m.lstm_hidden) + ' + ' if m.lstm else ''}actor {m.actor_hidden} "
        f"critic {m.critic_hidden} {m.activation}, {params:,} parameters",
        f"batch         {batch:,} = {p.rollout_steps} steps x {trainer.num_agents} agents, "
        f"{p.minibatches} minibatches of {batch // p.minibatches:,}, {p.epochs} epochs",
        f"learning rate {p.learning_rate:g} ({p.lr_schedule})",
        f"checkpoints   every {cfg.run.checkpoint_interval:,} steps, keep best {cfg.run.keep_best}",
        f"timesteps     {cfg.run.timesteps:,}",
        f"speed         amp={sp.amp}{' (fp32 on this device)' if sp.amp == 'fp16' and not cuda else ''}, "
        f"compile={'on' if sp.compile else 'off'}, compile_env={'on' if cfg.env.compile else 'off'}, "
        f"pinned host memory={'off' if not cfg.env.pin_memory else 'active' if cuda else 'inactive on CPU'}",
    ]
    return "\n".join(lines)


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
