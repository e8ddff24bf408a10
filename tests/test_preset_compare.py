"""The preset comparison's spec and table: variants are checked when read, and runs are tabled by variant."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmark_loader import load_benchmark


def _figures(wins: int, losses: int, scored: int, conceded: int) -> dict:
    games = wins + losses
    return {
        "games": games, "wins": wins, "draws": 0, "losses": losses, "win_rate": wins / games,
        "win_rate_low": 0.0, "win_rate_high": 1.0, "elo": 1500.0, "goals_for": scored, "goals_against": conceded,
    }  # fmt: skip


def test_the_shipped_spec_reads_and_its_changes_load_as_configs() -> None:
    from rocketrl.config import load_config

    bench = load_benchmark("preset_compare")
    spec = bench.read_spec(bench.SPECS / "vs_rule.yaml")
    assert "baseline" in spec["variants"] and spec["preset"] == "vs_rule"
    preset = Path(__file__).resolve().parent.parent / "rocketrl" / "configs" / "presets" / "vs_rule.yaml"
    for name, variant in spec["variants"].items():
        cfg = load_config(preset, [f"--{change}" for change in variant["set"]])
        assert cfg.env.num_arenas == 128, name
    net = load_config(preset, [f"--{c}" for c in spec["variants"]["net_256x3"]["set"]])
    assert net.model.actor_hidden == [256, 256, 256] and net.model.critic_hidden == [256, 256, 256]


def test_a_malformed_variant_names_the_field(tmp_path: Path) -> None:
    bench = load_benchmark("preset_compare")
    path = tmp_path / "bad.yaml"
    path.write_text("preset: vs_rule\nvariants:\n  wide:\n    set: [model.actor-hidden=512, 512]\n")
    with pytest.raises(SystemExit, match=r"variants.wide.set must be a list of SECTION.FIELD=VALUE"):
        bench.read_spec(path)


def test_the_table_lists_runs_in_spec_order_with_goal_share_and_speed() -> None:
    bench = load_benchmark("preset_compare")
    spec = {"preset": "vs_rule", "variants": {"baseline": {"about": "as is", "set": []}, "wide": {"set": ["x=1"]}}}
    records = [
        {"preset": "vs_rule", "variant": "wide", "seed": 3, "steps": 3_000_000, "train_wall_seconds": 1200.0,
         "final": _figures(2, 62, 30, 90), "generalization": {}},
        {"preset": "vs_rule", "variant": "baseline", "seed": 3, "steps": 4_500_000, "train_wall_seconds": 1320.0,
         "final": _figures(0, 64, 6, 394), "generalization": {}},
        {"preset": "other", "variant": "baseline", "seed": 3, "steps": 1, "train_wall_seconds": 1.0,
         "final": _figures(1, 0, 1, 0), "generalization": {}},
    ]  # fmt: skip
    rows = [line for line in bench.comparison_table(records, spec).splitlines() if line.startswith("| ")][1:]
    assert rows[0].startswith("| baseline | 3 | 22 | 4.5M | 3,409 | 0% (0-100%) | 2% (6-394)")
    assert rows[1].startswith("| wide | 3 | 20 | 3.0M | 2,500 | 3% (0-100%) | 25% (30-90)")
    assert len(rows) == 2  # the other preset's run is left out
