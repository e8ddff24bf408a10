"""The league's run record (docs/league_runs.jsonl and docs/league_<tag>_gauntlet.json, written by
scripts/record_league.py): figures from a run's folder and its `rocketrl eval --json` report, and the table of a
generation that docs/results/learning.md shows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rocketrl.config import load_config, preset_config_path
from rocketrl.eval.league_record import gauntlet_results, generation_table, league_record
from rocketrl.infra.checkpoint import save_checkpoint
from rocketrl.policy.load import resolve_checkpoint
from rocketrl.ppo.train_config import config_to_dict, save_resolved_config

ROOT = Path(__file__).resolve().parents[1]


def result(name: str, wins: int, draws: int, losses: int, low: float = 0.5, high: float = 0.7) -> dict:
    n = wins + draws + losses
    return {"name_a": "bot", "name_b": name, "wins": wins, "draws": draws, "losses": losses, "goals_for": 2 * wins,
            "goals_against": losses, "touches_for": 9, "games": [], "wall_seconds": 1.0, "num_games": n,
            "win_rate": (wins + draws / 2) / n, "win_rate_low": low, "win_rate_high": high}  # fmt: skip


def fake_run(tmp_path: Path, seed: int = 3, init_from: str = "gauntlet_v2") -> Path:
    """A run folder: the league preset's resolved config (seed 3, from gauntlet_v2) and SPS scalars logged at
    10,000 and 20,000 (two values each side of 12,000) over 90 s of wall time, and a checkpoint."""
    from torch.utils.tensorboard import SummaryWriter

    run = tmp_path / "runs" / f"gen_{Path(init_from).stem}_seed{seed}"
    run.mkdir(parents=True)
    cfg = load_config(preset_config_path("league_1v1"), ["--run.seed", str(seed), "--run.init-from", init_from])
    save_resolved_config(cfg, run / "config.yaml")
    writer = SummaryWriter(str(run))
    for step, value, wall in ((1000, 10_000.0, 100.0), (2000, 11_000.0, 130.0), (3000, 13_000.0, 160.0),
                              (4000, 20_000.0, 190.0)):  # fmt: skip
        writer.add_scalar("charts/SPS", value, step, walltime=wall)
    writer.close()
    (run / "checkpoints").mkdir()
    for step in (2000, 4000):  # tiny checkpoints whose headers say their step, as the trainer writes them
        save_checkpoint(run / "checkpoints" / f"step_{step:012d}.safetensors", {"w": torch.zeros(1)}, {"step": step})
    return run


def test_record_takes_seed_start_and_speed_from_the_run_and_checks_each_target(tmp_path) -> None:
    run = fake_run(tmp_path)
    report = {"num_games": 10, "game_seconds": 120.0, "results": [
        result("gauntlet_v1", 8, 0, 2), result("rule_policy", 9, 1, 0), result("ball_chaser", 9, 0, 1)]}  # fmt: skip
    gauntlet, line = league_record(run, run / "checkpoints" / "x.safetensors", report, "rocketrl train ...", "v", "t",
                                   machine="test machine")  # fmt: skip
    assert line["seed"] == 3 and line["init_from"] == "gauntlet_v2" and line["team_size"] == "1v1"
    assert line["preset"] == "league_1v1" and line["train_engine"] == "warp"
    assert line["steps"] == 4000 and line["agent_steps_per_second_median"] == 12_000
    assert line["train_wall_minutes"] == 1.5
    assert line["machine"] == gauntlet["machine"] == "test machine"
    # 8 and 9 of 10 meet the 80% and 90% targets exactly; 9.5 of 10 is under 97%; shadow_goalie not played
    assert line["targets_met"] == {"80%_vs_v1": True, "97%_vs_rule": False, "90%_vs_ball_chaser": True}
    assert gauntlet["results"]["rule_policy"]["draws"] == 1 and "touches_for" not in gauntlet["results"]["rule_policy"]
    assert "--opponents gauntlet_v1,rule_policy,ball_chaser --num-games 10" in gauntlet["settings"]
    assert "docs/league_t_gauntlet.json" in line["gauntlet_settings"]
    # a report without settings (made before `rocketrl eval --json` wrote them): the recorded runs' settings, said
    # to be assumed
    assert "--deterministic --kickoff-jitter 5 --workers 2 (assumed" in gauntlet["settings"]
    assert "greedy, kickoff jitter 5 uu" in line["gauntlet_settings"]


def test_record_of_an_averaged_bot_adds_up_its_runs(tmp_path) -> None:
    runs = [fake_run(tmp_path, seed) for seed in (2, 3, 4)]
    report = {"num_games": 10, "game_seconds": 120.0, "results": [result("rule_policy", 10, 0, 0)]}
    gauntlet, line = league_record(runs[0], tmp_path / "soup.safetensors", report, "rocketrl average ...", "v", "t",
                                   machine="m", averaged_from=runs)  # fmt: skip
    assert line["seed"] == [2, 3, 4] and line["averaged_from"] == [str(r) for r in runs]
    # three runs of 4,000 steps and 1.5 minutes each; each run's median 12,000 agent-steps/s
    assert line["steps"] == 12_000 and line["train_wall_minutes"] == 4.5
    assert line["agent_steps_per_second_median"] == 12_000
    assert gauntlet["bot"] == str(tmp_path / "soup.safetensors")
    assert line["init_from"] == "gauntlet_v2"  # one start: named once
    # runs of two generations (two from gauntlet_v2, one from a local file holding gauntlet_v3): each run's start,
    # in order, named by its gauntlet version
    parent = tmp_path / "kept" / "parent.safetensors"
    parent.parent.mkdir()
    parent.write_bytes(resolve_checkpoint("gauntlet_v3").read_bytes())
    runs = [fake_run(tmp_path, 5), fake_run(tmp_path, 6), fake_run(tmp_path, 2, init_from=str(parent))]
    _, line = league_record(runs[0], tmp_path / "soup.safetensors", report, "rocketrl average ...", "v", "t",
                            machine="m", averaged_from=runs)  # fmt: skip
    assert line["init_from"] == ["gauntlet_v2", "gauntlet_v2", "gauntlet_v3"] and line["seed"] == [5, 6, 2]


def test_record_states_the_settings_the_report_names(tmp_path) -> None:
    run = fake_run(tmp_path)
    settings = {"deterministic": False, "kickoff_jitter": 0.0, "seed": 7, "workers": None, "no_overtime": True,
                "opponents": "runs/r/checkpoints/a.safetensors"}  # fmt: skip
    report = {"num_games": 4, "game_seconds": 60.0, "engine": "warp", "settings": settings,
              "results": [result("r/a", 3, 0, 1)]}  # fmt: skip
    gauntlet, line = league_record(run, run / "x.safetensors", report, "rocketrl train", "v", "t", machine="m")
    assert gauntlet["settings"] == (
        "rocketrl eval --checkpoint BOT --opponents runs/r/checkpoints/a.safetensors --num-games 4 --game-seconds 60 "
        "--seed 7 --no-overtime --engine warp"
    )
    assert list(gauntlet["results"]) == ["r/a"]
    assert line["gauntlet_settings"].startswith("4 games each, 60 s, sampled actions, exact kickoff spawns (")


def test_a_report_that_is_not_an_eval_report_names_what_is_missing() -> None:
    with pytest.raises(ValueError, match="no 'results' list"):
        gauntlet_results([])
    with pytest.raises(ValueError, match="win_rate_low"):
        gauntlet_results({"results": [{k: v for k, v in result("x", 1, 0, 0).items() if k != "win_rate_low"}]})


def test_generation_table_sums_the_runs_with_a_pooled_interval() -> None:
    def line(seed: int, wins: int, start: str = "gauntlet_v4") -> dict:
        figures = {"num_games": 100, "wins": wins, "draws": 0, "losses": 100 - wins, "win_rate_low": 0.5,
                   "win_rate_high": 0.7}  # fmt: skip
        return {"seed": seed, "init_from": start, "gauntlet": {"gauntlet_v4": figures},
                "agent_steps_per_second_median": 15_000, "train_wall_minutes": 18}  # fmt: skip

    table = generation_table([line(0, 63), line(1, 63), line(2, 55), line(0, 99, "gauntlet_v1")], "gauntlet_v4")
    rows = table.splitlines()
    assert len(rows) == 2 + 3 + 1 and rows[2].startswith("| 0 | 63 (50.0-70.0%) | 15,000 | 18 |")
    # 181 of 300: Wilson 95% interval 54.7-65.7% (the three seeds of the generation from gauntlet_v4)
    assert rows[-1] == "| 3 runs | 181/300 (54.7-65.7%) | | |"
    assert generation_table([line(0, 63)], "gauntlet_v9") == "no recorded runs from gauntlet_v9"


def test_script_writes_both_records_and_never_overwrites_one(tmp_path) -> None:
    run = fake_run(tmp_path)
    report = tmp_path / "eval.json"
    report.write_text(json.dumps({"num_games": 2, "game_seconds": 60.0, "results": [result("gauntlet_v1", 2, 0, 0)]}))
    docs = tmp_path / "docs"
    docs.mkdir()
    script = [sys.executable, str(ROOT / "scripts" / "record_league.py"), str(run), str(report), "--tag", "g",
              "--variant", "v", "--command", "rocketrl train", "--docs", str(docs)]  # fmt: skip
    done = subprocess.run(script, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    gauntlet = json.loads((docs / "league_g_gauntlet.json").read_text())
    assert gauntlet["bot"].endswith("step_000000004000.safetensors")  # the run's last checkpoint
    (line,) = [json.loads(text) for text in (docs / "league_runs.jsonl").read_text().splitlines()]
    assert line["bot"] == gauntlet["bot"] + " (not shipped)" and line["gauntlet"] == gauntlet["results"]
    again = subprocess.run(script, capture_output=True, text=True)
    assert again.returncode != 0 and "exists" in again.stderr
    assert len((docs / "league_runs.jsonl").read_text().splitlines()) == 1
    # a run with no checkpoint yet is refused by name before anything is written
    for path in (run / "checkpoints").iterdir():
        path.unlink()
    empty = subprocess.run([*script[:4], "--tag", "h", *script[6:]], capture_output=True, text=True)
    assert empty.returncode == 2 and "holds no checkpoint yet" in empty.stderr and "--checkpoint" in empty.stderr
    assert not (docs / "league_h_gauntlet.json").exists()


def test_a_bot_whose_run_folders_are_gone_is_recorded_from_its_checkpoint(tmp_path) -> None:
    """An average of two runs' checkpoints (seeds 4 and 5, the second from the first's average) and of an earlier
    average: seeds and starts run by run, steps the latest checkpoint of each run added up, no speed or minutes."""
    from rocketrl.infra.checkpoint import read_meta

    config = config_to_dict(load_config(preset_config_path("league_1v1"), ["--run.seed", "5"]))

    def leaf(folder: str, step: int, seed: int, start: str) -> dict:
        return {"checkpoint": f"runs/{folder}/checkpoints/s{step}.safetensors", "step": step, "seed": seed,
                "init_from": start}  # fmt: skip

    run_a = [leaf("a", 20, 4, "gauntlet_v2"), leaf("a", 30, 4, "gauntlet_v2")]
    first = {"checkpoint": "first.safetensors", "step": 30, "averaged_from": run_a}
    run_b = [leaf("b", 16, 5, "first.safetensors"), leaf("b", 18, 5, "first.safetensors")]
    meta = {"config": config, "step": 30, "averaged_from": [first, *run_b]}
    bot = tmp_path / "line.safetensors"
    save_checkpoint(bot, {"w": torch.zeros(1)}, meta)
    assert read_meta(bot)["averaged_from"][0]["checkpoint"] == "first.safetensors"
    report = {"num_games": 10, "game_seconds": 120.0, "results": [result("rule_policy", 10, 0, 0)]}
    gauntlet, line = league_record(None, bot, report, "rocketrl average ...", "v", "t", machine="m")
    assert line["seed"] == [4, 5] and line["init_from"] == ["gauntlet_v2", "first.safetensors"]
    assert line["steps"] == 30 + 18 and line["team_size"] == "1v1" and line["train_engine"] == "warp"
    assert line["agent_steps_per_second_median"] is None and line["train_wall_minutes"] is None
    assert "run folders are gone" in line["figures_from"] and gauntlet["bot"] == str(bot)
    table = generation_table([line], ["gauntlet_v2", "first.safetensors"])
    assert table.splitlines()[2].endswith("| - | - |")
    # one run's own checkpoint: its seed and start from the config it records, its step
    single = tmp_path / "one_run.safetensors"
    save_checkpoint(single, {"w": torch.zeros(1)}, {"config": config, "step": 12})
    _, line = league_record(None, single, report, "rocketrl train ...", "v", "t", machine="m")
    assert line["seed"] == 5 and line["init_from"] == config["run"]["init_from"] and line["steps"] == 12


def test_script_with_runs_gone_needs_the_checkpoint_and_no_run_folder(tmp_path) -> None:
    report = tmp_path / "eval.json"
    report.write_text(json.dumps({"num_games": 2, "game_seconds": 60.0, "results": [result("gauntlet_v1", 2, 0, 0)]}))
    script = [sys.executable, str(ROOT / "scripts" / "record_league.py"), "--runs-gone", "--tag", "g", "--variant",
              "v", "--command", "c", "--docs", str(tmp_path)]  # fmt: skip
    no_checkpoint = subprocess.run([*script, str(report)], capture_output=True, text=True)
    assert no_checkpoint.returncode == 2 and "--runs-gone takes EVAL.json and --checkpoint" in no_checkpoint.stderr
    both = [*script, str(tmp_path), str(report), "--checkpoint", "x"]
    with_run = subprocess.run(both, capture_output=True, text=True)
    assert with_run.returncode == 2 and "without RUN_DIR" in with_run.stderr
    assert not (tmp_path / "league_g_gauntlet.json").exists()
