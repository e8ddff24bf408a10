"""`rocketrl export`: a checkpoint -> a self-contained RLBot v5 bot folder.

The folder (nothing in it is a pickle; it needs numpy, safetensors and rlbot, not torch or rocketrl):

    bot.toml            the framework's bot config: name, agent id, run commands
    bot.py              the bot script RLBot starts (`python bot.py`; `python bot.py --self-test` checks it offline)
    rocketrl_bot/       the bot's code: observation builder, packet reader, numpy actor, RLBot agent
    model.safetensors   the actor's weights (and LSTM core), float32, under their training names
    bot.json            settings: tick skip, observation layout and boost pads, the action table, the
                        observation normalization statistics, the network's shape, where it came from
    requirements.txt    what the bot needs installed
    README.md           how to run it
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from rocketrl import __version__
from rocketrl.env import obs as obs_layout
from rocketrl.env.actions import lookup_table
from rocketrl.infra.checkpoint import load_checkpoint
from rocketrl.policy.load import checkpoint_config, resolve_checkpoint
from rocketrl.sim.arena import BACK_WALL_Y, BOOST_PADS, DEFAULT_TICK_SKIP, GOAL_HEIGHT, MAX_TEAM_SIZE, NUM_BOOST_PADS

RUNTIME = Path(__file__).resolve().parent / "runtime"
RUNTIME_FILES = ("__init__.py", "obs.py", "packet.py", "policy.py", "agent.py", "selftest.py")
REQUIREMENTS = (
    "# RLBot v5 (the rlbot 2.x Python interface and its flatbuffers; Python 3.11 or newer). Exactly this beta:\n"
    "# rlbot 2.x betas have changed its API from one to the next, and the bot was checked against this one.\n"
    "rlbot==2.0.0b56\n"
    "numpy>=1.26\n"
    "safetensors>=0.8\n"
)
OBS_KIND = "default"


class ExportError(ValueError):
    """A checkpoint that cannot be exported, or an output folder that would be overwritten."""


def obs_spec() -> dict[str, Any]:
    """The "obs" section of bot.json: the layout constants of `rocketrl.env.obs` and the soccar boost pads."""
    return {
        "kind": OBS_KIND,
        "size": obs_layout.OBS_SIZE,
        "pos_scale": obs_layout.POS_SCALE,
        "vel_scale": obs_layout.VEL_SCALE,
        "ball_ang_vel_scale": obs_layout.BALL_ANG_VEL_SCALE,
        "car_ang_vel_scale": obs_layout.CAR_ANG_VEL_SCALE,
        "boost_scale": obs_layout.BOOST_SCALE,
        "max_teammates": obs_layout.MAX_TEAMMATES,
        "max_opponents": obs_layout.MAX_OPPONENTS,
        "max_team_size": MAX_TEAM_SIZE,
        "num_pads": NUM_BOOST_PADS,
        "goal_y": BACK_WALL_Y,
        "goal_z": GOAL_HEIGHT / 2,
        "vector_slots": obs_layout._vector_slots(),
        "pads": [list(p) for p in BOOST_PADS],
    }


def actor_tensors(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tensors the actor needs (actor MLP, LSTM core, log_std), float32 and contiguous."""
    keep = ("actor.", "lstm.", "log_std")
    return {k: v.detach().float().contiguous().cpu() for k, v in weights.items() if k.startswith(keep)}


def load_for_export(checkpoint: str | Path) -> tuple[Path, dict[str, Any], dict[str, torch.Tensor], dict | None]:
    """(path, config, model weights, obs_norm state or None) of a checkpoint ('pretrained' or a path)."""
    path = resolve_checkpoint(checkpoint)
    state, meta = load_checkpoint(path)
    config = checkpoint_config(path, meta)
    weights = state["model"]
    obs_size = int(weights["actor.0.weight"].shape[1]) if "lstm.weight_ih_l0" not in weights else None
    if obs_size is None:
        obs_size = int(weights["lstm.weight_ih_l0"].shape[1])
    if obs_size != obs_layout.OBS_SIZE:
        raise ExportError(
            f"{path}: the network reads {obs_size} observation floats; export knows the default {obs_layout.OBS_SIZE}"
        )
    norm = state.get("obs_norm") if config.get("ppo", {}).get("normalize_observations", True) else None
    return path, config, weights, norm


def bot_settings(path: Path, config: dict[str, Any], weights: dict[str, torch.Tensor], norm: dict | None) -> dict:
    """The contents of bot.json."""
    model_cfg, env_cfg, ppo_cfg = config.get("model", {}), config.get("env", {}), config.get("ppo", {})
    action_kind = env_cfg.get("action", "discrete")
    layers = sorted(
        {k.rsplit(".", 1)[0] for k in weights if k.startswith("actor.")}, key=lambda s: int(s.split(".")[1])
    )
    return {
        "format": "rocketrl-bot",
        "version": 1,
        "rocketrl_version": __version__,
        "checkpoint": path.name,
        "tick_skip": int(env_cfg.get("tick_skip", DEFAULT_TICK_SKIP)),
        "trained_team_sizes": [int(env_cfg.get("blue_size", 1)), int(env_cfg.get("orange_size", 1))],
        "model": {
            "activation": model_cfg.get("activation", "elu"),
            "actor_layers": layers,
            "lstm_hidden": model_cfg.get("lstm_hidden") if model_cfg.get("lstm") else None,
            "action_kind": action_kind,
        },
        "obs_norm": None
        if norm is None
        else {
            "mean": norm["mean"].double().tolist(),
            "var": norm["var"].double().tolist(),
            "clip": ppo_cfg.get("obs_clip", 10.0),
        },
        "actions": {"kind": action_kind, "table": lookup_table().tolist() if action_kind == "discrete" else None},
        "obs": obs_spec(),
    }


def slug(text: str) -> str:
    """A name safe for agent ids and folder names."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-").lower() or "bot"


def bot_toml(name: str, agent_id: str) -> str:
    """The RLBot v5 bot config: the bot runs from the interpreter of a `venv` folder inside the bot folder."""
    return (
        "[settings]\n"
        f'name = "{name}"\n'
        f'agent_id = "{agent_id}"\n'
        'root_dir = ""\n'
        "# Run from this folder with its own virtual environment (see README.md): python -m venv venv, then\n"
        "# install requirements.txt into it.\n"
        'run_command = ".\\\\venv\\\\Scripts\\\\python.exe bot.py"\n'
        'run_command_linux = "./venv/bin/python bot.py"\n'
        "hivemind = false\n"
        "\n"
        "[details]\n"
        'description = "A Rocket League bot trained with reinforcement learning by rocketrl."\n'
        'developer = "rocketrl"\n'
        'language = "python"\n'
        'tags = ["1v1", "teamplay"]\n'
    )


def bot_script(agent_id: str) -> str:
    return (
        '"""Start this rocketrl bot: RLBot v5 runs it (see bot.toml).\n\n'
        '`python bot.py --self-test` checks it offline.\n"""\n'
        "\n"
        "import sys\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    if '--self-test' in sys.argv:\n"
        "        from rocketrl_bot.selftest import main\n"
        "\n"
        "        sys.exit(main())\n"
        "    from rocketrl_bot.agent import RocketrlBot\n"
        "\n"
        f"    RocketrlBot({agent_id!r}).run()\n"
    )


def readme(name: str, settings: dict) -> str:
    sizes = settings["trained_team_sizes"]
    return (
        f"# {name}\n\n"
        f"A Rocket League bot exported by rocketrl {settings['rocketrl_version']} from `{settings['checkpoint']}` "
        f"(trained {sizes[0]}v{sizes[1]}, acting every {settings['tick_skip']} ticks) for RLBot v5.\n\n"
        "Set up once, from this folder:\n\n"
        "    python -m venv venv\n"
        "    venv/bin/pip install -r requirements.txt         (Windows: venv\\Scripts\\pip ...)\n"
        "    venv/bin/python bot.py --self-test               (plays a few offline packets and prints its controls)\n\n"
        "Then add `bot.toml` to a match in RLBot v5 (the RLBot GUI or a match toml's `[[cars]] config_file`).\n"
        "The bot plays either team and any team size up to 3v3.\n"
    )


def export_rlbot(checkpoint: str | Path, out: str | Path, name: str | None = None, force: bool = False) -> Path:
    """Write the bot folder `out` for `checkpoint` ('pretrained' or a path); returns the folder.

    The folder is built in a temporary sibling and renamed into place, so a failure leaves no half bot.
    An existing non-empty `out` raises ExportError unless force=True (then it is replaced).
    """
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
        raise ExportError(f"--out {out} already exists and is not empty; choose a new folder or pass --force")
    path, config, weights, norm = load_for_export(checkpoint)
    settings = bot_settings(path, config, weights, norm)
    run_name = config.get("run", {}).get("name") or path.stem
    name = name or ("rocketrl pretrained" if str(checkpoint) == "pretrained" else f"rocketrl {run_name}")
    agent_id = f"rocketrl/{slug(name)}"
    settings["name"] = name
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        package = staging / "rocketrl_bot"
        package.mkdir()
        for file in RUNTIME_FILES:
            shutil.copyfile(RUNTIME / file, package / file)
        save_file(actor_tensors(weights), str(staging / "model.safetensors"), metadata={"format": "rocketrl-bot"})
        (staging / "bot.json").write_text(json.dumps(settings, indent=1) + "\n")
        (staging / "bot.toml").write_text(bot_toml(name, agent_id))
        (staging / "bot.py").write_text(bot_script(agent_id))
        (staging / "requirements.txt").write_text(REQUIREMENTS)
        (staging / "README.md").write_text(readme(name, settings))
        if out.exists():
            shutil.rmtree(out) if out.is_dir() else out.unlink()
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out
