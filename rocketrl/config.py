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
import functools
import inspect
import math
import os
import re
import textwrap
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal, Union

import yaml

from rocketrl.env.config import EnvConfig

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
AmpMode = Literal["off", "bf16", "fp16"]
Device = Literal["auto", "cpu", "cuda"]

_STATE_SETTERS = ("kickoff", "random")


def base_config_path() -> Path:
    """configs/base.yaml shipped inside the package."""
    return Path(str(resources.files("rocketrl") / "configs" / "base.yaml"))


# ------------------------------------------------------------------------------------------ types
def _optional_inner(hint: Any) -> Any | None:
    """T for `T | None` (or Optional[T]); None for any other hint."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0]
    return None


def _type_name(hint: Any) -> str:
    """Readable name of a field type for error messages and help."""
    inner = _optional_inner(hint)
    if inner is not None:
        return f"{_type_name(inner)} or null"
    origin = typing.get_origin(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(hint))
    if origin is list:
        return f"list of {_type_name(typing.get_args(hint)[0])}"
    if origin is dict:
        key, value = typing.get_args(hint)
        return f"mapping of {_type_name(key)} to {_type_name(value)}"
    if hint is bool:
        return "bool (true or false)"
    return getattr(hint, "__name__", str(hint))


def _check(value: Any, hint: Any, name: str) -> Any:
    """`value` checked against `hint` and normalised (int -> float, integral float -> int, tuple -> list).

    Raises ValueError naming the field, the expected type and the value.
    """

    def fail() -> typing.NoReturn:
        raise ValueError(f"{name}: expected {_type_name(hint)}, got {value!r} ({type(value).__name__})")

    inner = _optional_inner(hint)
    if inner is not None:
        if value is None:
            return None
        try:
            return _check(value, inner, name)
        except ValueError:
            fail()
    origin = typing.get_origin(hint)
    if origin is Literal:
        if not isinstance(value, str) or value not in typing.get_args(hint):
            fail()
        return value
    if origin is list:
        if not isinstance(value, (list, tuple)):
            fail()
        (item,) = typing.get_args(hint)
        try:
            return [_check(v, item, name) for v in value]
        except ValueError:
            fail()
    if origin is dict:
        if not isinstance(value, Mapping):
            fail()
        key_hint, value_hint = typing.get_args(hint)
        try:
            return {_check(k, key_hint, name): _check(v, value_hint, name) for k, v in value.items()}
        except ValueError:
            fail()
    if hint is bool:
        if not isinstance(value, bool):
            fail()
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail()
        if isinstance(value, float):
            if not value.is_integer():
                fail()
            return int(value)
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail()
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            fail()
        return value
    raise TypeError(f"{name}: unsupported config field type {hint!r}")


def _parse_text(text: str, hint: Any, name: str) -> Any:
    """Value of a CLI override token, parsed by the field's type, then checked by `_check`."""

    def fail() -> typing.NoReturn:
        raise ValueError(f"{name}: expected {_type_name(hint)}, got {text!r}")

    inner = _optional_inner(hint)
    if inner is not None:
        if text.strip().lower() in ("none", "null"):
            return None
        try:
            return _parse_text(text, inner, name)
        except ValueError:
            fail()
    origin = typing.get_origin(hint)
    if origin is list:
        body = text.strip().removeprefix("[").removesuffix("]").strip()
        (item,) = typing.get_args(hint)
        try:
            return [_parse_text(part.strip(), item, name) for part in body.split(",")] if body else []
        except ValueError:
            fail()
    if origin is dict:
        body = text.strip().removeprefix("{").removesuffix("}").strip()
        key_hint, value_hint = typing.get_args(hint)
        result = {}
        for part in body.split(",") if body else []:
            key, sep, value = part.partition("=") if "=" in part else part.partition(":")
            if not sep or not key.strip():
                fail()
            try:
                result[_parse_text(key.strip(), key_hint, name)] = _parse_text(value.strip(), value_hint, name)
            except ValueError:
                fail()
        return result
    if hint is bool:
        word = text.strip().lower()
        if word in ("true", "yes", "1"):
            return True
        if word in ("false", "no", "0"):
            return False
        fail()
    if hint is int:
        try:
            return int(text.strip(), 10)
        except ValueError:
            pass
        try:
            number = float(text.strip())
        except ValueError:
            fail()
        if not number.is_integer():
            fail()
        return int(number)
    if hint is float:
        try:
            return float(text.strip())
        except ValueError:
            fail()
    return _check(text, hint, name)  # str and Literal


@functools.cache
def _field_types(cls: type) -> dict[str, Any]:
    """Resolved type hints of a dataclass's fields (ClassVars left out)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def _check_types(obj: Any, section: str) -> None:
    for name, hint in _field_types(type(obj)).items():
        _check(getattr(obj, name), hint, f"{section}.{name}")


def _at_least(value: float, low: float, name: str) -> None:
    if value < low:
        raise ValueError(f"{name}={value!r}: must be at least {low}")


def _positive(value: float, name: str) -> None:
    if not value > 0:
        raise ValueError(f"{name}={value!r}: must be greater than 0")


def _positive_or_none(value: float | None, name: str) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{name}={value!r}: must be greater than 0, or null to turn it off")


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
    """Weight of the entropy bonus in the loss."""
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
        _check_types(self, "ppo")
        _at_least(self.rollout_steps, 1, "ppo.rollout_steps")
        _at_least(self.epochs, 1, "ppo.epochs")
        _at_least(self.minibatches, 1, "ppo.minibatches")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"ppo.gamma={self.gamma!r}: must lie in (0, 1]")
        if not 0.0 <= self.gae_lambda <= 1.0:
            raise ValueError(f"ppo.gae_lambda={self.gae_lambda!r}: must lie in [0, 1]")
        _positive(self.clip_coef, "ppo.clip_coef")
        _positive_or_none(self.value_clip_coef, "ppo.value_clip_coef")
        _at_least(self.entropy_coef, 0.0, "ppo.entropy_coef")
        _at_least(self.value_coef, 0.0, "ppo.value_coef")
        _positive(self.max_grad_norm, "ppo.max_grad_norm")
        _positive_or_none(self.target_kl, "ppo.target_kl")
        if not (self.learning_rate > 0 and math.isfinite(self.learning_rate)):
            raise ValueError(f"ppo.learning_rate={self.learning_rate!r}: must be a finite number greater than 0")
        if self.lr_end is not None:
            if not (self.lr_end >= 0 and math.isfinite(self.lr_end)):
                raise ValueError(f"ppo.lr_end={self.lr_end!r}: must be a finite number >= 0, or null")
            if self.lr_end == 0 and self.lr_schedule == "exponential":
                raise ValueError("ppo.lr_end=0.0: an exponential schedule cannot reach 0; give a positive end")
        _positive(self.obs_clip, "ppo.obs_clip")
        _positive(self.reward_clip, "ppo.reward_clip")

    @property
    def resolved_lr_end(self) -> float:
        """lr_end, or 0.1 * learning_rate when it is null."""
        return self.lr_end if self.lr_end is not None else 0.1 * self.learning_rate


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
        _check_types(self, "model")
        for name in ("actor_hidden", "critic_hidden"):
            widths = getattr(self, name)
            if not widths:
                raise ValueError(f"model.{name}=[]: give at least one hidden layer width")
            if min(widths) < 1:
                raise ValueError(f"model.{name}={widths!r}: every width must be at least 1")
        _at_least(self.lstm_hidden, 1, "model.lstm_hidden")
        _at_least(self.sequence_length, 1, "model.sequence_length")


@dataclass
class SpeedConfig:
    """Switches that change speed, not what is learned."""

    amp: AmpMode = "off"
    """Automatic mixed precision of the networks: off, bf16 or fp16 (fp16 needs CUDA)."""
    compile: bool = False
    """torch.compile the acting forward pass and the PPO update."""
    compile_env: bool = False
    """torch.compile the env layer (observations, rewards); the same switch as env.compile, either turns it on."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first setting out of range."""
        _check_types(self, "speed")


@dataclass
class RunConfig:
    """Length, device, seeding, logging, checkpoints and notifications of a run."""

    timesteps: int = 2_000_000
    """Agent-steps to train for (every car's step counts)."""
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
    keep_best: int = 5
    """How many of the best checkpoints to keep."""
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
        _check_types(self, "run")
        _at_least(self.timesteps, 1, "run.timesteps")
        _at_least(self.seed, 0, "run.seed")
        if not self.logdir:
            raise ValueError("run.logdir='': give a folder, e.g. 'runs'")
        if self.name is not None and (not self.name.strip() or "/" in self.name or "\\" in self.name):
            raise ValueError(f"run.name={self.name!r}: must be a non-empty folder name without slashes, or null")
        _at_least(self.checkpoint_interval, 1, "run.checkpoint_interval")
        _at_least(self.keep_best, 1, "run.keep_best")
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
        _check_types(env, "env")
        env.__post_init__()
        if not 1 <= env.blue_size <= 3:
            raise ValueError(f"env.blue_size={env.blue_size}: must be 1 to 3")
        if not 0 <= env.orange_size <= 3:
            raise ValueError(f"env.orange_size={env.orange_size}: must be 0 to 3")
        _at_least(env.tick_skip, 1, "env.tick_skip")
        if env.num_workers is not None:
            _at_least(env.num_workers, 1, "env.num_workers")
        unknown = sorted(set(env.state_setter) - set(_STATE_SETTERS))
        if unknown:
            allowed = ", ".join(_STATE_SETTERS)
            raise ValueError(f"env.state_setter.{unknown[0]} is not a state setter; allowed: {allowed}")
        _at_least(env.episode_seconds, 0.0, "env.episode_seconds")
        _at_least(env.no_touch_seconds, 0.0, "env.no_touch_seconds")
        for section in (self.ppo, self.model, self.speed, self.run):
            section.validate()

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
    types_ = _field_types(SECTIONS[section])
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
                raise ValueError(f"{token}: needs a value ({_type_name(hint)})")
        result.setdefault(section, {})[name] = _parse_text(text, hint, f"{section}.{name}")
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
                name: _check(value, _field_hint(section, str(name)), f"{section}.{name}")
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
    for section, values in parse_override_tokens(overrides).items():
        if section == "env" and isinstance(values.get("rewards"), str):
            values["rewards"] = _absolute(values["rewards"], Path.cwd())
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
