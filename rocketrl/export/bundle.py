"""`rocketrl export`: a checkpoint -> a self-contained RLBot v5 bot folder.

The folder (nothing in it is a pickle; it needs numpy, safetensors and rlbot, not torch or rocketrl):

    bot.toml            the framework's bot config: name, agent id, run commands, loadout file, tags
    loadout.toml        the Octane (the hitbox every rocketrl bot trains with), for both teams
    match.toml, run_match.py  an example match (the bot against Psyonix's All-Star) and its starter
    bot.py              the bot script RLBot starts (`python bot.py`; `python bot.py --self-test` checks it offline)
    rocketrl_bot/       the bot's code: observation builder, packet reader, numpy actor, RLBot agent
    model.safetensors   the actor's weights (and LSTM core), float32, under their training names
    bot.json            settings: tick skip, observation layout and boost pads, the action table, the
                        observation normalization statistics, the network's shape, where it came from
    requirements.txt    what the bot needs installed
    README.md           what was measured, and the steps from download to a running match
Files are written with ordinary modes (0644 and 0755 less the umask).
"""

from __future__ import annotations

import json
import os
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
from rocketrl.export import folder_files
from rocketrl.export.folder_files import BadBotName, check_name
from rocketrl.infra.checkpoint import load_checkpoint
from rocketrl.league.team_sizes import card_results, trained_team_sizes
from rocketrl.policy.actor_critic import model_config, weights_obs_size
from rocketrl.policy.attention import ENTITY_SIZE, QUERY_SIZE
from rocketrl.policy.load import checkpoint_config, is_named_bot, resolve_checkpoint
from rocketrl.sim.arena import BACK_WALL_Y, BOOST_PADS, DEFAULT_TICK_SKIP, GOAL_HEIGHT, MAX_TEAM_SIZE, NUM_BOOST_PADS

RUNTIME = Path(__file__).resolve().parent / "runtime"
RUNTIME_FILES = ("__init__.py", "obs.py", "packet.py", "policy.py", "attention.py", "agent.py", "selftest.py")
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
    """(path, config, model weights, obs_norm state or None) of a checkpoint (a shipped bot's name or a path)."""
    path = resolve_checkpoint(checkpoint)
    state, meta = load_checkpoint(path)
    config = checkpoint_config(path, meta)
    weights = state.get("model")
    if not isinstance(weights, dict) or not any(k.startswith("actor.") for k in weights):
        raise ExportError(
            f"{path}: holds no policy network (no 'model' tensors with an actor); export a training checkpoint "
            "(runs/<run>/checkpoints/*.safetensors), 'pretrained' or 'pretrained_team'"
        )
    obs_size = weights_obs_size(weights)
    if obs_size != obs_layout.OBS_SIZE:
        raise ExportError(
            f"{path}: the network reads {obs_size} observation floats; export knows the default {obs_layout.OBS_SIZE}"
        )
    norm = state.get("obs_norm") if config.get("ppo", {}).get("normalize_observations", True) else None
    return path, config, weights, norm


def model_settings(model_cfg: dict[str, Any], weights: dict[str, torch.Tensor], action_kind: str) -> dict:
    """The "model" section of bot.json: the network's kind and shape, for rocketrl_bot/policy.py."""
    m = model_config(model_cfg)
    if m.kind == "attention":
        return {
            "kind": "attention",
            "activation": m.activation,
            "embed_size": m.embed_size,
            "heads": m.attention_heads,
            "layers": m.attention_layers,
            "query_size": QUERY_SIZE,
            "entity_size": ENTITY_SIZE,
            "head_layers": len(m.actor_hidden) + 1,
            "lstm_hidden": None,
            "action_kind": action_kind,
        }
    layers = sorted(
        {k.rsplit(".", 1)[0] for k in weights if k.startswith("actor.")}, key=lambda s: int(s.split(".")[1])
    )
    return {
        "kind": "mlp",
        "activation": m.activation,
        "actor_layers": layers,
        "lstm_hidden": m.lstm_hidden if m.lstm else None,
        "action_kind": action_kind,
    }


def bot_settings(path: Path, config: dict[str, Any], weights: dict[str, torch.Tensor], norm: dict | None) -> dict:
    """The contents of bot.json."""
    model_cfg, env_cfg, ppo_cfg = config.get("model", {}), config.get("env", {}), config.get("ppo", {})
    action_kind = env_cfg.get("action", "discrete")
    return {
        "format": "rocketrl-bot",
        "version": 1,
        "rocketrl_version": __version__,
        "checkpoint": path.name,
        "tick_skip": int(env_cfg.get("tick_skip", DEFAULT_TICK_SKIP)),
        "trained_team_sizes": trained_team_sizes(config),
        "model": model_settings(model_cfg, weights, action_kind),
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


def measured_team_sizes(path: Path, settings: dict) -> dict[str, str]:
    """Team size -> the figures measured in it, from the checkpoint's card (a JSON beside it, as the shipped bots
    have). A card lists its figures per size under "by_team_size" ({"2v2": {opponent: result}}), or, as the 1v1
    bot's card does, at its top level for its one "team_size" (else the first size the bot trained in). No card:
    nothing measured."""
    card_path = path.with_suffix(".json")
    if not card_path.is_file():
        return {}
    card = json.loads(card_path.read_text())
    measured = {}
    for size, results in card_results(card, settings["trained_team_sizes"][0]).items():
        figures = [
            f"{result['wins']} of {result.get('games', result.get('num_games'))} games won against {opponent}"
            for opponent, result in results.items()
            if isinstance(result, dict) and "wins" in result
        ]
        if figures:
            measured[size] = "; ".join(figures)
    return measured


def tags_for(settings: dict, measured: dict[str, str]) -> list[str]:
    """RLBot tags: "1v1" where the bot trained or was measured in 1v1, and "teamplay" only where a team size above
    1v1 was measured."""
    tags = ["1v1"] if "1v1" in [*settings["trained_team_sizes"], *measured] else []
    if any(size != "1v1" for size in measured):
        tags.append("teamplay")
    return tags


def write_ordinary(path: Path, text: str) -> None:
    """Write `text` to `path` readable by everyone (0644 less the umask), as any file a user copies around."""
    path.write_text(text)
    path.chmod(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def export_rlbot(checkpoint: str | Path, out: str | Path, name: str | None = None, force: bool = False) -> Path:
    """Write the bot folder `out` for `checkpoint` (a shipped bot's name or a path); returns the folder.

    The folder is built in a temporary sibling and renamed into place, so a failure leaves no half bot.
    An existing non-empty `out` raises ExportError unless force=True (then it is replaced).
    """
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
        raise ExportError(f"--out {out} already exists and is not empty; choose a new folder or pass --force")
    try:
        name = check_name(name) if name is not None else None
    except BadBotName as error:
        raise ExportError(str(error)) from None
    path, config, weights, norm = load_for_export(checkpoint)
    settings = bot_settings(path, config, weights, norm)
    run_name = config.get("run", {}).get("name") or path.stem
    name = name or check_name((f"rocketrl {checkpoint}" if is_named_bot(checkpoint) else f"rocketrl {run_name}")[:32])
    agent_id = f"rocketrl/{slug(name)}"
    settings["name"] = name
    measured = measured_team_sizes(path, settings)
    settings["measured_team_sizes"] = measured
    description = "A Rocket League bot trained with reinforcement learning by rocketrl."
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except (OSError, ValueError) as error:
        raise ExportError(f"--out {out}: cannot create the folder there ({error}); choose another path") from None
    try:
        package = staging / "rocketrl_bot"
        package.mkdir()
        for file in RUNTIME_FILES:
            write_ordinary(package / file, (RUNTIME / file).read_text())
        save_file(actor_tensors(weights), str(staging / "model.safetensors"), metadata={"format": "rocketrl-bot"})
        (staging / "model.safetensors").chmod(0o666 & ~_umask())
        write_ordinary(staging / "bot.json", json.dumps(settings, indent=1) + "\n")
        write_ordinary(
            staging / "bot.toml", folder_files.bot_toml(name, agent_id, description, tags_for(settings, measured))
        )
        write_ordinary(staging / "loadout.toml", folder_files.loadout_toml())
        write_ordinary(staging / "match.toml", folder_files.match_toml())
        write_ordinary(staging / "run_match.py", folder_files.RUN_MATCH)
        write_ordinary(staging / "bot.py", bot_script(agent_id))
        write_ordinary(staging / "requirements.txt", REQUIREMENTS)
        write_ordinary(staging / "README.md", folder_files.readme(name, settings, measured))
        for folder in (staging, package):
            folder.chmod(0o777 & ~_umask())
        if out.exists():
            shutil.rmtree(out) if out.is_dir() else out.unlink()
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out
