"""`rocketrl export`: a checkpoint as an RLBot v5 bot folder or an ONNX actor.

rocketrl export --checkpoint PATH|pretrained --out DIR [--name NAME] [--force]
rocketrl export --checkpoint PATH|pretrained --format onnx --out actor.onnx [--force]
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="write a checkpoint as an RLBot v5 bot folder or an ONNX actor",
        description="Turn a checkpoint into a bot folder RLBot v5 runs (bot.toml, bot.py, weights as safetensors, "
        "settings as JSON; needs numpy, safetensors and rlbot, not torch) or, with --format onnx, into one ONNX "
        "model of the actor with its observation normalization.",
    )
    p.add_argument(
        "--checkpoint",
        required=True,
        help="a checkpoint path, a run folder (its last checkpoint), 'pretrained' (the shipped 1v1 bot) or "
        "'pretrained_team' (the team bot)",
    )
    p.add_argument("--out", required=True, help="the bot folder to create (rlbot) or the .onnx file (onnx)")
    p.add_argument("--format", choices=("rlbot", "onnx"), default="rlbot", help="rlbot (default) or onnx")
    p.add_argument("--name", default=None, help="the bot's name in the game (rlbot; default from the run)")
    p.add_argument("--force", action="store_true", help="replace an existing output")
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:

    if args.format == "onnx":
        return _export_onnx(args)
    from rocketrl.export.bundle import export_rlbot

    folder = export_rlbot(args.checkpoint, args.out, name=args.name, force=args.force)
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    print(f"bot folder written to {folder}:")
    for name in files:
        print(f"  {name}")
    print(
        "next (Python 3.11 or newer; the folder's README.md has the steps for Windows): cd into it, python -m venv "
        "venv, venv/bin/pip install -r requirements.txt, venv/bin/python bot.py --self-test; then add bot.toml to a "
        "match in RLBot v5, or run venv/bin/python run_match.py"
    )
    return 0


def _export_onnx(args: argparse.Namespace) -> int:
    try:
        import onnx  # noqa: F401  (the exporter writes through it)
    except ImportError:
        raise RuntimeError(
            "--format onnx needs the onnx package: pip install 'rocketrl[onnx]' (onnx and onnxruntime)"
        ) from None
    from rocketrl.export.onnx_export import export_onnx

    path = export_onnx(args.checkpoint, Path(args.out), force=args.force)
    print(f"ONNX actor written to {path} (inputs and outputs in {path.with_suffix('.json')})")
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime is not installed: the model was not run (pip install onnxruntime to check it)")
        return 0
    session = ort.InferenceSession(str(path))
    feeds = {
        i.name: np.zeros([1 if isinstance(d, str) else d for d in i.shape], np.float32) for i in session.get_inputs()
    }
    outputs = session.run(None, feeds)
    print(f"checked with onnxruntime {ort.__version__}: logits of shape {tuple(outputs[0].shape)} for one agent")
    return 0
