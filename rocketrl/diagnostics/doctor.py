"""`rocketrl doctor`: check an installation, one PASS/FAIL/SKIP line per check, each failure with its fix."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

IMPORTS: tuple[tuple[str, str, str, bool], ...] = (
    # (module, distribution, what to install, required)
    ("torch", "torch", "bash scripts/setup.sh, or pip install torch (https://pytorch.org for a CUDA build)", True),
    ("RocketSim", "rocketsim", "pip install rocketsim", True),
    ("numpy", "numpy", "pip install numpy", True),
    ("gymnasium", "gymnasium", "pip install gymnasium", True),
    ("pettingzoo", "pettingzoo", "pip install pettingzoo", True),
    ("yaml", "pyyaml", "pip install pyyaml", True),
    ("rich", "rich", "pip install rich", True),
    ("tensorboard", "tensorboard", "pip install tensorboard", True),
    ("safetensors", "safetensors", "pip install safetensors", True),
    ("openskill", "openskill", "pip install openskill", True),
    ("pynvml", "nvidia-ml-py", "pip install nvidia-ml-py", True),
    ("warp", "warp-lang", "pip install warp-lang (only for the warp engine)", False),
)


@dataclass
class Check:
    """The outcome of one check: status PASS, FAIL or SKIP; detail says what was seen; fix how to mend a FAIL."""

    name: str
    status: str
    detail: str = ""
    fix: str = ""


class Doctor:
    """Runs the checks in order; later checks SKIP when what they need failed."""

    def __init__(self, logdir: str = "runs") -> None:
        self.logdir = logdir
        self.checks: list[Check] = []

    def add(self, name: str, status: str, detail: str = "", fix: str = "") -> Check:
        self.checks.append(Check(name, status, detail, fix))
        return self.checks[-1]

    def passed(self, name: str) -> bool:
        return any(c.name == name and c.status == "PASS" for c in self.checks)

    def guard(self, name: str, body: Callable[[], str], fix: str) -> Check:
        """PASS with body()'s detail, or FAIL with the exception and `fix`."""
        try:
            return self.add(name, "PASS", body())
        except Exception as error:
            return self.add(name, "FAIL", f"{type(error).__name__}: {error}", fix)

    # ---------------------------------------------------------------------------------- checks
    def run(self) -> list[Check]:
        """Every check; returns them in order."""
        version = sys.version_info
        if version >= (3, 11):
            self.add("python", "PASS", f"{sys.version.split()[0]} ({sys.executable})")
        else:
            self.add("python", "FAIL", sys.version.split()[0], "use Python 3.11 or newer")
        for module, distribution, install, required in IMPORTS:
            self._import(module, distribution, install, required)
        self._meshes()
        self._env_step()
        self._forward_backward()
        self._cuda()
        self._logdir()
        return self.checks

    def _import(self, module: str, distribution: str, install: str, required: bool) -> None:
        try:
            imported = importlib.import_module(module)
        except Exception as error:
            if required:
                self.add(f"import {module}", "FAIL", f"{type(error).__name__}: {error}", install)
            else:
                self.add(f"import {module}", "SKIP", f"optional, not installed: {install}")
            return
        try:
            version = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            version = str(getattr(imported, "__version__", ""))
        self.add(f"import {module}", "PASS", version)

    def _meshes(self) -> None:
        from rocketrl.sim.meshes import MESHES_ENV_VAR, find_collision_meshes

        where = os.environ.get(MESHES_ENV_VAR)
        fix = (
            f"point {MESHES_ENV_VAR} at a folder that contains soccar/*.cmf, or unset it"
            if where
            else "pip install rlgym-rocket-league (it ships the meshes), "
            f"or set {MESHES_ENV_VAR} to a folder that contains soccar/*.cmf"
        )
        self.guard("collision meshes", lambda: str(find_collision_meshes()), fix)

    def _env_step(self) -> None:
        if not (self.passed("collision meshes") and self.passed("import RocketSim") and self.passed("import torch")):
            self.add("env step", "SKIP", "needs RocketSim, torch and the collision meshes (see above)")
            return

        def step() -> str:
            import torch

            from rocketrl.env.batched import BatchedEnv

            with BatchedEnv(num_arenas=2, stepping="serial", num_workers=1) as env:
                obs = env.reset()
                result = env.step(torch.zeros(2, env.num_cars, dtype=torch.long))
                if not (torch.isfinite(result.obs).all() and torch.isfinite(result.reward).all()):
                    raise RuntimeError("the environment returned NaN or inf")
            return f"2 arenas, observations {tuple(obs.shape)}"

        self.guard("env step", step, "reinstall RocketSim (pip install --force-reinstall rocketsim) and rerun")

    def _model_pass(self, device: str, dtype: Any = None) -> str:
        """One forward and backward pass of a small ActorCritic on `device` (under autocast at `dtype`)."""
        import torch

        from rocketrl.env.obs import OBS_SIZE
        from rocketrl.policy.actor_critic import ActorCritic

        model = ActorCritic(OBS_SIZE, 90, actor_hidden=(64, 64), critic_hidden=(64, 64)).to(device)
        obs = torch.randn(32, OBS_SIZE, device=device)
        with torch.autocast(device.split(":")[0], dtype=dtype or torch.float32, enabled=dtype is not None):
            actions, _, _, _ = model.act(obs)
            logprob, entropy, value = model.evaluate(obs, actions)
            loss = -(logprob.mean() + 0.01 * entropy.mean()) + value.pow(2).mean()
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        if not grads or not all(torch.isfinite(g).all() for g in grads):
            raise RuntimeError("gradients are missing or not finite")
        return f"loss {float(loss.detach()):.3f}, {len(grads)} gradients finite"

    def _forward_backward(self) -> None:
        if not self.passed("import torch"):
            self.add("forward and backward", "SKIP", "needs torch")
            return
        fix = "reinstall torch (bash scripts/setup.sh) and check that `python -c 'import torch'` works"
        self.guard("forward and backward (cpu)", lambda: self._model_pass("cpu"), fix)
        import torch

        self.guard(
            "amp bf16 (cpu)",
            lambda: self._model_pass("cpu", torch.bfloat16),
            "keep --speed.amp off on this CPU, or update torch",
        )

    def _cuda(self) -> None:
        try:
            import torch
        except Exception:
            self.add("cuda", "SKIP", "needs torch")
            return
        if not torch.cuda.is_available():
            built = torch.version.cuda
            why = f"torch built for CUDA {built} sees no device" if built else "a CPU-only torch build"
            self.add("cuda", "SKIP", f"no GPU: {why}")
            return
        fix = "update the NVIDIA driver or install a torch built for its CUDA version (https://pytorch.org)"
        self.guard("cuda", lambda: f"{torch.cuda.get_device_name(0)}: {self._model_pass('cuda')}", fix)
        if torch.cuda.is_bf16_supported():
            self.guard("amp bf16 (cuda)", lambda: self._model_pass("cuda", torch.bfloat16), "use --speed.amp fp16")
        else:
            self.add("amp bf16 (cuda)", "SKIP", "this GPU has no bf16; use --speed.amp fp16")
        self.guard("amp fp16 (cuda)", lambda: self._model_pass("cuda", torch.float16), "use --speed.amp bf16 or off")

        def nvml() -> str:
            from rocketrl.infra.gpu import GpuMonitor

            reading = GpuMonitor(torch.device("cuda")).read()
            if reading is None:
                raise RuntimeError("NVML could not be read")
            return f"{reading['util']:.0f}% busy, {reading['memory']:.2f} GiB used"

        self.guard("nvml", nvml, "pip install nvidia-ml-py and check that `nvidia-smi` works")

    def _logdir(self) -> None:
        folder = Path(self.logdir).expanduser().resolve()

        def writable() -> str:
            existing = folder
            while not existing.exists():
                existing = existing.parent
            if not existing.is_dir():
                raise NotADirectoryError(f"{existing} is not a folder")
            if existing == folder:
                with tempfile.NamedTemporaryFile(dir=folder, prefix=".rocketrl-doctor-"):
                    pass
            elif not os.access(existing, os.W_OK | os.X_OK):
                raise PermissionError(f"cannot create {folder}: {existing} is not writable")
            return str(folder) + ("" if existing == folder else " (will be created)")

        self.guard("log folder writable", writable, "pass a writable folder with --logdir (train --logdir too)")


def print_checks(checks: list[Check], stream: Any = None) -> None:
    """One line per check: STATUS  name  detail, then 'fix: ...' under each failure."""
    out = stream or sys.stdout
    colour = out.isatty() if hasattr(out, "isatty") else False
    paint = {"PASS": "\033[32m", "FAIL": "\033[31m", "SKIP": "\033[33m"}
    width = max(len(c.name) for c in checks)
    for c in checks:
        status = f"{paint[c.status]}{c.status}\033[0m" if colour else c.status
        print(f"{status}  {c.name:<{width}}  {c.detail}", file=out)
        if c.status == "FAIL" and c.fix:
            print(f"      {'':<{width}}  fix: {c.fix}", file=out)
    failed = sum(c.status == "FAIL" for c in checks)
    summary = f"{sum(c.status == 'PASS' for c in checks)} passed, {failed} failed, "
    print(summary + f"{sum(c.status == 'SKIP' for c in checks)} skipped", file=out)


def add_parser(sub: Any) -> None:
    """Register `rocketrl doctor` on the CLI's subparsers."""
    p = sub.add_parser("doctor", help="check the installation: imports, meshes, one env step, CUDA, log folder")
    p.add_argument("--logdir", default="runs", help="log folder to check for writing (default runs)")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    """Run every check and print them; 1 when any failed."""
    checks = Doctor(args.logdir).run()
    print_checks(checks)
    return 1 if any(c.status == "FAIL" for c in checks) else 0
