"""TrainConfig: every setting of a training run, typed, with a one-line doc per field.

A run is configured in three layers: the dataclass defaults below, a YAML file with the sections
env / ppo / model / speed / run (see configs/base.yaml), and CLI-style overrides such as
`--ppo.learning-rate 3e-4` or `--env.num-arenas=32`. `load_config` applies them in that order, checks
names and types (unknown names get a "did you mean" suggestion) and validates the result;
`save_resolved_config` records the outcome in a run folder so that `load_config` reproduces it.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import inspect
import math
import os
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from rocketrl.env.config import EnvConfig
from rocketrl.league.config import LeagueConfig
from rocketrl.typecheck import (
    at_least,
    check_field_types,
    check_value,
    field_types,
    parse_text,
    positive,
    positive_or_none,
    type_name,
)

__all__ = [
    "SECTIONS",
    "ModelConfig",
    "PPOConfig",
    "RunConfig",
    "SpeedConfig",
    "TrainConfig",
    "base_config_path",
    "config_from_dict",
    "config_to_dict",
    "describe_fields",
    "load_config",
    "parse_override_tokens",
    "save_resolved_config",
]

LrSchedule = Literal["constant", "linear", "exponential", "cosine"]
Activation = Literal["elu", "relu", "tanh"]
AmpMode = Literal["auto", "off", "bf16", "fp16"]
Device = Literal["auto", "cpu", "cuda"]
BestBy = Literal["return", "win_rate_vs_rule"]

_STATE_SETTERS = ("kickoff", "random")


def base_config_path() -> Path:
    """configs/base.yaml shipped inside the package."""
    return Path(str(resources.files("rocketrl") / "configs" / "base.yaml"))


# --------------------------------------------------------------------------------------- sections
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
    learning_rate: float = 3e-4
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

    @property
    def resolved_lr_end(self) -> float:
        """lr_end, or 0.1 * learning_rate when it is null."""
        return self.lr_end if self.lr_end is not None else 0.1 * self.learning_rate

    @property
    def resolved_entropy_coef_end(self) -> float:
        """The entropy weight at the end of training: entropy_coef when constant, else entropy_coef_end or
        0.1 * entropy_coef when that is null."""
        if self.entropy_schedule == "constant":
            return self.entropy_coef
        return self.entropy_coef_end if self.entropy_coef_end is not None else 0.1 * self.entropy_coef


@dataclass
class ModelConfig:
    """Shape of the actor and critic networks."""

    actor_hidden: list[int] = field(default_factory=lambda: [1024, 512, 256])
    """Hidden layer widths of the policy network, input side first."""
    critic_hidden: list[int] = field(default_factory=lambda: [1024, 512, 256])
    """Hidden layer widths of the value network, input side first."""
    activation: Activation = "elu"
    """Activation between hidden layers: elu, relu or tanh."""
    lstm: bool = False
    """Put an LSTM layer after the hidden layers (recurrent policy and value)."""
    lstm_hidden: int = 256
    """Hidden size of the LSTM layer."""
    sequence_length: int = 16
    """Truncated BPTT length in steps; must divide ppo.rollout_steps when lstm is on."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first setting out of range."""
        check_field_types(self, "model")
        for name in ("actor_hidden", "critic_hidden"):
            widths = getattr(self, name)
            if not widths:
                raise ValueError(f"model.{name}=[]: give at least one hidden layer width")
            if min(widths) < 1:
                raise ValueError(f"model.{name}={widths!r}: every width must be at least 1")
        at_least(self.lstm_hidden, 1, "model.lstm_hidden")
        at_least(self.sequence_length, 1, "model.sequence_length")


@dataclass
class SpeedConfig:
    """Switches that change speed, not what is learned."""

    amp: AmpMode = "off"
    """Automatic mixed precision of the networks: off, bf16, fp16 (fp16 needs CUDA) or auto (bf16 where a probe
    of a second or two, cached per machine, finds it at least 10% faster for this network, else fp32; a CPU
    without bf16 matrix instructions is fp32 at once). Off by default: bf16 also changes the numbers."""
    compile: bool = False
    """torch.compile the acting forward pass and the PPO update."""
    compile_env: bool = False
    """torch.compile the env layer (observations, rewards); the same switch as env.compile, either turns it on."""
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

    timesteps: int = 2_000_000
    """Agent-steps to train for (every car's step counts)."""
    max_minutes: float | None = None
    """Also stop (with a checkpoint) after this many minutes of wall time; null: no time limit."""
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
    best_by: BestBy = "return"
    """What ranks checkpoints for keep_best: return (mean episode return of the last 100 episodes) or
    win_rate_vs_rule (the league evaluation's win rate against RulePolicy, from an evaluation run since the
    previous checkpoint; needs league.eval_interval > 0 and ideally equal to run.checkpoint_interval)."""
    resume: str | None = None
    """Resume from a checkpoint path, or 'latest' for the newest one in the run folder; null starts fresh."""
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
        if self.resume is not None and not self.resume.strip():
            raise ValueError("run.resume='': give a checkpoint path, 'latest', or null")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.discord_webhook_env):
            raise ValueError(
                f"run.discord_webhook_env={self.discord_webhook_env!r}: give the name of the environment variable "
                "that holds the webhook URL (e.g. ROCKETRL_DISCORD_WEBHOOK), never the URL itself"
            )


@dataclass
class TrainConfig:
    """Every setting of a training run, by section."""

    env: EnvConfig = field(default_factory=EnvConfig)
    """Arenas, team sizes, resets, episode limits and rewards."""
    ppo: PPOConfig = field(default_factory=PPOConfig)
    """PPO rollout, losses, optimiser and normalisation."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """Actor and critic networks."""
    speed: SpeedConfig = field(default_factory=SpeedConfig)
    """Mixed precision, compilation and other speed switches."""
    run: RunConfig = field(default_factory=RunConfig)
    """Length, device, seed, logging and checkpoints."""
    league: LeagueConfig = field(default_factory=LeagueConfig)
    """Opponents (self-play, snapshots, RulePolicy), ratings, evaluation and the team-size curriculum."""

    def __post_init__(self) -> None:
        for name, cls in SECTIONS.items():
            value = getattr(self, name)
            if not isinstance(value, cls):
                raise ValueError(f"{name}: expected a {cls.__name__}, got {type(value).__name__}")
        # speed.compile_env and env.compile are one switch; either turns it on and both then say so.
        if self.speed.compile_env or self.env.compile:
            self.speed.compile_env = self.env.compile = True
        self.validate()

    @property
    def agents(self) -> int:
        """Cars learning side by side: env.num_arenas * (env.blue_size + env.orange_size)."""
        return self.env.num_arenas * (self.env.blue_size + self.env.orange_size)

    @property
    def batch_size(self) -> int:
        """Samples per update: ppo.rollout_steps * agents."""
        return self.ppo.rollout_steps * self.agents

    def validate(self) -> None:
        """Check every section and the settings that depend on each other; ValueError names the field."""
        env = self.env
        check_field_types(env, "env")
        env.__post_init__()
        if not 1 <= env.blue_size <= 3:
            raise ValueError(f"env.blue_size={env.blue_size}: must be 1 to 3")
        if not 0 <= env.orange_size <= 3:
            raise ValueError(f"env.orange_size={env.orange_size}: must be 0 to 3")
        at_least(env.tick_skip, 1, "env.tick_skip")
        if env.num_workers is not None:
            at_least(env.num_workers, 1, "env.num_workers")
        unknown = sorted(set(env.state_setter) - set(_STATE_SETTERS))
        if unknown:
            allowed = ", ".join(_STATE_SETTERS)
            raise ValueError(f"env.state_setter.{unknown[0]} is not a state setter; allowed: {allowed}")
        at_least(env.episode_seconds, 0.0, "env.episode_seconds")
        at_least(env.no_touch_seconds, 0.0, "env.no_touch_seconds")
        for section in (self.ppo, self.model, self.speed, self.run):
            section.validate()
        check_field_types(self.league, "league")
        self.league.validate()
        if env.orange_size == 0 and not self.league.pure_selfplay:
            raise ValueError("league.opponents: opponents other than selfplay need env.orange_size >= 1")
        if self.run.best_by == "win_rate_vs_rule" and self.league.eval_interval == 0:
            raise ValueError(
                "run.best_by='win_rate_vs_rule' ranks checkpoints by league evaluations, but league.eval_interval=0 "
                "turns them off; set league.eval_interval (e.g. to run.checkpoint_interval) or use run.best_by='return'"
            )

        ppo, model = self.ppo, self.model
        if model.lstm:
            if ppo.rollout_steps % model.sequence_length:
                raise ValueError(
                    f"model.sequence_length={model.sequence_length}: must divide ppo.rollout_steps="
                    f"{ppo.rollout_steps} when model.lstm is on"
                )
            units = self.agents * (ppo.rollout_steps // model.sequence_length)
            what = f"the {units} sequences of model.sequence_length={model.sequence_length} steps per rollout"
        else:
            units = self.batch_size
            what = f"the batch of ppo.rollout_steps * agents = {ppo.rollout_steps} * {self.agents} = {units} samples"
        if ppo.minibatches > units:
            raise ValueError(f"ppo.minibatches={ppo.minibatches}: more minibatches than {what}")
        if self.speed.amp == "fp16" and self.run.device == "cpu":
            raise ValueError("speed.amp='fp16' needs CUDA but run.device='cpu'; use 'bf16' or 'off' on CPU")


SECTIONS: dict[str, type] = {
    "env": EnvConfig,
    "ppo": PPOConfig,
    "model": ModelConfig,
    "speed": SpeedConfig,
    "run": RunConfig,
    "league": LeagueConfig,
}
"""The sections of a TrainConfig, in file order: name -> dataclass."""


# ----------------------------------------------------------------------------------------- naming
def _unknown(kind: str, name: str, allowed: Sequence[str]) -> ValueError:
    """ValueError for a name that is not a section or setting, with a suggestion and the allowed names."""
    close = difflib.get_close_matches(name.rsplit(".", 1)[-1], allowed, n=1)
    hint = f"; did you mean {close[0]}?" if close else ";"
    return ValueError(f"{name} is not a {kind}{hint} allowed: {', '.join(allowed)}")


def _field_hint(section: str, name: str) -> Any:
    """Type of section.name; ValueError with a suggestion when either is unknown."""
    if section not in SECTIONS:
        raise _unknown("section", section, list(SECTIONS))
    types_ = field_types(SECTIONS[section])
    if name not in types_:
        raise _unknown("setting", f"{section}.{name}", list(types_))
    return types_[name]


# ---------------------------------------------------------------------------------------- loading
def parse_override_tokens(tokens: Sequence[str]) -> dict[str, dict[str, Any]]:
    """CLI-style overrides -> {section: {field: typed value}}.

    Accepts `--section.field value` and `--section.field=value`; dashes in names become underscores; a bool
    field given with no value (followed by another `--` token or nothing) means true. Values are parsed by
    the field's type: bool true/false/yes/no/1/0, none/null for optional fields, comma-separated lists
    (`256,256`) and mappings (`kickoff=0.7,random=0.3`). A later token for the same field wins.
    """
    result: dict[str, dict[str, Any]] = {}
    tokens = list(tokens)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("--"):
            raise ValueError(f"{token!r}: expected an override like --ppo.learning-rate 3e-4")
        key, has_value, text = token[2:].partition("=")
        section, dot, name = key.replace("-", "_").partition(".")
        if not dot or not section or not name:
            raise ValueError(f"{token}: name a setting as --section.field, e.g. --ppo.learning-rate")
        try:
            hint = _field_hint(section, name)
        except ValueError as error:
            raise ValueError(f"{token}: {error}") from None
        if not has_value:
            if i < len(tokens) and not tokens[i].startswith("--"):
                text = tokens[i]
                i += 1
            elif hint is bool:
                text = "true"
            else:
                raise ValueError(f"{token}: needs a value ({type_name(hint)})")
        result.setdefault(section, {})[name] = parse_text(text, hint, f"{section}.{name}")
    return result


def config_from_dict(data: Mapping[str, Any], where: str = "") -> TrainConfig:
    """TrainConfig from {section: {field: value}} (e.g. `config_to_dict` output), names and types checked.

    `where` (a file name) prefixes name and type errors. Missing sections and fields keep their defaults.
    """
    prefix = f"{where}: " if where else ""
    if not isinstance(data, Mapping):
        raise ValueError(f"{prefix}expected a mapping of sections ({', '.join(SECTIONS)}), got {data!r}")
    sections: dict[str, dict[str, Any]] = {}
    for section, values in data.items():
        if values is None:
            values = {}
        try:
            if section not in SECTIONS:
                raise _unknown("section", str(section), list(SECTIONS))
            if not isinstance(values, Mapping):
                raise ValueError(f"{section}: expected a mapping of settings, got {values!r}")
            sections[section] = {
                name: check_value(value, _field_hint(section, str(name)), f"{section}.{name}")
                for name, value in values.items()
            }
        except ValueError as error:
            raise ValueError(f"{prefix}{error}") from None
    built = {name: cls(**sections.get(name, {})) for name, cls in SECTIONS.items() if name != "env"}
    return TrainConfig(env=EnvConfig.from_dict(sections.get("env", {})), **built)


def _absolute(path: str, base: Path) -> str:
    """`path` with ~ expanded, joined to `base` when relative, normalised (symlinks kept)."""
    expanded = Path(os.path.expanduser(path))
    return os.path.normpath(expanded if expanded.is_absolute() else base.absolute() / expanded)


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 scalars: 3e-4 and 1e6 are floats; only true/false are bools (`amp: off` is 'off')."""


_BOOL_TAG = "tag:yaml.org,2002:bool"
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _read_yaml(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        try:
            return yaml.load(handle, Loader=_Loader)  # a SafeLoader subclass: no arbitrary objects
        except yaml.YAMLError as error:
            raise ValueError(f"{path}: not valid YAML: {error}") from None


def _packaged_or_absolute(text: str, folder: Path) -> str:
    """A relative path from `folder`; when nothing is there, 'configs/<name>' falls back to the packaged file."""
    resolved = Path(_absolute(text, folder))
    packaged = Path(str(resources.files("rocketrl") / "configs")) / Path(text).name
    if not resolved.exists() and not Path(text).is_absolute() and packaged.is_file():
        return str(packaged)
    return str(resolved)


def load_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> TrainConfig:
    """Defaults, then the YAML file at `path` (if any), then CLI-style `overrides`; validated.

    A relative env.rewards path is read from the YAML file's folder when it comes from the file, from the
    current folder when it comes from an override; the result holds it as an absolute path.
    """
    data: dict[str, dict[str, Any]] = {}
    where = ""
    if path is not None:
        path = Path(path)
        where = str(path)
        raw = _read_yaml(path)
        raw = {} if raw is None else raw
        if not isinstance(raw, Mapping):
            raise ValueError(f"{path}: expected a mapping of sections ({', '.join(SECTIONS)}) at the top level")
        data = {str(k): dict(v) if isinstance(v, Mapping) else v for k, v in raw.items()}
        env = data.get("env")
        if isinstance(env, dict) and isinstance(env.get("rewards"), str):
            env["rewards"] = _absolute(env["rewards"], path.parent)
        league = data.get("league")
        if isinstance(league, dict) and isinstance(league.get("curriculum"), str):
            league["curriculum"] = _packaged_or_absolute(league["curriculum"], path.parent)
    for section, values in parse_override_tokens(overrides).items():
        if section == "env" and isinstance(values.get("rewards"), str):
            values["rewards"] = _absolute(values["rewards"], Path.cwd())
        if section == "league" and isinstance(values.get("curriculum"), str):
            values["curriculum"] = _packaged_or_absolute(values["curriculum"], Path.cwd())
        current = data.get(section)
        data[section] = {**(current if isinstance(current, dict) else {}), **values}
    return config_from_dict(data, where)


# ----------------------------------------------------------------------------------------- saving
def config_to_dict(cfg: TrainConfig) -> dict[str, dict[str, Any]]:
    """{section: {field: value}} of plain types (str, int, float, bool, None, list, dict), in field order."""
    return {name: dataclasses.asdict(getattr(cfg, name)) for name in SECTIONS}


def save_resolved_config(cfg: TrainConfig, path: str | Path) -> Path:
    """Write `cfg` as YAML (parent folders made); `load_config(path)` gives back an equal TrainConfig."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (
        f"# Resolved rocketrl training config, written {datetime.now().isoformat(timespec='seconds')}.\n"
        "# Every setting is listed; reproduce the run with: rocketrl.config.load_config(<this file>)\n"
    )
    body = yaml.safe_dump(config_to_dict(cfg), sort_keys=False, default_flow_style=False, allow_unicode=True)
    path.write_text(header + body, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------- docs
def describe_fields(cls: type) -> dict[str, str]:
    """{field name: docstring} of a config dataclass, read from the string literal right after each field.

    Multi-line docstrings are joined into one line; a field without one maps to ''.
    """
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = next(node for node in tree.body if isinstance(node, ast.ClassDef)).body
    docs: dict[str, str] = {}
    for node, following in zip(body, body[1:] + [None]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = " ".join(following.value.value.split())
    return {f.name: docs.get(f.name, "") for f in fields(cls)}
