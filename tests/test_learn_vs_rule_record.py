"""The learning benchmark's run record: one JSON line per run with the figures the learning results' tables need
(docs/results/learning.md)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from benchmark_loader import load_benchmark


def figures(wins: int, draws: int, losses: int) -> dict:
    n = wins + draws + losses
    return {
        "games": n, "wins": wins, "draws": draws, "losses": losses, "win_rate": (wins + draws / 2) / n,
        "win_rate_low": 0.1, "win_rate_high": 0.9, "elo": 1600.0, "goals_for": 3, "by_side": {},
    }  # fmt: skip


def test_each_run_appends_one_line_with_seed_commit_and_every_figure(tmp_path) -> None:
    bench = load_benchmark("learn_vs_rule")
    report = {
        "benchmark": "learn_vs_rule", "preset": "vs_rule", "seed": 3, "commit": "abc", "train_engine": "rocketsim",
        "steps": 1000, "train_wall_seconds": 10.0, "select_wall_seconds": 2.0, "bot": "x.safetensors",
        **figures(7, 1, 2), "exact_kickoffs": figures(5, 0, 5),
        "generalization": {"shadow_goalie": figures(4, 0, 1), "ball_chaser": figures(3, 1, 1)},
        "machine": {"cpus": 2},
    }  # fmt: skip
    record = tmp_path / "runs.jsonl"
    bench.append_record(record, report)
    bench.append_record(record, {**report, "seed": 4})
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [line["seed"] for line in lines] == [3, 4]
    line = lines[0]
    assert line["commit"] == "abc" and line["preset"] == "vs_rule" and line["steps"] == 1000
    assert line["final"]["win_rate"] == 0.75 and line["final"]["elo"] == 1600.0
    assert line["exact_kickoffs"]["wins"] == 5
    assert set(line["generalization"]) == {"shadow_goalie", "ball_chaser"}
    assert line["generalization"]["ball_chaser"]["draws"] == 1
    assert set(bench.GENERALIZATION_OPPONENTS) == {"shadow_goalie", "ball_chaser"}
    assert "team_size" not in line  # 1v1, the benchmark's default, is not written
    bench.append_record(record, {**report, "team_size": "2v2"})
    assert json.loads(record.read_text().splitlines()[-1])["team_size"] == "2v2"


def test_a_warp_trained_bot_replays_the_final_games_on_warp_and_the_record_keeps_them(tmp_path, monkeypatch) -> None:
    import rocketrl.league.match as match_module

    bench = load_benchmark("learn_vs_rule")
    played = []

    class Result:
        def summary(self) -> str:
            return "ok"

    def fake_play_match(bot, rule, match, name_a, name_b, device=None):
        played.append((match.env.engine, match.env.seed, match.env.kickoff_jitter, match.num_games))
        return Result()

    monkeypatch.setattr(match_module, "play_match", fake_play_match)
    monkeypatch.setattr(bench, "games_summary", lambda result: figures(3, 0, 7))
    args = bench.argparse.Namespace(team_size=(1, 1), game_seconds=300.0, kickoff_jitter=5.0, games=100, seed=4)
    on_warp = bench.train_engine_games("bot", "rule", args, "warp", "cpu")
    # The final games' arena seeds (seed + 1), spawns and count, on the engine the bot trained in.
    assert played == [("warp", 5, 5.0, 100)]
    assert on_warp["engine"] == "warp" and on_warp["wins"] == 3
    report = {
        "preset": "vs_rule", "seed": 4, "train_engine": "warp", "steps": 1, "train_wall_seconds": 1.0,
        "select_wall_seconds": 0.0, "bot": "x", **figures(2, 0, 8), "train_engine_final": on_warp,
    }  # fmt: skip
    bench.append_record(tmp_path / "runs.jsonl", report)
    line = json.loads((tmp_path / "runs.jsonl").read_text())
    assert line["train_engine_final"]["win_rate"] == 0.3 and line["final"]["win_rate"] == 0.2
    bench.append_record(tmp_path / "plain.jsonl", {**report, "train_engine_final": None})
    assert "train_engine_final" not in json.loads((tmp_path / "plain.jsonl").read_text())


def test_games_are_played_at_the_team_size_asked_for() -> None:
    bench = load_benchmark("learn_vs_rule")
    args = bench.argparse.Namespace(team_size=(2, 2), game_seconds=60.0, kickoff_jitter=5.0)
    match = bench.game_config(args, 100, seed=7)
    assert (match.env.blue_size, match.env.orange_size) == (2, 2)
    assert match.num_games == 100 and match.env.num_arenas == 50 and match.env.seed == 7
    assert match.env.kickoff_jitter == 5.0 and match.game_seconds == 60.0


def test_no_training_preset_uses_the_generalization_opponents() -> None:
    configs = Path(__file__).resolve().parent.parent / "rocketrl" / "configs"
    for path in configs.rglob("*.yaml"):
        text = path.read_text()
        assert "shadow_goalie" not in text and "ball_chaser" not in text, path


def test_runs_table_lists_every_run_of_the_preset_with_median_and_lowest() -> None:
    bench = load_benchmark("learn_vs_rule")

    def record(seed: int, wins: int, preset: str = "vs_rule") -> dict:
        return {
            "seed": seed, "date": "2026-11-25", "preset": preset, "train_engine": "rocketsim", "steps": 20_000_000,
            "train_wall_seconds": 6000.0, "select_wall_seconds": 360.0, "final": figures(wins, 0, 100 - wins),
            "exact_kickoffs": None, "generalization": {"shadow_goalie": figures(40, 0, 10)},
        }  # fmt: skip

    table = bench.runs_table([record(2, 90), record(0, 70), record(1, 80), record(5, 10, "other")], "vs_rule")
    lines = table.splitlines()
    assert [line.split("|")[1].strip() for line in lines[2:5]] == ["0", "1", "2"]  # every run, by seed
    assert "70/100: 70.0%" in lines[2] and "40/50: 80.0%" in lines[2] and "100 + 6 min" in lines[2]
    assert "other" not in table and "10/100" not in table
    assert "3 runs of `vs_rule`: median 80.0%, lowest 70.0%, highest 90.0%" in lines[-1]
    assert bench.runs_table([], "vs_rule") == "no recorded runs of `vs_rule`"
    # A variant's runs and runs measured in other team sizes have tables of their own.
    variant = {**record(3, 60), "variant": "selfplay_half"}
    team = {**record(4, 30), "team_size": "2v2"}
    table = bench.runs_table([record(0, 70), variant, team], "vs_rule")
    assert "60/100" not in table and "30/100" not in table and "1 run of `vs_rule`:" in table
    assert "60/100" in bench.runs_table([record(0, 70), variant, team], "vs_rule", variant="selfplay_half")
    two = bench.runs_table([record(0, 70), variant, team], "vs_rule", team="2v2")
    assert "30/100" in two and "70/100" not in two and "`vs_rule` (2v2)" in two
    # Runs trained on warp have a table of their own, with the same final games played on warp beside.
    on_warp = {**record(0, 20), "train_engine": "warp", "train_engine_final": figures(31, 0, 69)}
    table = bench.runs_table([record(0, 70), on_warp], "vs_rule")
    assert "20/100" not in table and "same games on" not in table
    warp = bench.runs_table([record(0, 70), on_warp], "vs_rule", engine="warp").splitlines()
    assert "same games on warp" in warp[0] and warp[0].count("|") == warp[1].count("|") == warp[2].count("|")
    assert "20/100: 20.0%" in warp[2] and "31/100: 31.0%" in warp[2] and "70/100" not in "\n".join(warp)
    assert "1 run of `vs_rule` trained on warp" in warp[-1]


def test_the_record_keeps_the_end_of_training_averaged_over_its_last_two_million_steps(tmp_path) -> None:
    from rocketrl.eval.run_record import training_end

    curves = {
        "charts/touches_per_minute": [(1_000_000, 5.0), (23_000_000, 30.0), (24_000_000, 36.0), (25_000_000, 39.0)],
        "league/train_score_vs_rule": [(20_000_000, 0.9), (25_000_000, 0.4)],
        "losses/entropy": [(25_000_000, 0.333333)],
    }
    end = training_end(curves)
    # (23M..25M]: 24M and 25M count, 23M lies exactly 2M back and does not
    assert end == {"touches_per_minute": 37.5, "train_score_vs_rule": 0.4, "policy_entropy": 0.333}
    bench = load_benchmark("learn_vs_rule")
    report = {
        "preset": "vs_rule", "seed": 0, "train_engine": "warp", "steps": 1, "train_wall_seconds": 1.0,
        "select_wall_seconds": 0.0, "bot": "b", **figures(1, 0, 0), "generalization": {}, "training_end": end,
    }  # fmt: skip
    bench.append_record(tmp_path / "runs.jsonl", report)
    assert json.loads((tmp_path / "runs.jsonl").read_text())["training_end"]["touches_per_minute"] == 37.5


def test_the_table_shows_a_preset_s_runs_on_the_engine_it_trains_on() -> None:
    bench = load_benchmark("learn_vs_rule")
    assert bench.preset_engine("vs_rule_warp") == "warp"
    assert bench.preset_engine("vs_rule") == "rocketsim"


def test_a_run_with_another_budget_is_recorded_and_tabled_as_its_own_variant(tmp_path, monkeypatch, capsys) -> None:
    import sys

    bench = load_benchmark("learn_vs_rule")
    base = {
        "preset": "vs_rule", "train_engine": "warp", "train_wall_seconds": 60.0, "select_wall_seconds": 0.0,
        "bot": "b", "generalization": {},
    }  # fmt: skip
    record = tmp_path / "runs.jsonl"
    bench.append_record(record, {**base, "seed": 0, "steps": 25_000_000, **figures(3, 0, 7)})
    longer = {"variant": "timesteps=34M", "changes": ["run.timesteps=34000000"]}
    bench.append_record(record, {**base, **longer, "seed": 2, "steps": 34_000_000, **figures(8, 0, 2)})

    def table(*flags: str) -> str:
        argv = ["learn_vs_rule.py", "--table", "--engine", "warp", "--record", str(record), *flags]
        monkeypatch.setattr(sys, "argv", argv)
        bench.main()
        return capsys.readouterr().out

    own = table()
    assert "| 0 |" in own and "| 2 |" not in own and "1 run of `vs_rule` trained on warp: median 30.0%" in own
    budget = table("--timesteps", "34000000")
    assert "| 2 |" in budget and "| 0 |" not in budget
    assert "1 run of `vs_rule` with `timesteps=34M` trained on warp: median 80.0%" in budget


def test_the_comparison_table_has_one_row_per_setting_best_median_first() -> None:
    bench = load_benchmark("learn_vs_rule")

    def record(seed: int, wins: int, preset: str = "vs_rule", **extra) -> dict:
        return {
            "seed": seed, "preset": preset, "train_engine": "warp", "steps": 25_000_000,
            "final": {**figures(wins, 0, 100 - wins), "elo": 1000.0 + 10 * wins},
            "generalization": {"ball_chaser": figures(wins // 2, 0, 50 - wins // 2)}, **extra,
        }  # fmt: skip

    records = [
        record(0, 76),
        record(1, 39),
        record(2, 77),  # the preset: median 76%
        record(2, 48, "vs_rule_touch"),
        record(2, 79, variant="timesteps=34M", steps=34_000_000),
        record(0, 71, train_engine="rocketsim"),  # same preset, other engine: its own row
        record(0, 18, "vs_rule_2v2", team_size="2v2"),  # another team size: left out
        {**record(3, 90), "final": None},  # a run without final games: left out
    ]
    lines = bench.comparison_table(records).splitlines()
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines[2:]]
    assert [row[:3] for row in rows] == [
        ["`vs_rule`", "timesteps=34M", "warp"],
        ["`vs_rule`", "-", "warp"],
        ["`vs_rule`", "-", "rocketsim"],
        ["`vs_rule_touch`", "-", "warp"],
    ]
    assert rows[1][3:8] == ["3", "25M", "76.0 / 39.0 / 77.0", "76.0%", "1760"]  # each run by seed, then the median
    assert rows[1][9] == "76%" and rows[0][4] == "34M"  # against ball_chaser: 38, 19 and 38 wins of 50
    assert "vs_rule_2v2" not in "\n".join(lines) and "90.0" not in "\n".join(lines)
    assert "`vs_rule_2v2`" in bench.comparison_table(records, "2v2")
    assert bench.comparison_table([]) == "no recorded runs in 1v1"


def test_the_final_games_are_saved_as_replays_and_the_record_keeps_how_the_bot_played(tmp_path) -> None:
    from rocketrl.eval.run_record import PLAY_FIGURES
    from rocketrl.league.match import play_match
    from rocketrl.policy.random_policy import RandomPolicy
    from rocketrl.policy.rule import RulePolicy

    bench = load_benchmark("learn_vs_rule")
    args = bench.argparse.Namespace(team_size=(1, 1), game_seconds=8.0, kickoff_jitter=5.0, games=2, seed=0)
    folder = tmp_path / "final_games"
    match = bench.final_games_with_replays(args, folder)
    result = play_match(RulePolicy(seed=0), RandomPolicy(seed=0), match, "learner", "rule_policy")
    assert sorted(p.name for p in folder.iterdir()) == ["game_0000.safetensors", "game_0001.safetensors"]
    play = bench.play_figures(folder)
    assert set(play) == {"learner", "rule_policy"}
    assert play["learner"]["goals"] == sum(g.goals_a for g in result.games)  # the replays hold the games played
    assert play["learner"]["touches_per_minute"] > 0  # RulePolicy reaches the ball within 8 s of a kickoff
    report = {
        "preset": "vs_rule", "seed": 0, "train_engine": "warp", "steps": 1, "train_wall_seconds": 1.0,
        "select_wall_seconds": 0.0, "bot": "x", **figures(2, 0, 0), "play": play,
    }  # fmt: skip
    bench.append_record(tmp_path / "runs.jsonl", report)
    line = json.loads((tmp_path / "runs.jsonl").read_text())
    assert set(line["play"]) == set(PLAY_FIGURES) and "own_goals_saving" in PLAY_FIGURES
    assert line["play"]["own_goals"] == play["learner"]["own_goals"]
    assert line["play"]["touches_per_minute"] == play["learner"]["touches_per_minute"]


def test_a_records_commit_is_marked_dirty_by_changed_code_and_not_by_the_reports_in_docs(tmp_path) -> None:
    """A run appends to docs/learn_vs_rule_runs.jsonl; the next run of the same code must still name the bare
    commit, while a changed source file marks it '+dirty'."""
    from rocketrl.infra.bench_report import git_commit

    def git(*args: str) -> str:
        identity = ["-c", "user.name=t", "-c", "user.email=t@t"]
        return subprocess.run(
            ["git", *identity, *args], cwd=tmp_path, check=True, capture_output=True, text=True
        ).stdout

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "runs.jsonl").write_text('{"seed": 0}\n')
    (tmp_path / "train.py").write_text("STEPS = 1\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "first")
    head = git("rev-parse", "HEAD").strip()
    assert git_commit(tmp_path) == head
    with open(tmp_path / "docs" / "runs.jsonl", "a") as records:
        records.write('{"seed": 1}\n')
    assert git_commit(tmp_path) == head, "a run's own record marked the code dirty"
    (tmp_path / "train.py").write_text("STEPS = 2\n")
    assert git_commit(tmp_path) == head + "+dirty"


def test_time_to_reads_when_the_in_training_evaluation_first_reached_a_rate(tmp_path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    bench = load_benchmark("learn_vs_rule")
    run_dir = tmp_path / "runs" / "r1"
    writer = SummaryWriter(str(run_dir))
    start = 1_800_000_000.0
    writer.add_scalar("charts/SPS", 5000.0, 0, walltime=start)
    # (step, minutes, evaluation win rate): 0.4, then 0.55 at 4M steps / 6 min, 0.85 at 8M / 12 min
    for step, minutes, rate in ((2_000_000, 3, 0.4), (4_000_000, 6, 0.55), (6_000_000, 9, 0.5), (8_000_000, 12, 0.85)):
        writer.add_scalar("league/win_rate_vs_rule", rate, step, walltime=start + 60.0 * minutes)
    writer.close()
    at_half, at_eighty, at_ninety = bench.first_reaching(run_dir, [0.5, 0.8, 0.9])
    assert at_half == (4_000_000, 6.0)
    assert at_eighty == (8_000_000, 12.0)
    assert at_ninety is None
    record = {
        "preset": "p", "seed": 3, "train_engine": "warp", "steps": 8_000_000, "train_wall_seconds": 720.0,
        "final": figures(9, 0, 1), "bot": str(run_dir / "checkpoints" / "step_8000000.safetensors"),
    }  # fmt: skip
    gone = dict(record, seed=4, bot=str(tmp_path / "elsewhere" / "checkpoints" / "x.safetensors"))
    table = bench.time_to_table([record, gone], "p", "", "1v1", [0.5, 0.8, 0.9])
    assert "| warp | 3 | 8.0M in 12 min | 90.0% | 4M, 6 min | 8M, 12 min | - |" in table
    assert "| warp | 4 | 8.0M in 12 min | 90.0% | - | - | - |" in table
