"""Every setting of a training run: `load_config` reads the defaults, a YAML file (sections env, ppo, model,
speed, run, league, ray; see configs/base.yaml) and CLI-style overrides into a typed, validated TrainConfig.

This is the public face of the settings. Each section lives with the package it configures (env/config.py,
ppo/config.py, policy/config.py, league/config.py, distributed/config.py) and ppo/train_config.py composes and
loads them.
"""

from rocketrl.ppo.train_config import (
    SECTIONS,
    ModelConfig,
    PPOConfig,
    RayConfig,
    RunConfig,
    SpeedConfig,
    TrainConfig,
    base_config_path,
    config_from_dict,
    config_to_dict,
    describe_fields,
    load_config,
    parse_override_tokens,
    preset_config_path,
    save_resolved_config,
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
    "preset_config_path",
    "save_resolved_config",
]
