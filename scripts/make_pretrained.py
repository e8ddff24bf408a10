"""Ship a trained bot inside the package: `rocketrl ... --checkpoint pretrained` loads it.

    python scripts/make_pretrained.py REPORT.json   (a benchmarks/learn_vs_rule.py report)

Reads the bot the report chose, keeps what playing needs (the network's weights, the observation
normalizer, the run's config; not the optimizer, league or random generators), and writes it with the
report's measured figures to rocketrl/pretrained/vs_rule_1v1.safetensors, plus a JSON card beside it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rocketrl.infra.checkpoint import load_checkpoint, save_checkpoint
from rocketrl.policy.load import PRETRAINED_CHECKPOINT, checkpoint_config

CARD_KEYS = ("games", "wins", "draws", "losses", "win_rate", "win_rate_low", "win_rate_high", "elo")


def main(report_path: str) -> None:
    report = json.loads(Path(report_path).read_text())
    source = Path(report["bot"])
    state, meta = load_checkpoint(source)
    config = checkpoint_config(source, meta)
    card = {
        "name": "vs_rule_1v1",
        "preset": report["preset"],
        "variant": report.get("variant"),
        "train_engine": report.get("train_engine"),
        "seed": report.get("seed"),
        "commit": report.get("commit"),
        "steps": meta.get("step"),
        "train_wall_seconds": report["train_wall_seconds"],
        "vs_rule_policy": {k: report[k] for k in CARD_KEYS},
        "vs_rule_policy_exact_kickoffs": {k: report["exact_kickoffs"][k] for k in CARD_KEYS}
        if report.get("exact_kickoffs")
        else None,
        "generalization": {
            name: {k: figures[k] for k in CARD_KEYS} for name, figures in (report.get("generalization") or {}).items()
        },
        "measured_with": "benchmarks/learn_vs_rule.py: full 5-minute games, kickoff jitter 5 uu, greedy actions",
    }
    keep = {"model": state["model"], "obs_norm": state["obs_norm"]}
    PRETRAINED_CHECKPOINT.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(PRETRAINED_CHECKPOINT, keep, {"config": config, "step": meta.get("step"), "pretrained": card})
    PRETRAINED_CHECKPOINT.with_suffix(".json").write_text(json.dumps(card, indent=2) + "\n")
    size = PRETRAINED_CHECKPOINT.stat().st_size / 2**20
    print(f"wrote {PRETRAINED_CHECKPOINT} ({size:.1f} MiB) from {source}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
