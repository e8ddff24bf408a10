"""`rocketrl diagnose`: where the time goes on this machine, and which switch would help.

Tests: env (speed of every engine), inference (policy latency per batch size, device and precision),
train (a short PPO run split into env, copy, inference and learn), gpu (NVML utilisation and memory).
The result is one JSON-able dict (schema below, SCHEMA names its version); `verdict` names the
bottleneck from the train split, and `compare` lists the change of every numeric measure against
an earlier result. The measurements live in env.py, inference.py, train.py and system.py next to
this module; this module runs them, judges and prints.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

SCHEMA = "rocketrl.diagnose/1"
TESTS = ("env", "inference", "train", "gpu")
STAGES = ("env", "copy", "inference", "learn")
BALANCED_BELOW = 0.4
"""No verdict of one bottleneck when the largest stage takes less than this share of an update."""
BUSY_LOAD_PER_CPU = 0.75
"""A 1-minute load average above this many runnable tasks per core before measuring earns a warning."""
PHYSICS_BOUND_FROM = 0.5
"""An env-bound run is physics-bound when physics takes at least this share of the env step."""


# ------------------------------------------------------------------------------------------ options
def parse_tests(text: str) -> list[str]:
    """'all' or a comma-separated list of env, inference, train, gpu -> the tests in run order."""
    names = [part.strip() for part in text.lower().split(",") if part.strip()]
    if not names or names == ["all"]:
        return list(TESTS)
    unknown = [name for name in names if name not in TESTS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown test {unknown[0]!r}; choose {', '.join(TESTS)} or all "
            "(several separated by commas, e.g. --test env,train)"
        )
    return [name for name in TESTS if name in names]


def read_result(path: str | Path, option: str = "--compare") -> dict[str, Any]:
    """A JSON result written by `rocketrl diagnose --json`; ValueError/FileNotFoundError naming `option`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{option} {path}: no such file; write one first with `rocketrl diagnose --json {path}`"
        )
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{option} {path}: not a JSON file ({error}); give a file written by --json") from None
    if not isinstance(data, dict):
        raise ValueError(f"{option} {path}: expected a JSON object written by `rocketrl diagnose --json`")
    return data


# ------------------------------------------------------------------------------------------ verdict
def verdict(
    seconds: Mapping[str, float], physics_share: float | None = None, settings: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Name the bottleneck of an update and the switch that would help.

    seconds: time per update of each stage {env, copy, inference, learn} (any unit, only ratios count).
    physics_share: fraction (0..1) of an env step spent in physics, when measured.
    settings: the run's current switches, to tailor the advice: device, workers, cpus, env_compile,
    compile, amp, epochs, minibatches (all optional).
    Returns {"bottleneck": env|inference|learn|copy|balanced|unknown, "shares": {stage: 0..1}, "message"}.
    """
    s = dict(settings or {})
    values = {stage: max(0.0, float(seconds.get(stage, 0.0))) for stage in STAGES}
    total = sum(values.values())
    if not total > 0 or not math.isfinite(total):
        return {"bottleneck": "unknown", "shares": {}, "message": "no timings to judge: run --test train"}
    shares = {stage: value / total for stage, value in values.items()}
    top = max(STAGES, key=lambda stage: shares[stage])
    pct = f"{shares[top]:.0%}"
    on_gpu = str(s.get("device", "cpu")).startswith("cuda")
    if shares[top] < BALANCED_BELOW:
        split = ", ".join(f"{stage} {share:.0%}" for stage, share in shares.items() if stage != "copy" or share)
        message = (
            f"balanced: no stage takes {BALANCED_BELOW:.0%} of step time ({split}); raise env.num_arenas "
            "so that every stage works on larger batches"
        )
        return {"bottleneck": "balanced", "shares": shares, "message": message}
    if top == "env":
        message = _env_advice(pct, physics_share, s)
    elif top == "inference":
        tips = [] if s.get("compile") else ["--speed.compile true"]
        tips += [] if s.get("amp", "off") != "off" else ["--speed.amp bf16"]
        tips += ["a larger env.num_arenas per forward pass"] if on_gpu else ["a GPU (--device cuda)"]
        message = f"inference-bound: {pct} of step time in the policy forward pass; try {_or(tips)}"
    elif top == "learn":
        now = lambda name: f" (now {s[name]})" if name in s else ""  # noqa: E731
        tips = [f"fewer --ppo.epochs{now('epochs')} or --ppo.minibatches{now('minibatches')}", "a smaller network"]
        tips += [] if s.get("amp", "off") != "off" else ["--speed.amp bf16"]
        tips += [] if on_gpu else ["a GPU (--device cuda)"]
        message = f"learn-bound: {pct} of step time in the PPO update; try {_or(tips)}"
    else:
        message = (
            f"copy-bound: {pct} of step time copying between host and device; keep env.pin_memory true and "
            "raise env.num_arenas so that each copy moves more, or train on the CPU (--device cpu)"
        )
    return {"bottleneck": top, "shares": shares, "message": message}


def _env_advice(pct: str, physics_share: float | None, s: Mapping[str, Any]) -> str:
    """The env-bound message: physics (more workers or arenas) or the env layer (compile it)."""
    if physics_share is not None and physics_share < PHYSICS_BOUND_FROM:
        layer = f"{1 - physics_share:.0%} of it in observations and rewards"
        fix = "try --env.compile true" if not s.get("env_compile") else "fewer reward terms, or a GPU for the env layer"
        return f"env-bound: {pct} of step time in the environment, {layer}; {fix}"
    where = "in the environment" if physics_share is None else f"in the environment ({physics_share:.0%} physics)"
    workers, cpus = s.get("workers"), s.get("cpus")
    if workers is not None and cpus is not None and workers >= cpus:
        fix = (
            f"every CPU core already steps arenas ({workers} workers, {cpus} cores): a machine with more cores "
            "helps; raise env.num_arenas to amortise the per-step overhead"
        )
    else:
        now = f" (now {workers} of {cpus} cores)" if workers is not None and cpus is not None else ""
        fix = f"raise env.num_workers{now} or env.num_arenas"
    return f"env-bound: {pct} of step time {where}; {fix}"


def _or(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


# ------------------------------------------------------------------------------------------ compare
def flatten_numbers(data: Any, prefix: str = "") -> dict[str, float]:
    """Every int/float leaf (not bool) of nested dicts and lists as {"a.b.0.c": value}."""
    out: dict[str, float] = {}
    if isinstance(data, Mapping):
        for key, value in data.items():
            out.update(flatten_numbers(value, f"{prefix}{key}."))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            out.update(flatten_numbers(value, f"{prefix}{index}."))
    elif isinstance(data, (int, float)) and not isinstance(data, bool) and math.isfinite(data):
        out[prefix.rstrip(".")] = float(data)
    return out


def better_direction(key: str) -> int:
    """+1 when a larger value is better (rates), -1 when smaller is (times, memory), 0 when neither."""
    leaf = key.rsplit(".", 1)[-1]
    if leaf.endswith("_per_s"):
        return 1
    if leaf.endswith(("_ms", "_s", "_mib", "_gib")) or key.startswith("train.seconds."):
        return -1
    return 0


NOT_COMPARED_PREFIXES = ("settings.", "verdict.")
"""Settings, and the verdict's shares (a copy of train.shares), are not measures."""
NOT_COMPARED_LEAVES = frozenset(
    {"arenas", "cars", "tick_skip", "workers", "agents", "batch", "updates_timed", "count", "cpus", "torch_threads"}
)
"""Sizes that describe a measurement rather than measure anything."""


def compare(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per numeric measure in either result: key, old, new, change (new/old - 1, None when
    it has no base), and verdict better|worse|same|new|gone|"" (no direction)."""
    a, b = flatten_numbers(old), flatten_numbers(new)
    rows = []
    for key in sorted(set(a) | set(b)):
        if key.startswith(NOT_COMPARED_PREFIXES) or key.rsplit(".", 1)[-1] in NOT_COMPARED_LEAVES:
            continue
        before, after = a.get(key), b.get(key)
        if before is None or after is None:
            rows.append(
                {
                    "key": key,
                    "old": before,
                    "new": after,
                    "change": None,
                    "verdict": "new" if before is None else "gone",
                }
            )
            continue
        change = after / before - 1.0 if before else None
        direction = better_direction(key)
        if after == before:
            word = "same"
        elif direction == 0:
            word = ""
        else:
            word = "better" if (after > before) == (direction > 0) else "worse"
        rows.append({"key": key, "old": before, "new": after, "change": change, "verdict": word})
    return rows


# ------------------------------------------------------------------------------------------ running
def diagnose_config(
    config: str | None = None, num_envs: int | None = None, num_steps: int | None = None, device: str | None = None
):
    """The TrainConfig to measure: the config file (default the packaged base.yaml) with the size options."""
    from rocketrl.config import base_config_path, load_config

    overrides: list[str] = []
    if num_envs is not None:
        overrides += ["--env.num-arenas", str(num_envs)]
    if num_steps is not None:
        overrides += ["--ppo.rollout-steps", str(num_steps)]
    if device is not None:
        overrides += ["--run.device", device]
    return load_config(config or base_config_path(), overrides)


def run_diagnose(cfg: Any, tests: list[str], progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the chosen tests on cfg (a TrainConfig); returns the JSON-able result with its verdict."""
    import os

    from rocketrl.diagnostics import system as diagnose_system
    from rocketrl.env.obs import OBS_SIZE
    from rocketrl.ppo.trainer import resolve_device

    say = progress or (lambda text: None)
    load_at_start = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    device = resolve_device(cfg.run.device)
    cars = cfg.env.blue_size + cfg.env.orange_size
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "tests": list(tests),
        "settings": {
            "num_envs": cfg.env.num_arenas,
            "num_steps": cfg.ppo.rollout_steps,
            "team_size": f"{cfg.env.blue_size}v{cfg.env.orange_size}",
            "device": str(device),
            "engine": cfg.env.engine,
            "stepping": cfg.env.stepping,
            "num_workers": cfg.env.num_workers,
            "actor_hidden": list(cfg.model.actor_hidden),
            "critic_hidden": list(cfg.model.critic_hidden),
        },
    }
    if "env" in tests:
        from rocketrl.diagnostics.env import measure_engines

        say(f"env: stepping {cfg.env.num_arenas} arenas for {cfg.ppo.rollout_steps} steps per engine")
        result["env"] = measure_engines(cfg.env, device, cfg.ppo.rollout_steps)
    if "inference" in tests:
        from rocketrl.diagnostics.inference import inference_devices, measure_inference
        from rocketrl.env.actions import make_action_parser

        parser = make_action_parser(cfg.env.action)
        largest = cfg.env.num_arenas * cars
        result["inference"] = {}
        for dev in inference_devices():
            say(f"inference: batches 1..{largest} on {dev.type}")
            result["inference"][dev.type] = measure_inference(
                cfg.model, OBS_SIZE, parser.num_actions, parser.kind == "discrete", dev, largest
            )
    if "train" in tests:
        from rocketrl.diagnostics.train import measure_training

        say(f"train: 3 updates of {cfg.batch_size:,} agent-steps")
        result["train"] = measure_training(cfg)
    if "gpu" in tests:
        result["gpu"] = diagnose_system.gpu_info()
    result["system"] = diagnose_system.system_info()
    if load_at_start is not None:
        result["system"]["load_avg_at_start"] = round(load_at_start, 2)
    train = result.get("train")
    if train is not None:
        engine = result.get("env", {}).get(cfg.env.engine, {})
        settings = {
            "device": train["device"],
            "workers": train.get("workers"),
            "cpus": os.cpu_count(),
            "env_compile": cfg.env.compile,
            "compile": cfg.speed.compile,
            "amp": cfg.speed.amp,
            "epochs": cfg.ppo.epochs,
            "minibatches": cfg.ppo.minibatches,
        }
        result["verdict"] = verdict(train["seconds"], engine.get("physics_share"), settings)
    else:
        result["verdict"] = {
            "bottleneck": "unknown",
            "shares": {},
            "message": "no verdict without the train test: run --test train or --test all",
        }
    note = busy_note(load_at_start, os.cpu_count())
    if note:
        result["verdict"]["notes"] = [note]
    return result


def busy_note(load: float | None, cpus: int | None) -> str | None:
    """A warning when other work already kept the CPUs busy (1-minute load average) before measuring."""
    if load is None or not cpus or load < BUSY_LOAD_PER_CPU * cpus:
        return None
    return (
        f"the machine was busy before measuring (load average {load:.1f} on {cpus} CPU cores): "
        "other work inflates these timings; measure again on an idle machine"
    )


# ------------------------------------------------------------------------------------------ command
def add_parser(sub: Any) -> None:
    """Register `rocketrl diagnose` on the CLI's subparsers."""
    p = sub.add_parser(
        "diagnose",
        help="measure where the time goes (env, inference, learn, GPU) and name the bottleneck",
        description="Measure environment speed per engine, policy inference latency, a short training run's "
        "split of time and the GPU; print a table and a verdict naming the bottleneck.",
    )
    p.add_argument("--test", type=parse_tests, default=list(TESTS), metavar="env|inference|train|gpu|all")
    p.add_argument(
        "--num-envs", type=_positive, default=None, metavar="N", help="arenas (default: the config's env.num_arenas)"
    )
    p.add_argument(
        "--num-steps", type=_positive, default=None, metavar="N", help="env steps measured, and ppo.rollout_steps"
    )
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default=None, help="training device (default auto)")
    p.add_argument("--config", default=None, help="YAML config to measure (default: the packaged base.yaml)")
    p.add_argument("--json", default=None, metavar="PATH", help="write the results to this JSON file")
    p.add_argument("--compare", default=None, metavar="OLD.json", help="print the change against an earlier --json")
    p.set_defaults(func=cmd_diagnose)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def cmd_diagnose(args: argparse.Namespace) -> int:
    """Measure, print the table and the verdict, write --json, print --compare."""
    from rocketrl.diagnostics.report import console, render_compare, render_result

    old = read_result(args.compare) if args.compare else None
    if args.json:
        folder = Path(args.json).expanduser().resolve().parent
        if not folder.is_dir():
            raise FileNotFoundError(f"--json {args.json}: folder {folder} does not exist; create it or pick another")
    cfg = diagnose_config(args.config, args.num_envs, args.num_steps, args.device)
    out = console()
    result = run_diagnose(cfg, args.test, progress=lambda text: print(f"measuring {text} ...", file=sys.stderr))
    render_result(result, out)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
        out.print(f"results written to {args.json}")
    if old is not None:
        before, now = old.get("settings", {}), result["settings"]
        changed = [f"{k} {before.get(k)} -> {now.get(k)}" for k in now if before.get(k, now[k]) != now[k]]
        if changed:
            out.print(f"[yellow]note[/]: the settings differ from {args.compare}: {'; '.join(changed)}")
        render_compare(compare(old, result), out, args.compare)
    return 0
