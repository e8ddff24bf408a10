"""The learner's config sections: PPOConfig (the update), SpeedConfig (switches that change speed, not what
is learned) and RunConfig (length, device, seeding, logging, checkpoints). `ppo/train_config.py` composes them
with the other packages' sections into a TrainConfig."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from rocketrl.policy.load import refuse_community_bot
from rocketrl.typecheck import at_least, check_field_types, positive, positive_or_none

LrSchedule = Literal["constant", "linear", "exponential", "cosine"]
AmpMode = Literal["auto", "off", "bf16", "fp16"]
Device = Literal["auto", "cpu", "cuda"]
BestBy = Literal["return", "win_rate_vs_rule"]
Distributed = Literal["none", "ray"]


@dataclass
class PPOConfig:
    """Settings of the PPO update: rollout length, losses, optimiser and normalisation."""

    rollout_steps: int = 64
    """Steps T each agent collects per rollout; one update per rollout of T * agents samples."""
    epochs: int = 4
    """Passes over each rollout's batch per update."""
    minibatches: int = 4
    """Minibatches each epoch splits the batch into (one optimiser step each)."""
    gamma: float = 0.99
    """Discount factor of future rewards, in (0, 1]."""
    gae_lambda: float = 0.95
    """GAE lambda: 0 is one-step TD advantages, 1 is Monte Carlo returns."""
    clip_coef: float = 0.2
    """PPO clip range of the probability ratio: [1 - clip, 1 + clip]."""
    value_clip_coef: float | None = None
    """Clip range of the value prediction around the old value; null turns value clipping off."""
    entropy_coef: float = 0.01
    """Weight of the entropy bonus in the loss at the start of training."""
    entropy_schedule: LrSchedule = "constant"
    """How the entropy weight moves from entropy_coef to entropy_coef_end: constant, linear, exponential or
    cosine. A falling weight lets the policy sharpen late in training, so that sampled play gets closer to
    its greedy play."""
    entropy_coef_end: float | None = None
    """Entropy weight at the end of training; null uses 0.1 * entropy_coef (ignored when constant)."""
    value_coef: float = 0.5
    """Weight of the value loss in the loss."""
    max_grad_norm: float = 0.5
    """Clip the global gradient norm to this value before each optimiser step."""
    target_kl: float | None = 0.05
    """Stop the epoch loop of an update early once the approximate KL exceeds this; null never stops."""
    learning_rate: float = 1e-3
    """Adam learning rate at the start of training."""
    lr_schedule: LrSchedule = "linear"
    """How the learning rate moves from learning_rate to lr_end: constant, linear, exponential or cosine."""
    lr_end: float | None = None
    """Learning rate at the end of training; null uses 0.1 * learning_rate."""
    normalize_advantages: bool = True
    """Normalise advantages to mean 0, std 1 within each minibatch."""
    normalize_observations: bool = True
    """Normalise observations by a running mean and std before the networks see them."""
    scale_rewards: bool = True
    """Divide rewards by a running std of the discounted return."""
    obs_clip: float = 10.0
    """Clip normalised observations to [-obs_clip, obs_clip]."""
    reward_clip: float = 10.0
    """Clip scaled rewards to [-reward_clip, reward_clip]."""
    imitation_coef: float = 0.0
    """Weight, at the start of training, of a loss pulling the policy toward RulePolicy's action in each state
    the learner reaches (-log-prob of that action; `ppo/imitation.py`): the policy starts from the scripted
    bot's driving, jumps and dodges. 0 turns it off. Needs the lookup-table actions and default observation."""
    imitation_until: float = 0.3
    """Fraction of training (0-1] at which the imitation weight, falling linearly from imitation_coef, reaches 0."""
    imitation_teacher: str = "rule_policy"
    """Whose action the imitation loss pulls toward: 'rule_policy' (the scripted RulePolicy) or a trained bot
    ('pretrained', 'pretrained_team', 'gauntlet_vN' or a checkpoint path; its greedy action, from its own frozen
    observation normalizer). A bot teacher hands its play to a network of another shape, e.g. an MLP's to
    model.kind attention, where run.init_from cannot copy weights."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first setting out of range."""
        check_field_types(self, "ppo")
        at_least(self.rollout_steps, 1, "ppo.rollout_steps")
        at_least(self.epochs, 1, "ppo.epochs")
        at_least(self.minibatches, 1, "ppo.minibatches")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"ppo.gamma={self.gamma!r}: must lie in (0, 1]")
        if not 0.0 <= self.gae_lambda <= 1.0:
            raise ValueError(f"ppo.gae_lambda={self.gae_lambda!r}: must lie in [0, 1]")
        positive(self.clip_coef, "ppo.clip_coef")
        positive_or_none(self.value_clip_coef, "ppo.value_clip_coef")
        at_least(self.entropy_coef, 0.0, "ppo.entropy_coef")
        if self.entropy_coef_end is not None:
            at_least(self.entropy_coef_end, 0.0, "ppo.entropy_coef_end")
        if self.entropy_schedule == "exponential" and min(self.entropy_coef, self.resolved_entropy_coef_end) <= 0:
            raise ValueError(
                "ppo.entropy_schedule='exponential' cannot start or end at 0: give positive ppo.entropy_coef "
                "and ppo.entropy_coef_end, or use a linear schedule"
            )
        at_least(self.value_coef, 0.0, "ppo.value_coef")
        positive(self.max_grad_norm, "ppo.max_grad_norm")
        positive_or_none(self.target_kl, "ppo.target_kl")
        if not (self.learning_rate > 0 and math.isfinite(self.learning_rate)):
            raise ValueError(f"ppo.learning_rate={self.learning_rate!r}: must be a finite number greater than 0")
        if self.lr_end is not None:
            if not (self.lr_end >= 0 and math.isfinite(self.lr_end)):
                raise ValueError(f"ppo.lr_end={self.lr_end!r}: must be a finite number >= 0, or null")
            if self.lr_end == 0 and self.lr_schedule == "exponential":
                raise ValueError("ppo.lr_end=0.0: an exponential schedule cannot reach 0; give a positive end")
        positive(self.obs_clip, "ppo.obs_clip")
        positive(self.reward_clip, "ppo.reward_clip")
        at_least(self.imitation_coef, 0.0, "ppo.imitation_coef")
        if not 0.0 < self.imitation_until <= 1.0:
            raise ValueError(f"ppo.imitation_until={self.imitation_until!r}: must lie in (0, 1]")
        if not self.imitation_teacher.strip():
            raise ValueError("ppo.imitation_teacher='': give 'rule_policy' or a bot ('pretrained', a checkpoint path)")

    @property
    def resolved_lr_end(self) -> float:
        """The learning rate at the end of training: learning_rate when constant, else lr_end or 0.1 *
        learning_rate when that is null."""
        if self.lr_schedule == "constant":
            return self.learning_rate
        return self.lr_end if self.lr_end is not None else 0.1 * self.learning_rate

    @property
    def resolved_entropy_coef_end(self) -> float:
        """The entropy weight at the end of training: entropy_coef when constant, else entropy_coef_end or
        0.1 * entropy_coef when that is null."""
        if self.entropy_schedule == "constant":
            return self.entropy_coef
        return self.entropy_coef_end if self.entropy_coef_end is not None else 0.1 * self.entropy_coef


@dataclass
class SpeedConfig:
    """Switches that change speed, not what is learned."""

    amp: AmpMode = "off"
    """Automatic mixed precision of the networks: off, bf16, fp16 (fp16 needs CUDA) or auto (bf16 where a probe
    of a second or two, cached per machine, finds it at least 10% faster for this network, else fp32; a CPU
    without bf16 matrix instructions is fp32 at once). Off by default: bf16 also changes the numbers."""
    compile: bool = False
    """torch.compile the acting forward pass and the PPO update."""
    compile_rule: bool = False
    """torch.compile the scripted RulePolicy used as an opponent and in evaluation (about 10x faster per call
    on a CPU; compiles for about 30 s when first used)."""
    rollout_threads: int | None = 1
    """torch CPU threads while collecting rollouts and evaluating (env layer and acting). Their small batched
    ops run best on one thread, and more threads stall badly when the engine's workers hold the cores;
    null leaves torch's default."""
    learn_threads: int | None = None
    """torch CPU threads during the PPO update; null: torch's default (one per core)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first setting out of range."""
        check_field_types(self, "speed")
        if self.rollout_threads is not None:
            at_least(self.rollout_threads, 1, "speed.rollout_threads")
        if self.learn_threads is not None:
            at_least(self.learn_threads, 1, "speed.learn_threads")


@dataclass
class RunConfig:
    """Length, device, seeding, logging, checkpoints and notifications of a run."""

    timesteps: int = 1_000_000
    """Agent-steps to train for (every car's step counts)."""
    max_minutes: float | None = None
    """Also stop (with a checkpoint) after this many minutes of wall time, counted over the whole run: a run resumed
    from its checkpoint trains only the minutes it has left; null: no time limit."""
    device: Device = "auto"
    """Device of the networks and the update: auto (CUDA when available), cpu or cuda."""
    seed: int = 0
    """Seed of torch, numpy and Python's random for the learner (env.seed seeds the arenas)."""
    logdir: str = "runs"
    """Folder that holds one subfolder per run."""
    name: str | None = None
    """Name of the run's subfolder; null makes one from the date and time."""
    user: str | None = None
    """Who started the run, for logs and notifications; null uses the OS user."""
    checkpoint_interval: int = 250_000
    """Save a checkpoint every this many agent-steps."""
    checkpoint_minutes: float | None = None
    """Also save one when this many minutes of wall time have passed since the last save (for preemptible
    machines: it bounds the work a crash can lose in time, whatever the speed); null: by steps only."""
    keep_best: int = 5
    """How many of the best checkpoints to keep."""
    keep_every: int | None = None
    """Also keep, never pruned, the first checkpoint at or past each multiple of this many agent-steps (e.g.
    8_000_000 keeps the bots at 8M, 16M, 24M... to judge a learning curve); null: only the latest and the best."""
    best_by: BestBy = "return"
    """What ranks checkpoints for keep_best: return (mean episode return of the last 100 episodes) or
    win_rate_vs_rule (the league evaluation's win rate against RulePolicy, from an evaluation run since the
    previous checkpoint; needs league.eval_interval > 0 and ideally equal to run.checkpoint_interval)."""
    resume: str | None = None
    """Resume from a checkpoint path, or 'latest' for the newest one in the run folder; null starts fresh."""
    init_from: str | None = None
    """Start the network and its observation normalizer from a checkpoint ('pretrained' for the shipped bot, a
    gauntlet bot such as 'gauntlet_v1', or a path); the optimizer, counters and league start fresh. The checkpoint's
    network must have this run's shape. Ignored when resuming."""
    distributed: Distributed = "none"
    """none: one process collects and learns; ray: rollout workers run as Ray actors (the ray section) and
    this process learns (`pip install "rocketrl[distributed]"`)."""
    debug: bool = False
    """Check every rollout step for NaN or inf (naming the tensor and step); slower."""
    ascii: bool = False
    """Plain ASCII console output, without colours or box drawing."""
    wandb: bool = False
    """Also log to Weights & Biases (project 'rocketrl'; needs `pip install wandb`)."""
    discord_webhook_env: str = "ROCKETRL_DISCORD_WEBHOOK"
    """Environment variable holding a Discord webhook URL for start/checkpoint/finish/crash notices
    (unset: no notices). The URL itself never goes into a config."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first setting out of range."""
        check_field_types(self, "run")
        at_least(self.timesteps, 1, "run.timesteps")
        positive_or_none(self.max_minutes, "run.max_minutes")
        at_least(self.seed, 0, "run.seed")
        if not self.logdir:
            raise ValueError("run.logdir='': give a folder, e.g. 'runs'")
        if self.name is not None and (not self.name.strip() or "/" in self.name or "\\" in self.name):
            raise ValueError(f"run.name={self.name!r}: must be a non-empty folder name without slashes, or null")
        at_least(self.checkpoint_interval, 1, "run.checkpoint_interval")
        positive_or_none(self.checkpoint_minutes, "run.checkpoint_minutes")
        at_least(self.keep_best, 1, "run.keep_best")
        if self.keep_every is not None and self.keep_every < 1:
            raise ValueError(
                f"run.keep_every={self.keep_every!r}: give a positive number of agent-steps (e.g. 8000000), or null"
            )
        if self.resume is not None and not self.resume.strip():
            raise ValueError("run.resume='': give a checkpoint path, 'latest', or null")
        if self.init_from is not None:
            refuse_community_bot(
                "run.init_from",
                self.init_from,
                "a start to train from",
                "Give 'pretrained', a gauntlet bot (gauntlet_vN) or your own checkpoint",
            )
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.discord_webhook_env):
            raise ValueError(
                f"run.discord_webhook_env={self.discord_webhook_env!r}: give the name of the environment variable "
                "that holds the webhook URL (e.g. ROCKETRL_DISCORD_WEBHOOK), never the URL itself"
            )
