"""PPO trainer, the runner: collect a rollout, compute GAE, update, log, checkpoint.

Self-play: every car of every arena is an agent of the same policy (orange sees a mirrored field),
so B = arenas x cars agents act in one batched forward pass. `Trainer.learn()` reads top to bottom. Its
rollouts come from the Collection it takes (ppo/collection.py): this process's arenas by default, Ray
workers with distributed/learner.py's RayCollection.
"""

from __future__ import annotations

import dataclasses
import signal
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from rocketrl.env.batched import BatchedEnv
from rocketrl.env.config import EnvConfig
from rocketrl.infra.checkpoint import CheckpointManager, load_checkpoint, rng_state, set_rng_state
from rocketrl.infra.notify import DiscordNotifier
from rocketrl.league.league import League, LearnerSnapshot
from rocketrl.league.learner_env import LearnerEnv
from rocketrl.league.plan import ArenaPlan
from rocketrl.policy.actor_critic import ActorCritic
from rocketrl.policy.normalize import ObservationNormalizer
from rocketrl.ppo.algorithm import PPO
from rocketrl.ppo.collection import Collection, LocalCollection
from rocketrl.ppo.collector import EpisodeSummary, RolloutCollector
from rocketrl.ppo.run_setup import make_run_dir, uses_league, verify
from rocketrl.ppo.storage import RolloutStorage
from rocketrl.ppo.train_config import TrainConfig, config_to_dict
from rocketrl.ppo.train_logger import UpdateReport
from rocketrl.ppo.update import UpdateStats
from rocketrl.sim.arena import step_seconds


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


class Trainer:
    """Owns the environment, the model, the optimizer and the run folder; takes its rollouts from a Collection."""

    def __init__(
        self,
        cfg: TrainConfig,
        run_dir: Path | None = None,
        env: BatchedEnv | None = None,
        collection: Collection | None = None,
    ) -> None:
        """`env` replaces the BatchedEnv built from cfg.env (anything with BatchedEnv's interface); `collection`
        (default LocalCollection: this process's arenas) is where rollouts come from."""
        self.collection = collection if collection is not None else LocalCollection()
        try:
            self._build(cfg, run_dir, env)
        except BaseException:
            self.collection.release()
            raise
        self.collection.attach(self)

    def _build(self, cfg: TrainConfig, run_dir: Path | None, env: BatchedEnv | None) -> None:
        """The league, arenas, algorithm, collector, checkpoints and notifier of a new run."""
        self.cfg = cfg
        self.device = resolve_device(cfg.run.device)
        self._default_threads = torch.get_num_threads()
        torch.manual_seed(cfg.run.seed)
        np.random.seed(cfg.run.seed)
        self.run_dir = run_dir or make_run_dir(cfg)
        self.config_dict = config_to_dict(cfg)
        self.league = (
            League(cfg.league, self.run_dir, self.device, cfg.run.seed, compile_rule=cfg.speed.compile_rule)
            if uses_league(cfg)
            else None
        )
        env = env if env is not None else BatchedEnv(self._learner_env_config(), device=self.device)
        self.algorithm = PPO(
            cfg.ppo,
            cfg.model,
            cfg.speed,
            env.obs_size,
            env.action_parser.num_actions,
            discrete=env.action_parser.kind == "discrete",
            device=self.device,
            seed=cfg.run.seed,
            debug=cfg.run.debug,
        )
        self.collector = RolloutCollector(env, self.league, self.algorithm, self.device)
        self.counters = Counters()
        self.train_seconds = 0.0
        """Wall-clock seconds spent training this run, over every process that resumed it (run.max_minutes counts
        these, so a resumed run trains only the minutes it has left)."""
        self.checkpoint_step: int | None = None
        """Step of the last checkpoint saved or resumed from; None before the first."""
        self.algorithm.setup_precision()
        self.checkpoints = CheckpointManager(
            self.run_dir / "checkpoints", keep_best=cfg.run.keep_best, keep_every=cfg.run.keep_every
        )
        self.notifier = DiscordNotifier(cfg.run.discord_webhook_env, self.run_dir.name)
        self.recent_returns: deque[float] = deque(maxlen=100)
        self.recent_lengths: deque[float] = deque(maxlen=100)
        self.recent_touch_rates: deque[float] = deque(maxlen=100)
        self.step_seconds = step_seconds(cfg.env.tick_skip)
        self._stop_signal: int | None = None
        self.init_file: Path | None = None
        """The checkpoint the network started from (run.init_from), once `init_from` has run."""
        self.init_widened = False
        """Whether `init_from` widened that checkpoint's network into this run's wider hidden layers."""

    def _stage_env_config(self) -> EnvConfig:
        """cfg.env with the team sizes of the current curriculum stage."""
        if self.league is None or self.league.curriculum is None:
            return self.cfg.env
        stage = self.league.curriculum.stage
        return dataclasses.replace(self.cfg.env, blue_size=stage.blue_size, orange_size=stage.orange_size)

    def _learner_env_config(self) -> EnvConfig:
        """The arenas this process steps at the current stage (the collection decides how many)."""
        return self.collection.learner_env_config(self._stage_env_config())

    # ------------------------------------------------------------------ the arenas, through the collector
    @property
    def env(self) -> BatchedEnv:
        return self.collector.env

    @property
    def learner_env(self) -> LearnerEnv:
        return self.collector.learner_env

    @property
    def plan(self) -> ArenaPlan | None:
        return self.collector.plan

    @property
    def num_agents(self) -> int:
        """Learner agents of one update: the collection's."""
        return self.collection.num_agents

    def _enter_stage(self) -> None:
        """The current curriculum stage's team sizes for the arenas (same network), through the collection."""
        self.collection.enter_stage()

    def rebuild_env(self) -> None:
        """Rebuild this process's arenas for the current curriculum stage's team sizes (same network)."""
        generator = self.env.generator.get_state()
        self.env.close()
        env = BatchedEnv(self._learner_env_config(), device=self.device)
        env.generator.set_state(generator)
        self.collector.set_env(env)

    def _set_threads(self, threads: int | None) -> None:
        """torch's CPU thread count for the next phase (None: the collection's default, else the count torch
        started with)."""
        if threads is None:
            threads = self.collection.default_threads
        wanted = threads if threads is not None else self._default_threads
        if torch.get_num_threads() != wanted:
            torch.set_num_threads(wanted)

    # ------------------------------------------------------------------ the algorithm's parts
    @property
    def model(self) -> ActorCritic:
        return self.algorithm.model

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.algorithm.optimizer

    @property
    def obs_norm(self) -> ObservationNormalizer:
        return self.algorithm.obs_norm

    @property
    def storage(self) -> RolloutStorage:
        assert self.algorithm.storage is not None
        return self.algorithm.storage

    @property
    def amp_mode(self) -> str:
        return self.algorithm.amp_mode

    @property
    def amp_reason(self) -> str:
        return self.algorithm.amp_reason

    @property
    def amp_dtype(self) -> torch.dtype | None:
        return self.algorithm.amp_dtype

    @property
    def acting_copy(self) -> ActorCritic | None:
        return self.algorithm.acting_copy

    # ---------------------------------------------------------------------------------- state
    def state_dict(self) -> dict:
        """Everything needed to continue this run exactly (tensors and JSON-able values), the collection's too."""
        collection = self.collection.state_dict()
        return {**self._runner_state(), **collection}

    def _runner_state(self) -> dict:
        return {
            **self.algorithm.state_dict(),
            "counters": vars(self.counters).copy(),
            "train_seconds": self.train_seconds,
            "rng": rng_state(),
            "env_generator": self.env.generator.get_state(),
            "recent_returns": list(self.recent_returns),
            "recent_lengths": list(self.recent_lengths),
            "recent_touch_rates": list(self.recent_touch_rates),
            "league": self.league.state_dict() if self.league is not None else None,
        }

    def load_state_dict(self, state: dict) -> None:
        state = self.collection.prepare_load(state)
        self._load_runner_state(state)
        self.collection.after_load(state)

    def _load_runner_state(self, state: dict) -> None:
        if self.league is not None and state.get("league") is not None:
            stage = self.league.curriculum.index if self.league.curriculum is not None else 0
            self.league.load_state_dict(state["league"])
            if self.league.curriculum is not None and self.league.curriculum.index != stage:
                self._enter_stage()
        self.algorithm.load_state_dict(state)
        self.counters = Counters(**state["counters"])
        self.train_seconds = float(state.get("train_seconds", 0.0))  # 0 in checkpoints older than this count
        self.checkpoint_step = self.counters.global_step
        set_rng_state(state["rng"])
        self.env.generator.set_state(state["env_generator"].cpu())
        self.recent_returns = deque(state["recent_returns"], maxlen=100)
        self.recent_lengths = deque(state["recent_lengths"], maxlen=100)
        self.recent_touch_rates = deque(state["recent_touch_rates"], maxlen=100)

    def checkpoint_score(self) -> float | None:
        """The score that ranks this checkpoint among the kept best (run.best_by); None: not ranked.

        return: mean return of the last 100 episodes. win_rate_vs_rule: the win rate against RulePolicy of
        the league evaluation run since the previous checkpoint (None when there was none)."""
        if self.cfg.run.best_by == "return":
            return float(np.mean(self.recent_returns)) if self.recent_returns else None
        last_eval = self.league.last_eval if self.league is not None else None
        if not last_eval or "win_rate_vs_rule" not in self.league.measures:
            return None
        if self.checkpoint_step is not None and last_eval["step"] <= self.checkpoint_step:
            return None  # that evaluation already scored the previous checkpoint
        return float(self.league.measures["win_rate_vs_rule"])

    def save_checkpoint(self) -> Path:
        score = self.checkpoint_score()
        meta = {
            "step": self.counters.global_step,
            "run": self.run_dir.name,
            "score": score,
            "score_by": self.cfg.run.best_by,
            "config": self.config_dict,
        }
        path = self.checkpoints.save(self.counters.global_step, self.state_dict(), meta=meta, score=score)
        self.checkpoint_step = self.counters.global_step
        if self.league is not None:
            self.league.save_summary()
        self.notifier.send("checkpoint", f"step {self.counters.global_step:,}, {self.cfg.run.best_by} {score}")
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

    def init_from(self, spec: str) -> Path:
        """Start the network and observation normalizer from checkpoint `spec` ('pretrained', 'gauntlet_vN', a run
        folder or a path); returns its file."""
        from rocketrl.policy.load import resolve_checkpoint

        path = resolve_checkpoint(spec)
        state, _ = load_checkpoint(path, device=self.device)
        self.init_widened = self.algorithm.init_from(state, spec)
        self.init_file = path
        return path

    # ---------------------------------------------------------------------------------- loop
    def learn(self, logger: object | None = None) -> Counters:
        """Train until run.timesteps agent-steps; returns the final counters. torch's CPU thread count is put back
        as it found it: the phases set their own, and a later run in the same process (a climb's next step) takes
        its default from what this one leaves."""
        cfg, p = self.cfg, self.cfg.ppo
        threads_before = torch.get_num_threads()
        self._install_signal_handlers()
        if self.league is not None:
            self.league.start_pool(
                self.model, self.obs_norm, self.config_dict, self.counters.global_step, self.algorithm.obs_size,
                self.init_file,
            )  # fmt: skip
        if self.league is not None and cfg.league.eval_interval:
            self.league.evaluation_env(cfg.env)  # its workers start now, not at the first evaluation
        self.collection.start()
        next_checkpoint = (self.counters.global_step // cfg.run.checkpoint_interval + 1) * cfg.run.checkpoint_interval
        saved_at = -1
        every_seconds = None if cfg.run.checkpoint_minutes is None else 60.0 * cfg.run.checkpoint_minutes
        saved_time = time.monotonic()
        self.notifier.send("start", f"step {self.counters.global_step:,} of {cfg.run.timesteps:,}")
        began, trained_before = time.monotonic(), self.train_seconds

        def trained_seconds() -> float:  # this run's training time, earlier processes included
            return trained_before + time.monotonic() - began

        try:
            while self.counters.global_step < cfg.run.timesteps and self._stop_signal is None:
                self.train_seconds = trained_seconds()
                if cfg.run.max_minutes is not None and self.train_seconds >= 60.0 * cfg.run.max_minutes:
                    print(f"run.max_minutes={cfg.run.max_minutes:g} reached: stopping", flush=True)
                    break
                started = time.perf_counter()
                timings = {"env": 0.0, "copy": 0.0, "inference": 0.0, "learn": 0.0}
                steps = self.collection.rollout(timings)
                self._set_threads(self.cfg.speed.learn_threads)
                t0 = time.perf_counter()
                stats = self._update()
                timings["learn"] = time.perf_counter() - t0
                self.counters.updates += 1
                self.collection.after_update()
                if self.league is not None:
                    t0 = time.perf_counter()
                    self._set_threads(self.cfg.speed.rollout_threads)  # evaluation games step and act
                    learner = LearnerSnapshot(
                        self.model, self.obs_norm, p.normalize_observations, self.config_dict, cfg.env
                    )
                    changed = self.league.after_update(learner, self.counters.global_step)
                    timings["league"] = time.perf_counter() - t0
                    if changed is not None:
                        history = self.league.curriculum.history[-1]  # type: ignore[union-attr]
                        print(f"curriculum: {history['from']} -> {history['to']} at step {history['step']:,} "
                              f"({history['reason']})", flush=True)  # fmt: skip
                        self.notifier.send("stage", f"{history['from']} -> {history['to']} ({history['reason']})")
                        self._enter_stage()
                        self.collection.restart()
                sps = steps / (time.perf_counter() - started)
                if logger is not None:
                    logger.log_update(self._report(stats, timings, sps))  # type: ignore[attr-defined]
                by_time = every_seconds is not None and time.monotonic() - saved_time >= every_seconds
                if self.counters.global_step >= next_checkpoint or by_time:
                    self.train_seconds = trained_seconds()
                    self.save_checkpoint()
                    saved_at, saved_time = self.counters.global_step, time.monotonic()
                    while next_checkpoint <= self.counters.global_step:
                        next_checkpoint += cfg.run.checkpoint_interval
                    # Episodes restart at checkpoints, so a resumed run continues exactly.
                    self.collection.restart()
        except Exception as error:
            self.notifier.send("crash", f"step {self.counters.global_step:,}: {type(error).__name__}: {error}")
            raise
        finally:
            self._restore_signal_handlers()
            torch.set_num_threads(threads_before)
        self.train_seconds = trained_seconds()
        if saved_at != self.counters.global_step:
            self.save_checkpoint()
        how = "stopped by signal" if self._stop_signal is not None else "finished"
        self.notifier.send(how, f"step {self.counters.global_step:,} after {self.counters.updates} updates")
        return self.counters

    # ------------------------------------------------------------------ this process's arenas (LocalCollection)
    def progress(self) -> float:
        """The fraction of the training budget (run.timesteps) done, in [0, 1]: what schedules follow."""
        return min(1.0, self.counters.global_step / max(1, self.cfg.run.timesteps))

    def _restart_episodes(self) -> tuple[torch.Tensor, object, torch.Tensor]:
        """Reset every arena: learner observations [B, O], a zero recurrent state, all episodes starting."""
        return self.collector.restart()

    def _collect(
        self, obs: torch.Tensor, state, episode_start: torch.Tensor, timings: dict[str, float]
    ) -> tuple[torch.Tensor, object, torch.Tensor]:
        """Fill the algorithm's storage with rollout_steps steps of every learner agent (and GAE)."""
        start = self.counters.global_step
        result = self.collector.collect(obs, state, episode_start, start, timings, self._record_episodes)
        self.counters.global_step += self.cfg.ppo.rollout_steps * self.num_agents
        return result

    def _record_episodes(self, summary: EpisodeSummary) -> None:
        """Episode statistics of the learner's cars: mean return, length, touches per car-minute."""
        self.counters.episodes += summary.count
        self.recent_returns.extend(summary.returns.tolist())
        self.recent_lengths.extend(summary.lengths.tolist())
        self.recent_touch_rates.extend(summary.touch_rates.tolist())

    def _report(self, stats: UpdateStats, timings: dict[str, float], sps: float) -> UpdateReport:
        """The hand-off to the logger after an update."""

        def mean(values: deque[float]) -> float:
            return float(np.mean(values)) if values else float("nan")

        report = UpdateReport(
            step=self.counters.global_step,
            updates=self.counters.updates,
            skipped_updates=self.counters.skipped_updates,
            stats=stats,
            timings=timings,
            sps=sps,
            mean_return=mean(self.recent_returns),
            mean_length=mean(self.recent_lengths),
            touch_rate=mean(self.recent_touch_rates),
            reward_terms=self.env.reward_fn.term_means(),
            league=self.league.scalars() if self.league is not None else {},
            extra={f"reward_weights/{n}": w for n, w in self.env.reward_fn.scheduled_weights(self.progress()).items()},
            device=self.device,
        )
        self.collection.amend_report(report)
        return report

    def _update(self) -> UpdateStats:
        """The PPO update of the rollout in storage, at the scheduled learning rate and entropy weight."""
        stats, skipped = self.algorithm.update(self.progress())
        self.counters.skipped_updates += skipped
        return stats

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
        """Fail fast: one env step and one forward pass, spaces agree with the network (run_setup.verify)."""
        verify(self.env, self.model, self.device, self.league, self.plan)

    def describe(self) -> str | None:
        """The collection's line for the start-up summary, if it has one."""
        return self.collection.describe()

    def close(self) -> None:
        """Stop the collection, close the arenas and the league, release the collection."""
        try:
            self.collection.stop()
        finally:
            try:
                self.env.close()
                if self.league is not None:
                    self.league.close()
            finally:
                self.collection.release()


__all__ = ["Counters", "Trainer", "UpdateStats", "resolve_device"]
