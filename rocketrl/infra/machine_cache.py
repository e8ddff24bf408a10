"""Per-machine cache of speed probes: what a short measurement chose on this machine, kept so the next run
starts without measuring again.

The cache is one JSON file, `speed_probes.json`, in `$ROCKETRL_CACHE_DIR`, else `$XDG_CACHE_HOME/rocketrl`,
else `~/.cache/rocketrl`. Entries are keyed by what the probe measured (e.g. the network's shape) and by the
machine's fingerprint (CPU model and its bf16 instruction flags, cores, torch version, GPU name), so a
changed machine or torch measures again. A cache that cannot be read or written is ignored: probing is only
ever slower, never wrong.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

import torch

from rocketrl.infra.atomic_json import write_json_atomic

CACHE_FILE = "speed_probes.json"
BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")
"""CPU flags (Linux /proc/cpuinfo) of bf16 matrix instructions: where bf16 can beat fp32 on a CPU."""


def cache_dir() -> Path:
    """The folder of the per-machine cache (not created)."""
    if os.environ.get("ROCKETRL_CACHE_DIR"):
        return Path(os.environ["ROCKETRL_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "rocketrl"


def cpuinfo_first(keys: tuple[str, ...]) -> dict[str, str] | None:
    """The first value of each of `keys` in Linux's /proc/cpuinfo (absent keys left out); None where it cannot be
    read (not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return None
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in keys and key not in found:
            found[key] = value.strip()
    return found


def model_and_flags_of(info: dict[str, str] | None) -> tuple[str, set[str]]:
    """The model name and instruction-set flags in a /proc/cpuinfo entry (`info` None: platform.processor() and
    no flags)."""
    if info is None:
        return platform.processor() or platform.machine(), set()
    flags = set((info.get("flags") or info.get("Features") or "").split())
    return info.get("model name") or platform.machine(), flags


def cpu_model_and_flags() -> tuple[str, set[str]]:
    """The CPU's model name and its instruction-set flags (Linux /proc/cpuinfo; elsewhere
    platform.processor() and no flags)."""
    return model_and_flags_of(cpuinfo_first(("model name", "flags", "Features")))


def cpu_words(info: dict[str, str] | None) -> str:
    """The CPU in words from /proc/cpuinfo's first entry: "AMD EPYC (family 25 model 17, AVX-512)", with ", AMX"
    where it has the bf16 matrix tiles.

    The family, model and AVX-512 flag part CPUs that a virtual machine gives one model name (an AMD EPYC Zen 3
    and Zen 4 both read "AMD EPYC"); AMX is what makes bf16 pay. Without /proc/cpuinfo (`info` None) the
    platform's processor name alone.
    """
    name, flags = model_and_flags_of(info)
    if info is None:
        return name
    parts = [f"family {info['cpu family']} model {info['model']}"] if "cpu family" in info and "model" in info else []
    if flags:
        parts.append("AVX-512" if "avx512f" in flags else "no AVX-512")
        parts += ["AMX"] if "amx_tile" in flags else []
    return f"{name} ({', '.join(parts)})" if parts else name


def machine_words() -> str:
    """The machine as the game reports name it: "AMD EPYC (family 25 model 17, AVX-512), 2 cores" (the CPU in
    words and os.cpu_count())."""
    info = cpuinfo_first(("model name", "cpu family", "model", "flags", "Features"))
    return f"{cpu_words(info)}, {os.cpu_count()} cores"


def cpu_vendor() -> str:
    """The CPU maker's id ("GenuineIntel", "AuthenticAMD"; /proc/cpuinfo's vendor_id), or "unknown"."""
    return (cpuinfo_first(("vendor_id",)) or {}).get("vendor_id", "unknown")


def cpu_model_and_bf16_flags() -> tuple[str, list[str]]:
    """The CPU's model name and which of BF16_CPU_FLAGS it has."""
    model, flags = cpu_model_and_flags()
    return model, [f for f in BF16_CPU_FLAGS if f in flags]


def machine_fingerprint(device: torch.device) -> dict[str, Any]:
    """What makes a speed probe's answer hold: CPU model and bf16 flags, cores, torch, and the GPU if used."""
    model, flags = cpu_model_and_bf16_flags()
    fingerprint: dict[str, Any] = {
        "cpu": model,
        "cpu_bf16_flags": flags,
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "device": device.type,
    }
    if device.type == "cuda":
        fingerprint["gpu"] = torch.cuda.get_device_name(device)
    return fingerprint


def _key(probe: str, fingerprint: dict[str, Any], subject: dict[str, Any]) -> str:
    return json.dumps({"probe": probe, "machine": fingerprint, "subject": subject}, sort_keys=True)


def read_cached(probe: str, fingerprint: dict[str, Any], subject: dict[str, Any]) -> dict[str, Any] | None:
    """The cached answer of `probe` for this machine and subject, or None (also when the cache is unreadable)."""
    try:
        entries = json.loads((cache_dir() / CACHE_FILE).read_text())
    except (OSError, ValueError):
        return None
    entry = entries.get(_key(probe, fingerprint, subject)) if isinstance(entries, dict) else None
    return entry if isinstance(entry, dict) else None


def write_cached(probe: str, fingerprint: dict[str, Any], subject: dict[str, Any], answer: dict[str, Any]) -> Path:
    """Store `answer` (atomically, beside the other entries); returns the cache file. Raises OSError."""
    path = cache_dir() / CACHE_FILE
    try:
        entries = json.loads(path.read_text())
        entries = entries if isinstance(entries, dict) else {}
    except (OSError, ValueError):
        entries = {}
    entries[_key(probe, fingerprint, subject)] = answer
    return write_json_atomic(path, entries)
