"""TrainConfig: every setting of a training run, typed, with a one-line doc per field (public face:
`rocketrl.config`).

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
import os
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from rocketrl.distributed.config import RayConfig
from rocketrl.env.config import EnvConfig
from rocketrl.infra.yaml_extends import read_extending_yaml
from rocketrl.league.config import LeagueConfig
from rocketrl.policy.config import ModelConfig
from rocketrl.ppo.config import PPOConfig, RunConfig, SpeedConfig
from rocketrl.typecheck import (
    check_field_types,
    check_value,
    field_types,
    parse_text,
    type_name,
)

__all__ = [
    "SECTIONS",
    "ModelConfig",
    "PPOConfig",
    "RayConfig",
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


def base_config_path() -> Path:
    """configs/base.yaml shipped inside the package."""
    return Path(str(resources.files("rocketrl") / "configs" / "base.yaml"))


def preset_config_path(name: str) -> Path:
    """configs/presets/<name>.yaml shipped inside the package; a ValueError lists the presets when none is called
    `name`."""
    presets = Path(str(resources.files("rocketrl") / "configs" / "presets"))
    path = presets / f"{name}.yaml"
    if not path.is_file():
        names = sorted(p.stem for p in presets.glob("*.yaml") if not p.stem.startswith(("rewards_", "curriculum_")))
        raise ValueError(f"--preset {name!r}: no such preset; presets: {', '.join(names)}")
    return path


# --------------------------------------------------------------------------------------- sections
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
    ray: RayConfig = field(default_factory=RayConfig)
    """Rollout workers on a Ray cluster, used when run.distributed is 'ray'."""

    def __post_init__(self) -> None:
        for name, cls in SECTIONS.items():
            value = getattr(self, name)
            if not isinstance(value, cls):
                raise ValueError(f"{name}: expected a {cls.__name__}, got {type(value).__name__}")
        self.validate()

    @property
    def arenas_per_worker(self) -> int:
        """Arenas of each Ray rollout worker: ray.arenas_per_worker, or env.num_arenas split evenly."""
        return self.ray.arenas_per_worker or max(1, self.env.num_arenas // self.ray.workers)

    @property
    def arenas(self) -> int:
        """Arenas collecting for one update: env.num_arenas, or every Ray worker's arenas when distributed."""
        if self.run.distributed == "ray":
            return self.ray.workers * self.arenas_per_worker
        return self.env.num_arenas

    @property
    def agents(self) -> int:
        """Cars learning side by side: arenas * (env.blue_size + env.orange_size)."""
        return self.arenas * (self.env.blue_size + self.env.orange_size)

    @property
    def batch_size(self) -> int:
        """Samples per update: ppo.rollout_steps * agents."""
        return self.ppo.rollout_steps * self.agents

    def validate(self) -> None:
        """Check every section and the settings that depend on each other; ValueError names the field."""
        env = self.env
        check_field_types(env, "env")
        env.validate()
        for section in (self.ppo, self.model, self.speed, self.run, self.ray):
            section.validate()
        if self.run.distributed == "ray":
            self._validate_distributed()
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

    def _validate_distributed(self) -> None:
        """Settings that a Ray run (run.distributed='ray') needs on top of the single-process ones."""
        ray, env = self.ray, self.env
        if ray.arenas_per_worker is None and env.num_arenas % ray.workers:
            raise ValueError(
                f"env.num_arenas={env.num_arenas} does not split evenly over ray.workers={ray.workers}; make it a "
                f"multiple of the workers or set ray.arenas_per_worker"
            )
        if self.ppo.imitation_coef > 0:
            raise ValueError(
                "ppo.imitation_coef: Ray rollout workers do not label their steps with the teacher's actions yet; "
                "set ppo.imitation_coef 0 with run.distributed='ray'"
            )
        if self.league.replay_top > 0:
            raise ValueError(
                "league.replay_top: replays of top training episodes are not recorded by Ray rollout workers yet; "
                "set league.replay_top 0 with run.distributed='ray'"
            )


SECTIONS: dict[str, type] = {
    "env": EnvConfig,
    "ppo": PPOConfig,
    "model": ModelConfig,
    "speed": SpeedConfig,
    "run": RunConfig,
    "league": LeagueConfig,
    "ray": RayConfig,
}
"""The sections of a TrainConfig, in file order: name -> dataclass."""


# ----------------------------------------------------------------------------------------- naming
def _unknown(kind: str, name: str, allowed: Sequence[str]) -> ValueError:
    """ValueError for a name that is not a section or setting, with a suggestion and the allowed names."""
    close = difflib.get_close_matches(name.rsplit(".", 1)[-1], allowed, n=1)
    hint = f"; did you mean {close[0]}?" if close else ";"
    return ValueError(f"{name} is not a {kind}{hint} allowed: {', '.join(allowed)}")


REPLACED_SETTINGS: dict[str, str] = {"speed.compile_env": "env.compile"}
"""Settings that are no longer read -> the setting that does their work; naming one is an error that names it."""


def _field_hint(section: str, name: str) -> Any:
    """Type of section.name; ValueError with a suggestion when either is unknown."""
    if section not in SECTIONS:
        raise _unknown("section", section, list(SECTIONS))
    replacement = REPLACED_SETTINGS.get(f"{section}.{name}")
    if replacement is not None:
        raise ValueError(f"{section}.{name} is no longer a setting: use {replacement} instead (the same switch)")
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


def _packaged_or_absolute(text: str, folder: Path) -> str:
    """A relative path from `folder`; when nothing is there, 'configs/<name>' falls back to the packaged file."""
    resolved = Path(_absolute(text, folder))
    packaged = Path(str(resources.files("rocketrl") / "configs")) / Path(text).name
    if not resolved.exists() and not Path(text).is_absolute() and packaged.is_file():
        return str(packaged)
    return str(resolved)


def _resolve_file_paths(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """`data` read from the file at `path` with its relative env.rewards and league.curriculum made absolute."""
    env = data.get("env")
    if isinstance(env, dict) and isinstance(env.get("rewards"), str):
        env["rewards"] = _absolute(env["rewards"], path.parent)
    league = data.get("league")
    if isinstance(league, dict) and isinstance(league.get("curriculum"), str):
        league["curriculum"] = _packaged_or_absolute(league["curriculum"], path.parent)
    return data


def load_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> TrainConfig:
    """Defaults, then the YAML file at `path` (if any, over the file its `extends:` names), then CLI-style
    `overrides`; validated.

    A relative env.rewards path is read from the YAML file's folder when it comes from the file, from the
    current folder when it comes from an override; the result holds it as an absolute path.
    """
    data: dict[str, dict[str, Any]] = {}
    where = ""
    if path is not None:
        path = Path(path)
        where = str(path)
        data = read_extending_yaml(path, _Loader, _resolve_file_paths, f"a mapping of sections ({', '.join(SECTIONS)})")
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
