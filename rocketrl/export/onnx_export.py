"""`rocketrl export --format onnx`: the actor, observation normalization included, as one ONNX model.

Inputs and outputs (N agents, O = 180 observation floats, A = 90 lookup-table actions or 8 controls):

    obs       float32 [N, O]   the raw observation of `rocketrl.env.obs` (normalized inside the graph)
    h, c      float32 [1, N, H]  LSTM state in (recurrent bots only; zeros at every kickoff)
    logits    float32 [N, A]   action logits (continuous bots: the action means)
    action    int64 [N]        the greedy action, an index into the lookup table (discrete bots only)
    h_out, c_out               the next LSTM state (recurrent bots only)

Beside the model, `<name>.json` holds what a program needs to feed it and use its output: the tick skip,
the observation layout and boost pads, and the action table (bot.json of the RLBot export, without the
normalization statistics, which are in the graph).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import torch
from torch import nn

from rocketrl.export.bundle import ExportError, bot_settings, load_for_export
from rocketrl.infra.atomic_file import write_atomic
from rocketrl.policy.actor_critic import ActorCritic

OPSET = 17


class ExportedActor(nn.Module):
    """obs [N, O] (and LSTM state) -> logits [N, A], greedy action [N] (and the next state)."""

    def __init__(self, model: ActorCritic, mean: torch.Tensor | None, std: torch.Tensor | None, clip: float | None):
        super().__init__()
        self.model = model
        self.register_buffer("mean", mean if mean is not None else torch.zeros(model.obs_size))
        self.register_buffer("std", std if std is not None else torch.ones(model.obs_size))
        self.clip = clip
        self.normalize = mean is not None

    def forward(self, obs: torch.Tensor, h: torch.Tensor | None = None, c: torch.Tensor | None = None):
        x = (obs - self.mean) / self.std if self.normalize else obs
        if self.normalize and self.clip is not None:
            x = x.clamp(-self.clip, self.clip)
        if self.model.lstm is not None:
            out, (h_out, c_out) = self.model.lstm(x.unsqueeze(0), (h, c))
            logits = self.model.actor(out.squeeze(0))
            return logits, logits.argmax(-1), h_out, c_out
        logits = self.model.actor(x)
        return (logits, logits.argmax(-1)) if self.model.discrete else logits


def build_actor(checkpoint: str | Path) -> tuple[ExportedActor, dict]:
    """The exportable actor of a checkpoint ('pretrained' or a path), in eval mode, and its bot settings."""
    path, config, weights, norm = load_for_export(checkpoint)
    settings = bot_settings(path, config, weights, norm)
    discrete = settings["model"]["action_kind"] == "discrete"
    num_actions = len(settings["actions"]["table"]) if discrete else 8
    model = ActorCritic.from_config(int(settings["obs"]["size"]), num_actions, config.get("model", {}), discrete)
    model.load_state_dict({k: v.float() for k, v in weights.items()})
    model.eval()
    mean = std = None
    clip = None
    if norm is not None:
        mean = norm["mean"].to(torch.float32)
        std = (norm["var"].double() + 1e-8).sqrt().to(torch.float32)
        clip = settings["obs_norm"]["clip"]
    return ExportedActor(model, mean, std, clip).eval(), settings


def export_onnx(checkpoint: str | Path, out: str | Path, force: bool = False) -> Path:
    """Write the ONNX actor to `out` (a .onnx file) and its settings to `out` with .json; returns the model path."""
    out = Path(out)
    if out.suffix != ".onnx":
        raise ExportError(f"--out {out}: an ONNX export is one file; give a path ending in .onnx")
    if out.exists() and not force:
        raise ExportError(f"--out {out} already exists; choose a new path or pass --force")
    actor, settings = build_actor(checkpoint)
    obs = torch.zeros(2, int(settings["obs"]["size"]))
    recurrent = actor.model.lstm is not None
    if recurrent:
        hidden = actor.model.lstm.hidden_size
        args: tuple = (obs, torch.zeros(1, 2, hidden), torch.zeros(1, 2, hidden))
        inputs, outputs = ["obs", "h", "c"], ["logits", "action", "h_out", "c_out"]
    else:
        args = (obs,)
        inputs, outputs = ["obs"], (["logits", "action"] if actor.model.discrete else ["logits"])
    batch_axis = {name: {0: "agents"} for name in ("obs", "logits", "action")}
    batch_axis.update({name: {1: "agents"} for name in ("h", "c", "h_out", "c_out")})
    out.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the TorchScript exporter's notices about itself
            torch.onnx.export(
                actor,
                args,
                tmp,
                input_names=inputs,
                output_names=outputs,
                dynamic_axes={k: v for k, v in batch_axis.items() if k in inputs + outputs},
                opset_version=OPSET,
                dynamo=False,
            )

    write_atomic(out, write)
    sidecar = {k: v for k, v in settings.items() if k != "obs_norm"}
    sidecar["onnx"] = {"inputs": inputs, "outputs": outputs, "normalization": "inside the graph"}
    sidecar_path = out.with_suffix(".json")
    write_atomic(sidecar_path, lambda tmp: Path(tmp).write_text(json.dumps(sidecar, indent=1) + "\n"))
    return out
