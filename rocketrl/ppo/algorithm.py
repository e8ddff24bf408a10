"""The PPO algorithm: it owns the network, the optimizer, the observation and return normalizers, the
rollout storage and the numeric precision, and does the math of a training iteration:

    ppo.begin_rollout()
    for t in range(rollout_steps):
        action, state = ppo.act(t, obs, state, episode_start)          # obs [B, O] raw, action [B] / [B, A]
        ...step the arenas...
        ppo.process_step(t, reward, terminated, truncated, final_obs)  # [B] each; final_obs [B, O] or None
    ppo.compute_returns(next_obs, state, episode_start)                 # GAE over the stored rollout
    stats, skipped = ppo.update(progress)                               # epochs of clipped PPO

It knows nothing of arenas, opponents, checkpoints, signals or logging: the runner (`ppo/trainer.py`)
owns those and hands it the learner agents' tensors only.
"""

from __future__ import annotations

import copy
import hashlib
import warnings

import torch

from rocketrl.policy.actor_critic import ActorCritic, RecurrentState, reset_state
from rocketrl.policy.config import ModelConfig
from rocketrl.policy.normalize import ObservationNormalizer
from rocketrl.policy.widen import widened_state_dict
from rocketrl.ppo.amp_probe import choose_amp
from rocketrl.ppo.config import PPOConfig, SpeedConfig
from rocketrl.ppo.gae import compute_gae
from rocketrl.ppo.imitation import BotTeacher, RuleTeacher, imitation_weight, make_teacher
from rocketrl.ppo.normalize import ReturnScaler
from rocketrl.ppo.schedules import Schedule
from rocketrl.ppo.storage import RolloutStorage
from rocketrl.ppo.update import UpdateStats, ppo_update


def check_finite(where: str, **tensors: torch.Tensor) -> None:
    """--debug: stop at the first NaN or inf, naming the tensor and where it was computed."""
    for name, tensor in tensors.items():
        if not torch.isfinite(tensor).all():
            raise FloatingPointError(f"debug check: {name} holds NaN or inf {where}")


class PPO:
    """Network, optimizer, normalizers, storage and precision of one learner; see the module docstring."""

    def __init__(
        self,
        ppo: PPOConfig,
        model: ModelConfig,
        speed: SpeedConfig,
        obs_size: int,
        num_actions: int,
        discrete: bool,
        device: torch.device,
        seed: int,
        debug: bool = False,
    ) -> None:
        self.cfg, self.model_cfg, self.speed = ppo, model, speed
        self.device, self.debug, self.discrete = device, debug, discrete
        self.obs_size, self.num_actions = obs_size, num_actions
        self.model = ActorCritic.from_config(obs_size, num_actions, model, discrete=discrete).to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=ppo.learning_rate, eps=1e-5)
        self.lr_schedule = Schedule(kind=ppo.lr_schedule, start=ppo.learning_rate, end=ppo.resolved_lr_end)
        self.entropy_schedule = Schedule(
            kind=ppo.entropy_schedule, start=ppo.entropy_coef, end=ppo.resolved_entropy_coef_end
        )
        self.obs_norm = ObservationNormalizer(
            obs_size, device, clip=ppo.obs_clip, raw_columns=self.model.raw_obs_columns
        )
        self.return_scaler: ReturnScaler | None = None
        self.storage: RolloutStorage | None = None
        self.num_agents = 0
        self.shuffle = torch.Generator(device=device).manual_seed(seed)
        self.amp_mode: str = speed.amp
        self.amp_reason = ""
        self.amp_dtype: torch.dtype | None = None
        self.scaler = torch.amp.GradScaler("cuda", enabled=False)
        self.acting_copy: ActorCritic | None = None
        self._acting: tuple[ActorCritic, torch.dtype] = (self.model, torch.float32)
        self._batch_values = True
        self.teacher: RuleTeacher | BotTeacher | None = None
        """Labels each rollout step with the teacher's action while ppo.imitation_coef > 0 (ppo/imitation.py)."""
        if ppo.imitation_coef > 0:
            self.teacher = make_teacher(
                ppo.imitation_teacher, device, obs_size, num_actions, discrete, compiled=speed.compile_rule
            )
        self.imitating = self.teacher is not None
        """True while the next rollout is to be labelled (the imitation weight is not yet 0)."""

    # ------------------------------------------------------------------------------ set-up
    def resize(self, num_agents: int) -> None:
        """Storage and return scaler for `num_agents` learner agents (a new curriculum stage keeps the return
        statistics, not the per-agent returns)."""
        p, m = self.cfg, self.model_cfg
        units = num_agents * (p.rollout_steps // m.sequence_length if m.lstm else p.rollout_steps)
        if p.minibatches > units:
            raise ValueError(
                f"ppo.minibatches={p.minibatches}: more minibatches than the {units} samples (or sequences) of a "
                f"rollout of {num_agents} learner agents; lower ppo.minibatches or raise env.num_arenas"
            )
        previous = self.return_scaler
        self.return_scaler = ReturnScaler(num_agents, p.gamma, self.device, clip=p.reward_clip)
        if previous is not None:
            self.return_scaler.rms.load_state_dict(previous.rms.state_dict())
        self.num_agents = num_agents
        self.storage = RolloutStorage(
            p.rollout_steps,
            num_agents,
            self.obs_size,
            () if self.discrete else (self.num_actions,),
            torch.long if self.discrete else torch.float32,
            self.device,
            lstm_hidden=m.lstm_hidden if m.lstm else None,
            sequence_length=m.sequence_length,
            teacher=self.teacher is not None,
        )

    def setup_precision(self) -> None:
        """Mixed precision (bf16 autocast on any device; fp16, CUDA only, with a gradient scaler; auto: a probe
        cached per machine picks fp32 or bf16), torch.compile, and the bf16 acting copy. After `resize`."""
        p, sp = self.cfg, self.speed
        if sp.amp == "auto":
            minibatch = p.rollout_steps * self.num_agents // p.minibatches
            updates = p.epochs * p.minibatches
            choice = choose_amp(self.model, self.device, self.num_agents, minibatch, p.rollout_steps, updates)
            self.amp_mode, self.amp_reason = choice.mode, choice.reason
        self.amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.amp_mode)
        if self.amp_dtype == torch.float16 and self.device.type != "cuda":
            warnings.warn(
                "speed.amp='fp16' needs CUDA; training in fp32 on this device (bf16 works on CPU)", stacklevel=3
            )
            self.amp_dtype = None
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp_mode == "fp16" and self.device.type == "cuda")
        if sp.compile:
            self._compile_model()
        # bf16 on a feed-forward network: rollouts act on a bf16 copy of the weights, refreshed before each
        # rollout. Autocast would recast every weight at every forward, which costs as much as the small
        # acting batches' matmuls on a CPU.
        if self.amp_dtype == torch.bfloat16 and not self.model_cfg.lstm and not sp.compile:
            self.acting_copy = copy.deepcopy(self.model).to(torch.bfloat16).requires_grad_(False)

    def autocast(self) -> torch.autocast:
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
            with torch.no_grad(), self.autocast():
                self.model.act(dummy, self.model.initial_state(2, self.device))
        except Exception as error:  # any backend failure: eager computes the same values
            warnings.warn(f"speed.compile: torch.compile failed ({error!r}); using eager mode", stacklevel=3)
            self.model.actor._compiled_call_impl = None
            self.model.critic._compiled_call_impl = None
        finally:
            torch.set_rng_state(rng)

    # ------------------------------------------------------------------------------ a rollout
    def initial_state(self) -> RecurrentState:
        return self.model.initial_state(self.num_agents, self.device)

    def begin_rollout(self) -> tuple[ActorCritic, torch.dtype]:
        """Pick the acting network for this rollout and return it with its input dtype: the bf16 copy
        (weights refreshed from the model now) when there is one, else the model itself with float32 inputs."""
        if self.acting_copy is None:
            self._acting = (self.model, torch.float32)
        else:
            with torch.no_grad():
                for copied, source in zip(self.acting_copy.parameters(), self.model.parameters(), strict=True):
                    copied.copy_(source)
            self._acting = (self.acting_copy, torch.bfloat16)
        # A feed-forward critic needs no step-by-step state: its values are computed after the rollout in
        # batches of 4096 (the stored observations are the ones acted on), which is cheaper than one small
        # forward per step (docs/results/speed.md, Training throughput). A recurrent critic runs with the actor.
        self._batch_values = self._acting[0].lstm is None
        return self._acting

    def _normalized(self, obs: torch.Tensor, update: bool = False) -> torch.Tensor:
        if not self.cfg.normalize_observations:
            return obs
        if update:
            self.obs_norm.update(obs)
        return self.obs_norm.normalize(obs)

    def act(
        self, t: int, obs: torch.Tensor, state: RecurrentState, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, RecurrentState]:
        """Step t of the rollout: normalize obs [B, O] (updating the running statistics), sample actions and
        store what the update needs. Returns (action [B] or [B, A], the next recurrent state)."""
        s = self.storage
        assert s is not None, "resize() first"
        model, dtype = self._acting
        with torch.no_grad():
            norm_obs = self._normalized(obs, update=True)
            state = reset_state(state, episode_start)
            s.store_state(t, state)
            with self.autocast():
                action, logprob, value, state = model.act(norm_obs.to(dtype), state, with_value=not self._batch_values)
        if self.debug:
            extra = {} if value is None else {"value": value}
            check_finite(f"at rollout step {t}", norm_obs=norm_obs, logprob=logprob, **extra)
        s.obs[t] = norm_obs
        s.actions[t] = action
        if self.imitating:
            assert self.teacher is not None and s.teacher_actions is not None  # imitating implies both
            s.teacher_actions[t] = self.teacher.actions(obs)
        s.logprobs[t] = logprob
        if value is not None:
            s.values[t] = value
        s.episode_start[t] = episode_start
        return action, state

    def process_step(
        self,
        t: int,
        reward: torch.Tensor,
        terminated: torch.Tensor,
        truncated: torch.Tensor,
        final_obs: torch.Tensor | None,
        state: RecurrentState,
    ) -> torch.Tensor:
        """Store step t's outcome for the learner agents: reward, terminated, truncated [B] (reward scaled when
        ppo.scale_rewards), and for truncated episodes the value of final_obs [B, O] (their last observation,
        raw) to bootstrap from. Returns ended [B] (terminated or truncated), the next step's episode_start."""
        s, p = self.storage, self.cfg
        assert s is not None and self.return_scaler is not None, "resize() first"
        if self.debug:
            check_finite(f"at rollout step {t}", reward=reward)
        ended = terminated | truncated
        s.rewards[t] = self.return_scaler.update_and_scale(reward, ended) if p.scale_rewards else reward
        s.terminated[t] = terminated
        s.episode_end[t] = ended
        s.next_values[t] = 0.0
        if final_obs is not None and bool(truncated.any()):
            model, dtype = self._acting
            with torch.no_grad(), self.autocast():
                final_value = model.value(self._normalized(final_obs).to(dtype), state)
            s.next_values[t] = torch.where(truncated, final_value, 0.0)
        return ended

    def compute_returns(self, obs: torch.Tensor, state: RecurrentState, episode_start: torch.Tensor) -> None:
        """After the rollout: the critic's values (batched for a feed-forward critic), V of the observation
        after the last step obs [B, O], then advantages and returns by GAE."""
        s = self.storage
        assert s is not None
        model, dtype = self._acting
        with torch.no_grad(), self.autocast():
            if self._batch_values:
                self._batched_values(model, dtype)
            last_value = model.value(self._normalized(obs).to(dtype), reset_state(state, episode_start))
        # next_values[t] = V(s_{t+1}) inside an episode; set at truncations; 0 after termination.
        following = torch.cat([s.values[1:], last_value.unsqueeze(0)])
        s.next_values.copy_(torch.where(s.episode_end, s.next_values, following))
        self.estimate_advantages()

    def estimate_advantages(self) -> None:
        """Advantages and returns [T, B] by GAE from the stored rewards, values and next values (each agent's
        column on its own, so columns from different workers may sit side by side)."""
        s, p = self.storage, self.cfg
        assert s is not None
        s.advantages, s.returns = compute_gae(
            s.rewards, s.values, s.next_values, s.terminated, s.episode_end, p.gamma, p.gae_lambda
        )

    def _batched_values(self, model: ActorCritic, dtype: torch.dtype, chunk: int = 4096) -> None:
        """Fill storage values [T, B] with the critic's values of the stored observations, `chunk` rows per
        forward (under the caller's no_grad and autocast)."""
        s = self.storage
        assert s is not None
        obs, values = s.obs.view(-1, s.obs.shape[-1]), s.values.view(-1)
        for lo in range(0, obs.shape[0], chunk):
            values[lo : lo + chunk] = model.value(obs[lo : lo + chunk].to(dtype))
        if self.debug:
            check_finite("in the critic values computed after the rollout", value=values)

    # ------------------------------------------------------------------------------ the update
    def update(self, progress: float) -> tuple[UpdateStats, int]:
        """The PPO update of the stored rollout at the schedules' values for `progress` in [0, 1]; returns
        (the update's statistics, minibatches skipped as non-finite)."""
        assert self.storage is not None
        p = self.cfg
        imitation = imitation_weight(p.imitation_coef, p.imitation_until, progress) if self.imitating else 0.0
        self.imitating = self.teacher is not None and progress < p.imitation_until
        return ppo_update(
            self.model,
            self.optimizer,
            self.scaler,
            self.storage,
            self.cfg,
            self.lr_schedule.value(progress),
            self.entropy_schedule.value(progress),
            self.shuffle,
            self.autocast,
            imitation_coef=imitation,
        )

    # ------------------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """The algorithm's part of a checkpoint (the keys a checkpoint has always used)."""
        assert self.return_scaler is not None
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "obs_norm": self.obs_norm.state_dict(),
            "return_scaler": self.return_scaler.state_dict(),
            "shuffle_generator": self.shuffle.get_state(),
        }

    def init_from(self, state: dict, source: str) -> bool:
        """Take the network and observation normalizer of a checkpoint's state (`source` names it in errors).

        A network whose actor and critic MLPs are wider than the checkpoint's, and otherwise alike, is widened
        (rocketrl.policy.widen: it starts acting as the checkpoint does); returns whether it was."""
        mine = self.model.state_dict()
        theirs = state.get("model")
        if not isinstance(theirs, dict):
            raise ValueError(f"run.init_from={source}: the checkpoint holds no network")
        differ = [k for k in mine if k not in theirs or tuple(theirs[k].shape) != tuple(mine[k].shape)]
        extra = [k for k in theirs if k not in mine]
        if differ or extra:
            name = (differ or extra)[0]
            try:
                theirs = widened_state_dict(theirs, mine)
            except ValueError as why:
                raise ValueError(
                    f"run.init_from={source}: its network differs from this run's at {name!r} "
                    f"({tuple(theirs[name].shape) if name in theirs else 'missing'} against "
                    f"{tuple(mine[name].shape) if name in mine else 'missing'}), and cannot be widened into it "
                    f"({why}); give model sizes that match it, or wider hidden widths of the same depth"
                ) from None
        self.model.load_state_dict(theirs)
        if state.get("obs_norm") is not None:
            self.obs_norm.load_state_dict(state["obs_norm"])
        return bool(differ or extra)

    def load_state_dict(self, state: dict) -> None:
        assert self.return_scaler is not None
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.obs_norm.load_state_dict(state["obs_norm"])
        self.return_scaler.load_state_dict(state["return_scaler"])
        self.shuffle.set_state(restorable_generator_state(state["shuffle_generator"], self.shuffle))


def restorable_generator_state(saved: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A generator state that `generator.set_state` takes: always a CPU byte tensor, whichever device the
    generator draws on and wherever the checkpoint's tensors were loaded. A state saved by a generator of the
    other device kind (a CPU run resumed on CUDA, or back: 5,056 bytes of Mersenne Twister against 16 of
    Philox) cannot be restored; the generator is then seeded from the saved bytes, so the resumed run is
    still reproducible, though it shuffles differently from the run it continues."""
    saved = saved.detach().to("cpu", torch.uint8)
    if saved.numel() == generator.get_state().numel():
        return saved
    seed = int.from_bytes(hashlib.sha256(saved.numpy().tobytes()).digest()[:8], "little")
    return torch.Generator(device=generator.device).manual_seed(seed).get_state()
