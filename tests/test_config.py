"""TrainConfig: defaults, YAML loading, overrides, type and name errors, validation, round trip, field docs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rocketrl.config import (
    SECTIONS,
    ModelConfig,
    PPOConfig,
    RunConfig,
    SpeedConfig,
    TrainConfig,
    base_config_path,
    config_from_dict,
    config_to_dict,
    describe_fields,
    load_config,
    parse_override_tokens,
    save_resolved_config,
)
from rocketrl.env.config import EnvConfig

REPO = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str, name: str = "cfg.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------- defaults
def test_defaults_are_valid_and_match_the_brief() -> None:
    cfg = TrainConfig()
    cfg.validate()
    assert cfg == load_config()
    assert cfg.ppo.rollout_steps == 64 and cfg.ppo.epochs == 4 and cfg.ppo.minibatches == 4
    assert cfg.ppo.value_clip_coef is None and cfg.ppo.target_kl == 0.05 and cfg.ppo.lr_schedule == "linear"
    assert cfg.ppo.resolved_lr_end == pytest.approx(1e-4)
    assert cfg.model.actor_hidden == [256, 256] and cfg.model.activation == "elu" and not cfg.model.lstm
    assert cfg.speed.amp == "off" and not cfg.speed.compile
    assert cfg.run.timesteps == 1_000_000
    assert cfg.agents == cfg.env.num_arenas * 2
    assert cfg.batch_size == 64 * cfg.agents
    # default lists are not shared between instances
    assert ModelConfig().actor_hidden is not ModelConfig().actor_hidden


def test_base_yaml_loads() -> None:
    assert (REPO / "configs" / "base.yaml").resolve() == base_config_path().resolve()
    cfg = load_config(REPO / "configs" / "base.yaml")
    assert cfg == load_config(str(base_config_path()))
    assert cfg.env.num_arenas == 32 and (cfg.env.blue_size, cfg.env.orange_size) == (1, 1)
    assert cfg.env.state_setter == {"kickoff": 0.5, "random": 0.5}
    assert cfg.env.episode_seconds == 45.0 and cfg.env.no_touch_seconds == 15.0
    assert cfg.env.rewards is None
    assert (cfg.ppo.rollout_steps, cfg.ppo.epochs, cfg.ppo.minibatches) == (64, 4, 4)
    assert cfg.ppo.learning_rate == pytest.approx(1e-3) and isinstance(cfg.ppo.learning_rate, float)
    assert cfg.ppo.entropy_coef == 0.01
    assert cfg.model.actor_hidden == [256, 256] and cfg.model.critic_hidden == [256, 256]
    assert cfg.run.timesteps == 1_000_000 and cfg.run.checkpoint_interval == 250_000


def test_empty_file_and_null_section_give_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "")) == TrainConfig()
    assert load_config(write(tmp_path, "speed:\nppo: {}\n")) == TrainConfig()


# ------------------------------------------------------------------------------------ name errors
def test_unknown_section_is_named_with_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, "ppoo:\n  epochs: 3\n")
    with pytest.raises(ValueError, match=r"ppoo is not a section; did you mean ppo\? allowed: env, ppo, model") as err:
        load_config(path)
    assert str(path) in str(err.value)


def test_unknown_field_is_named_with_suggestion(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"ppo\.learnin_rate is not a setting; did you mean learning_rate\?") as err:
        load_config(write(tmp_path, "ppo:\n  learnin_rate: 0.001\n"))
    assert "allowed: rollout_steps, epochs" in str(err.value)
    with pytest.raises(ValueError, match=r"env\.num_arena is not a setting; did you mean num_arenas\?"):
        load_config(write(tmp_path, "env:\n  num_arena: 4\n"))
    with pytest.raises(ValueError, match=r"run\.zzzz is not a setting; allowed: timesteps"):
        load_config(write(tmp_path, "run:\n  zzzz: 1\n"))


def test_top_level_and_section_must_be_mappings(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mapping of sections"):
        load_config(write(tmp_path, "- 1\n- 2\n"))
    with pytest.raises(ValueError, match="ppo: expected a mapping of settings"):
        load_config(write(tmp_path, "ppo: 3\n"))
    with pytest.raises(ValueError, match="not valid YAML"):
        load_config(write(tmp_path, "ppo: [1\n"))


# ------------------------------------------------------------------------------------ type errors
@pytest.mark.parametrize(
    ("text", "field", "expected", "shown"),
    [
        ("ppo:\n  epochs: three\n", "ppo.epochs", "expected int", "got 'three' (str)"),
        ("ppo:\n  epochs: 2.5\n", "ppo.epochs", "expected int", "got 2.5 (float)"),
        ("ppo:\n  epochs: true\n", "ppo.epochs", "expected int", "got True (bool)"),
        ("ppo:\n  gamma: '0.9'\n", "ppo.gamma", "expected float", "got '0.9' (str)"),
        ("ppo:\n  gamma: null\n", "ppo.gamma", "expected float", "got None"),
        ("ppo:\n  lr_schedule: cosin\n", "ppo.lr_schedule", "expected one of 'constant', 'linear'", "got 'cosin'"),
        ("model:\n  actor_hidden: 256\n", "model.actor_hidden", "expected list of int", "got 256 (int)"),
        ("model:\n  actor_hidden: [256, a]\n", "model.actor_hidden", "expected list of int", "got [256, 'a']"),
        ("model:\n  lstm: 1\n", "model.lstm", r"expected bool (true or false)", "got 1 (int)"),
        ("model:\n  lstm: 'true'\n", "model.lstm", "expected bool", "got 'true' (str)"),
        ("model:\n  lstm: yes\n", "model.lstm", "expected bool", "got 'yes' (str)"),
        ("run:\n  name: 12\n", "run.name", "expected str or null", "got 12 (int)"),
        ("env:\n  state_setter: kickoff\n", "env.state_setter", "expected mapping of str to float", "got 'kickoff'"),
        ("env:\n  state_setter: {kickoff: x}\n", "env.state_setter", "expected mapping", "got {'kickoff': 'x'}"),
        ("env:\n  num_workers: 2.5\n", "env.num_workers", "expected int or null", "got 2.5 (float)"),
    ],
)
def test_type_errors_name_field_type_and_value(
    tmp_path: Path, text: str, field: str, expected: str, shown: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ValueError) as err:
        load_config(path)
    message = str(err.value)
    assert message.startswith(f"{path}: {field}: {expected}")
    assert shown in message


@pytest.mark.parametrize("section", SECTIONS)
def test_dataclass_defaults_are_what_base_yaml_says(section: str) -> None:
    """A config built in Python is the one the CLI trains on: every field of base.yaml's section (the fields it
    names and those it leaves out) equals the dataclass default."""
    from_file = config_to_dict(load_config(base_config_path()))[section]
    defaults = config_to_dict(TrainConfig())[section]
    differ = {name: (value, from_file[name]) for name, value in defaults.items() if value != from_file[name]}
    assert not differ, f"{section}: dataclass default vs base.yaml: {differ}"


def test_env_config_defaults_are_the_default_train_config() -> None:
    assert EnvConfig() == TrainConfig().env == load_config(base_config_path()).env


def test_yaml_coercions(tmp_path: Path) -> None:
    cfg = load_config(
        write(
            tmp_path,
            "ppo:\n  gamma: 1\n  learning_rate: 1e-3\n  lr_end: 1.0e-05\n  target_kl: null\n  value_clip_coef: 0.2\n"
            "run:\n  timesteps: 2e6\n  name: null\nspeed:\n  amp: off\n"
            "env:\n  episode_seconds: 60\n  state_setter: {kickoff: 1}\n",
        )
    )
    assert cfg.ppo.gamma == 1.0 and isinstance(cfg.ppo.gamma, float)
    assert cfg.ppo.learning_rate == 1e-3 and cfg.ppo.lr_end == 1e-5
    assert cfg.ppo.target_kl is None and cfg.ppo.value_clip_coef == 0.2
    assert cfg.run.timesteps == 2_000_000 and isinstance(cfg.run.timesteps, int)
    assert cfg.speed.amp == "off"  # YAML 1.1 would read `off` as false
    assert cfg.env.episode_seconds == 60.0 and isinstance(cfg.env.episode_seconds, float)
    assert cfg.env.state_setter == {"kickoff": 1.0} and isinstance(cfg.env.state_setter["kickoff"], float)


def test_direct_construction_is_type_checked() -> None:
    with pytest.raises(ValueError, match=r"ppo\.epochs: expected int, got '3'"):
        PPOConfig(epochs="3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"speed\.compile: expected bool"):
        SpeedConfig(compile=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"env\.num_arenas: expected int"):
        TrainConfig(env=EnvConfig(num_arenas=4.5))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ppo: expected a PPOConfig"):
        TrainConfig(ppo={"epochs": 3})  # type: ignore[arg-type]


# -------------------------------------------------------------------------------------- overrides
def test_every_override_form() -> None:
    cfg = load_config(
        overrides=[
            "--ppo.learning-rate",
            "3e-4",
            "--env.num-arenas=32",
            "--model.lstm",
            "true",
            "--model.actor-hidden",
            "256,256",
            "--model.critic_hidden=[128, 64]",
            "--env.state-setter",
            "kickoff=0.7,random=0.3",
            "--ppo.target-kl",
            "none",
            "--ppo.value-clip-coef=0.3",
            "--run.name",
            "null",
            "--run.user=alice",
            "--run.timesteps",
            "1_000_000",
            "--run.checkpoint-interval=5e4",
            "--ppo.gamma=1",
            "--speed.amp",
            "bf16",
            "--run.debug",
            "--env.seed",
            "-3",
        ]
    )
    assert cfg.ppo.learning_rate == 3e-4 and cfg.env.num_arenas == 32
    assert cfg.model.lstm is True and cfg.model.actor_hidden == [256, 256] and cfg.model.critic_hidden == [128, 64]
    assert cfg.env.state_setter == {"kickoff": 0.7, "random": 0.3}
    assert cfg.ppo.target_kl is None and cfg.ppo.value_clip_coef == 0.3
    assert cfg.run.name is None and cfg.run.user == "alice"
    assert cfg.run.timesteps == 1_000_000 and cfg.run.checkpoint_interval == 50_000
    assert cfg.ppo.gamma == 1.0 and isinstance(cfg.ppo.gamma, float)
    assert cfg.speed.amp == "bf16" and cfg.run.debug is True
    assert cfg.env.seed == -3


def test_parse_override_tokens_returns_nested_typed_dict() -> None:
    parsed = parse_override_tokens(["--ppo.epochs", "3", "--ppo.epochs=5", "--model.lstm", "--env.rewards=r.yaml"])
    assert parsed == {"ppo": {"epochs": 5}, "model": {"lstm": True}, "env": {"rewards": "r.yaml"}}
    assert parse_override_tokens([]) == {}


def test_overrides_beat_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "ppo:\n  epochs: 3\n  minibatches: 2\n")
    cfg = load_config(path, ["--ppo.epochs", "7"])
    assert cfg.ppo.epochs == 7 and cfg.ppo.minibatches == 2


@pytest.mark.parametrize(
    ("word", "value"),
    [("true", True), ("True", True), ("yes", True), ("1", True), ("false", False), ("NO", False), ("0", False)],
)
def test_override_bool_words(word: str, value: bool) -> None:
    assert load_config(overrides=[f"--run.ascii={word}"]).run.ascii is value


@pytest.mark.parametrize("word", ["2", "on", "maybe", "", "none"])
def test_override_bool_is_strict(word: str) -> None:
    with pytest.raises(ValueError, match=r"run\.ascii: expected bool"):
        load_config(overrides=[f"--run.ascii={word}"])


def test_override_optional_none() -> None:
    cfg = load_config(overrides=["--ppo.lr-end", "NONE", "--run.resume=null", "--env.num-workers", "none"])
    assert cfg.ppo.lr_end is None and cfg.run.resume is None and cfg.env.num_workers is None
    cfg = load_config(overrides=["--ppo.lr-end", "1e-5", "--run.resume=latest", "--env.num-workers", "2"])
    assert cfg.ppo.lr_end == 1e-5 and cfg.run.resume == "latest" and cfg.env.num_workers == 2
    with pytest.raises(ValueError, match=r"ppo\.learning_rate: expected float"):
        load_config(overrides=["--ppo.learning-rate", "none"])


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        (["--ppo.learnin-rate", "1"], r"ppo\.learnin_rate is not a setting; did you mean learning_rate\?"),
        (["--pppo.epochs", "1"], r"pppo is not a section; did you mean ppo\?"),
        (["--epochs", "1"], r"--section\.field"),
        (["ppo.epochs", "1"], "expected an override"),
        (["--ppo.epochs"], r"needs a value \(int\)"),
        (["--ppo.epochs", "--ppo.gamma", "1"], "needs a value"),
        (["--ppo.epochs", "2.5"], r"ppo\.epochs: expected int, got '2\.5'"),
        (["--ppo.gamma", "high"], r"ppo\.gamma: expected float"),
        (["--env.num-workers", "2.5"], r"env\.num_workers: expected int or null, got '2\.5'"),
        (["--model.actor-hidden", "256,x"], r"model\.actor_hidden: expected list of int"),
        (["--env.state-setter", "kickoff"], r"env\.state_setter: expected mapping of str to float"),
        (["--env.state-setter", "kickoff=x"], r"env\.state_setter: expected mapping"),
        (["--model.activation", "gelu"], r"model\.activation: expected one of 'elu', 'relu', 'tanh'"),
    ],
)
def test_override_errors(tokens: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_config(overrides=tokens)


# ---------------------------------------------------------------------------------- paths, saving
def test_relative_rewards_path_resolves_against_yaml_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = tmp_path / "cfgs"
    sub.mkdir()
    path = write(sub, "env:\n  rewards: my_rewards.yaml\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_config(path).env.rewards == str(sub / "my_rewards.yaml")
    absolute = write(sub, f"env:\n  rewards: {tmp_path / 'abs.yaml'}\n", "abs_cfg.yaml")
    assert load_config(absolute).env.rewards == str(tmp_path / "abs.yaml")
    # an override's relative path is relative to the current folder
    assert load_config(path, ["--env.rewards", "r.yaml"]).env.rewards == str(elsewhere / "r.yaml")
    assert load_config(Path("..") / "cfgs" / "cfg.yaml").env.rewards == str(sub / "my_rewards.yaml")


def test_resolved_config_round_trip(tmp_path: Path) -> None:
    cfg = load_config(
        REPO / "configs" / "base.yaml",
        [
            "--ppo.learning-rate=1.5e-5",
            "--ppo.lr-end=1e-7",
            "--ppo.target-kl=none",
            "--ppo.lr-schedule=cosine",
            "--model.lstm=yes",
            "--model.sequence-length=8",
            "--env.rewards",
            str(REPO / "configs" / "rewards.yaml"),
            "--env.state-setter=kickoff=1",
            "--env.num-workers=2",
            "--speed.amp=off",
            "--run.name=my-run",
        ],
    )
    out = save_resolved_config(cfg, tmp_path / "run" / "config.yaml")
    assert out == tmp_path / "run" / "config.yaml"
    again = load_config(out)
    assert again == cfg
    assert config_to_dict(again) == config_to_dict(cfg)
    assert config_from_dict(config_to_dict(cfg)) == cfg
    # a saved default config round-trips too
    assert load_config(save_resolved_config(TrainConfig(), tmp_path / "d.yaml")) == TrainConfig()


def test_config_to_dict_is_plain() -> None:
    data = config_to_dict(TrainConfig())
    assert list(data) == list(SECTIONS)

    def plain(value: object) -> bool:
        if isinstance(value, dict):
            return all(isinstance(k, str) and plain(v) for k, v in value.items())
        if isinstance(value, list):
            return all(plain(v) for v in value)
        return value is None or isinstance(value, (str, int, float, bool))

    assert plain(data)
    for name, cls in SECTIONS.items():
        assert list(data[name]) == [f.name for f in dataclasses.fields(cls)]
    data["model"]["actor_hidden"].append(1)  # a copy, not the config's own list
    assert TrainConfig().model.actor_hidden == [256, 256]


# ------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["--ppo.minibatches=0"], r"ppo\.minibatches=0: must be at least 1"),
        (["--ppo.epochs=0"], r"ppo\.epochs=0: must be at least 1"),
        (["--ppo.rollout-steps=0"], r"ppo\.rollout_steps=0: must be at least 1"),
        (["--ppo.gamma=0"], r"ppo\.gamma=0\.0: must lie in \(0, 1\]"),
        (["--ppo.gamma=1.01"], r"ppo\.gamma=1\.01"),
        (["--ppo.gae-lambda=-0.1"], r"ppo\.gae_lambda=-0\.1: must lie in \[0, 1\]"),
        (["--ppo.gae-lambda=1.5"], r"ppo\.gae_lambda=1\.5"),
        (["--ppo.learning-rate=0"], r"ppo\.learning_rate=0\.0"),
        (["--ppo.learning-rate=-1e-4"], r"ppo\.learning_rate=-0\.0001"),
        (["--ppo.lr-end=-1"], r"ppo\.lr_end=-1\.0"),
        (["--ppo.lr-schedule=exponential", "--ppo.lr-end=0"], r"ppo\.lr_end=0\.0: an exponential schedule"),
        (["--ppo.clip-coef=0"], r"ppo\.clip_coef=0\.0"),
        (["--ppo.value-clip-coef=0"], r"ppo\.value_clip_coef=0\.0"),
        (["--ppo.target-kl=-1"], r"ppo\.target_kl=-1\.0"),
        (["--ppo.entropy-coef=-0.1"], r"ppo\.entropy_coef=-0\.1"),
        (["--ppo.entropy-coef-end=-0.1"], r"ppo\.entropy_coef_end=-0\.1"),
        (["--ppo.entropy-schedule=exponential", "--ppo.entropy-coef-end=0"], r"ppo\.entropy_schedule='exponential'"),
        (["--ppo.entropy-schedule=step"], r"ppo\.entropy_schedule"),
        (["--ppo.max-grad-norm=0"], r"ppo\.max_grad_norm=0\.0"),
        (["--ppo.obs-clip=0"], r"ppo\.obs_clip=0\.0"),
        (["--model.actor-hidden="], r"model\.actor_hidden=\[\]"),
        (["--model.critic-hidden=64,0"], r"model\.critic_hidden=\[64, 0\]"),
        (["--model.lstm-hidden=0"], r"model\.lstm_hidden=0"),
        (["--model.sequence-length=0"], r"model\.sequence_length=0"),
        (["--run.timesteps=0"], r"run\.timesteps=0"),
        (["--run.checkpoint-interval=0"], r"run\.checkpoint_interval=0"),
        (["--run.keep-best=0"], r"run\.keep_best=0"),
        (["--run.keep-every=0"], r"run\.keep_every=0: give a positive number of agent-steps"),
        (["--run.seed=-1"], r"run\.seed=-1"),
        (["--run.name=a/b"], r"run\.name='a/b'"),
        (["--env.num-arenas=0"], r"env\.num_arenas=0"),
        (["--env.blue-size=0"], r"env\.blue_size=0"),
        (["--env.orange-size=4"], r"env\.orange_size=4"),
        (["--env.tick-skip=0"], r"env\.tick_skip=0"),
        (["--env.num-workers=0"], r"env\.num_workers=0"),
        (["--env.state-setter=kickof=1"], r"env\.state_setter\.kickof is not a state setter"),
        (["--env.episode-seconds=-1"], r"env\.episode_seconds=-1\.0"),
        (["--env.action=mixed"], r"env\.action: expected one of 'discrete', 'continuous', got 'mixed'"),
        (["--speed.amp=fp16", "--run.device=cpu"], r"speed\.amp='fp16' needs CUDA"),
    ],
)
def test_validation_names_the_field(overrides: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_config(overrides=overrides)


def test_minibatches_against_the_batch() -> None:
    # 1 arena, 1v0 -> 1 agent; 4 steps -> batch of 4 samples
    small = ["--env.num-arenas=1", "--env.orange-size=0", "--ppo.rollout-steps=4"]
    assert load_config(overrides=[*small, "--ppo.minibatches=4"]).batch_size == 4
    with pytest.raises(ValueError, match=r"ppo\.minibatches=5: more minibatches than the batch of ppo\.rollout_steps"):
        load_config(overrides=[*small, "--ppo.minibatches=5"])
    # with an LSTM the batch splits into whole sequences: 2 arenas x 2 cars x (32 / 16) = 8 sequences
    lstm = ["--env.num-arenas=2", "--ppo.rollout-steps=32", "--model.lstm", "--model.sequence-length=16"]
    assert load_config(overrides=[*lstm, "--ppo.minibatches=8"]).model.lstm
    with pytest.raises(ValueError, match=r"ppo\.minibatches=9: more minibatches than the 8 sequences"):
        load_config(overrides=[*lstm, "--ppo.minibatches=9"])


def test_lstm_sequence_length_must_divide_rollout() -> None:
    with pytest.raises(ValueError, match=r"model\.sequence_length=16: must divide ppo\.rollout_steps=60"):
        load_config(overrides=["--ppo.rollout-steps=60", "--model.lstm=true"])
    # without an LSTM the sequence length does not matter
    assert load_config(overrides=["--ppo.rollout-steps=60"]).ppo.rollout_steps == 60


def test_validate_catches_later_mutation() -> None:
    cfg = TrainConfig()
    cfg.ppo.minibatches = 0
    with pytest.raises(ValueError, match=r"ppo\.minibatches=0"):
        cfg.validate()


def test_env_compile_is_the_one_env_layer_switch(tmp_path: Path) -> None:
    assert load_config(overrides=["--env.compile=true"]).env.compile is True
    assert TrainConfig().env.compile is False
    with pytest.raises(ValueError, match=r"speed\.compile_env is no longer a setting: use env\.compile"):
        load_config(overrides=["--speed.compile-env"])
    with pytest.raises(ValueError, match=r"old\.yaml: speed\.compile_env is no longer a setting: use env\.compile"):
        load_config(write(tmp_path, "speed:\n  compile_env: true\n", "old.yaml"))


# ------------------------------------------------------------------------------------------- docs
@pytest.mark.parametrize("cls", [TrainConfig, EnvConfig, PPOConfig, ModelConfig, SpeedConfig, RunConfig])
def test_describe_fields_documents_every_field(cls: type) -> None:
    docs = describe_fields(cls)
    assert list(docs) == [f.name for f in dataclasses.fields(cls)]
    for name, doc in docs.items():
        assert doc.strip(), f"{cls.__name__}.{name} has no docstring"
        assert "\n" not in doc
    assert set(SECTIONS) == set(describe_fields(TrainConfig))


def test_describe_fields_reads_the_literal_after_the_field() -> None:
    assert (
        describe_fields(PPOConfig)["lr_end"] == "Learning rate at the end of training; null uses 0.1 * learning_rate."
    )
    assert describe_fields(EnvConfig)["compile"].startswith("torch.compile observations and rewards into fused")
    assert "Falls back to eager" in describe_fields(EnvConfig)["compile"]


def test_no_webhook_url_in_packaged_configs() -> None:
    for path in (REPO / "configs").glob("*.yaml"):
        assert "discord.com/api/webhooks" not in path.read_text(encoding="utf-8")


def test_every_preset_loads_with_its_rewards_and_curriculum() -> None:
    from rocketrl.env.rewards import RewardConfig
    from rocketrl.league.curriculum import load_curriculum

    presets = Path(__file__).resolve().parent.parent / "rocketrl" / "configs" / "presets"
    names = [p for p in sorted(presets.glob("*.yaml")) if not p.name.startswith(("rewards_", "curriculum_"))]
    assert {p.stem for p in names} >= {"vs_rule", "vs_rule_2v2"}
    for path in names:
        cfg = load_config(path)
        assert cfg.env.rewards is not None and Path(cfg.env.rewards).is_file(), path
        RewardConfig.from_yaml(cfg.env.rewards)
        if cfg.league.curriculum is not None:
            stages = load_curriculum(cfg.league.curriculum).stages
            assert stages[-1].blue_size >= 1, path


def test_every_packaged_rewards_file_loads() -> None:
    from rocketrl.env.rewards import RewardConfig

    presets = Path(__file__).resolve().parent.parent / "rocketrl" / "configs" / "presets"
    files = sorted(presets.glob("rewards_*.yaml"))
    assert {p.stem for p in files} >= {"rewards_team", "rewards_team_roles", "rewards_team_rotation"}
    for path in files:
        assert RewardConfig.from_yaml(path).weights, path


def test_train_preset_flag_loads_the_packaged_preset_and_names_the_choices_when_unknown() -> None:
    import argparse

    from rocketrl.cli import build_parser, build_train_config

    parser = build_parser()
    args, extra = parser.parse_known_args(["train", "--preset", "vs_rule_warp", "--seed", "4"])
    cfg = build_train_config(args, extra)
    assert cfg.env.engine == "warp" and cfg.run.seed == 4 and cfg.env.rewards.endswith("rewards_vs_rule_strength.yaml")
    args, extra = parser.parse_known_args(["train", "--preset", "vs_rul"])
    with pytest.raises(ValueError, match=r"--preset 'vs_rul': no such preset; presets: .*vs_rule, vs_rule_2v2"):
        build_train_config(args, extra)
    both = argparse.Namespace(**{**vars(args), "preset": "vs_rule", "config": "x.yaml"})
    with pytest.raises(ValueError, match="--preset and --config"):
        build_train_config(both, [])


# ------------------------------------------------------------------------------------------ extends
def test_a_file_that_extends_another_changes_only_what_it_lists(tmp_path: Path) -> None:
    base_dir = tmp_path / "base"
    base_dir.mkdir()
    write(
        base_dir,
        "env:\n  rewards: base_rewards.yaml\n  num_arenas: 8\n  state_setter: {kickoff: 0.5, random: 0.5}\n"
        "ppo:\n  gamma: 0.995\n  epochs: 3\nrun:\n  timesteps: 1000\n",
        "parent.yaml",
    )
    child = write(
        tmp_path,
        "extends: base/parent.yaml\nenv:\n  state_setter: {kickoff: 1.0}\nppo:\n  epochs: 5\nrun:\n",
        "child.yaml",
    )
    cfg = load_config(child)
    # sections merge key by key; a mapping-valued setting is replaced whole; an empty section keeps the parent's
    assert cfg.env.num_arenas == 8 and cfg.env.state_setter == {"kickoff": 1.0}
    assert cfg.ppo.gamma == 0.995 and cfg.ppo.epochs == 5 and cfg.run.timesteps == 1000
    # the parent's relative rewards path is read from the parent's folder, not the child's
    assert cfg.env.rewards == str(base_dir / "base_rewards.yaml")
    # overrides still come last
    assert load_config(child, ["--ppo.epochs=2"]).ppo.epochs == 2
    # a grandchild follows the chain to the root
    grandchild = write(tmp_path, "extends: child.yaml\nppo:\n  gamma: 0.99\n", "grandchild.yaml")
    cfg3 = load_config(grandchild)
    assert cfg3.ppo.gamma == 0.99 and cfg3.ppo.epochs == 5 and cfg3.env.num_arenas == 8


def test_extends_errors_name_the_file_and_the_fix(tmp_path: Path) -> None:
    missing = write(tmp_path, "extends: nowhere.yaml\n", "missing.yaml")
    with pytest.raises(ValueError, match=r"missing.yaml: extends: 'nowhere.yaml' names no file"):
        load_config(missing)
    write(tmp_path, "extends: b.yaml\n", "a.yaml")
    write(tmp_path, "extends: a.yaml\n", "b.yaml")
    with pytest.raises(ValueError, match=r"extends makes a loop .*a.yaml -> .*b.yaml -> .*a.yaml"):
        load_config(tmp_path / "a.yaml")
    wrong = write(tmp_path, "extends: [a.yaml]\n", "wrong.yaml")
    with pytest.raises(ValueError, match="extends must be the path of a YAML file"):
        load_config(wrong)
    # a setting the parent gets wrong is reported like any other
    write(tmp_path, "ppo:\n  gama: 0.99\n", "typo_parent.yaml")
    with pytest.raises(ValueError, match="gamma"):
        load_config(write(tmp_path, "extends: typo_parent.yaml\n", "typo_child.yaml"))


def test_a_user_file_can_extend_a_packaged_preset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no configs/ folder here: the packaged preset is found
    mine = write(tmp_path, "extends: configs/presets/vs_rule.yaml\nppo:\n  gamma: 0.997\n", "mine.yaml")
    cfg = load_config(mine)
    preset = load_config(REPO / "rocketrl" / "configs" / "presets" / "vs_rule.yaml")
    assert cfg.ppo.gamma == 0.997
    assert dataclasses.replace(cfg, ppo=dataclasses.replace(cfg.ppo, gamma=preset.ppo.gamma)) == preset


def test_reward_files_extend_term_by_term(tmp_path: Path) -> None:
    from rocketrl.env.rewards import RewardConfig

    write(tmp_path, "team_spirit: 0.2\nweights:\n  goal: 10.0\n  touch: 0.3\n", "parent_rewards.yaml")
    child = write(
        tmp_path,
        "extends: parent_rewards.yaml\nweights:\n  touch: 0.0\n  shot: 1.0\nweights_end:\n  shot: 0.5\n",
        "child_rewards.yaml",
    )
    config = RewardConfig.from_yaml(child)
    assert config.weights == {"goal": 10.0, "touch": 0.0, "shot": 1.0}
    assert config.weights_end == {"shot": 0.5} and config.team_spirit == 0.2
    bad = write(tmp_path, "extends: parent_rewards.yaml\nweights:\n  tuch: 1.0\n", "bad_rewards.yaml")
    with pytest.raises(ValueError, match=r"bad_rewards.yaml: rewards.weights.tuch is not a reward term"):
        RewardConfig.from_yaml(bad)


def test_packaged_variants_extend_vs_rule_and_differ_only_where_they_say() -> None:
    from rocketrl.env.rewards import RewardConfig

    presets = REPO / "rocketrl" / "configs" / "presets"
    vs_rule = config_to_dict(load_config(presets / "vs_rule.yaml"))
    touch = config_to_dict(load_config(presets / "vs_rule_touch.yaml"))
    changed = {
        (section, name)
        for section, values in touch.items()
        for name, value in values.items()
        if vs_rule[section][name] != value
    }
    assert changed == {("env", "engine"), ("env", "rewards")}
    assert touch["env"]["engine"] == "warp" and touch["env"]["rewards"] == str(presets / "rewards_vs_rule_touch.yaml")
    base = RewardConfig.from_yaml(presets / "rewards_vs_rule.yaml").weights
    dodge = RewardConfig.from_yaml(presets / "rewards_vs_rule_dodge.yaml").weights  # extends the touch file
    assert dodge == {**base, "touch_ball_to_goal": 1.0, "conceding_touch": -1.0, "dodge_touch": 2.0}
