"""Choosing the bot among the checkpoints of one or several runs (rocketrl.eval.selection), the benchmark's
learners (rocketrl.eval.learners) and `rocketrl select`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import rocketrl.eval.selection as selection
from rocketrl.cli import main
from rocketrl.config import load_config, preset_config_path
from rocketrl.eval.learners import learner_seeds, reused_learner
from rocketrl.infra.checkpoint import CheckpointManager
from rocketrl.ppo.train_config import config_to_dict


def make_run(folder: Path, scores: dict[int, float | None]) -> Path:
    """A run folder whose checkpoints/ holds one tiny checkpoint per step, with the given in-training scores."""
    manager = CheckpointManager(folder / "checkpoints", keep_best=10, keep_latest=10)
    for step, score in scores.items():
        manager.save(step, {"model": {"w": torch.zeros(1)}}, meta={"score_by": "win_rate_vs_rule"}, score=score)
    return folder


def test_a_runs_candidates_are_its_latest_checkpoint_and_its_best_scored_others(tmp_path) -> None:
    run = make_run(tmp_path / "a", {1000: 0.2, 2000: 0.9, 3000: 0.5, 4000: 0.7, 5000: None})
    steps = [candidate.step for candidate in selection.run_candidates(run, 3)]
    assert steps == [2000, 4000, 5000]  # the best two by score (0.9, 0.7), then the latest, in step order
    assert [c.step for c in selection.run_candidates(run / "checkpoints", 1)] == [5000]
    # a torn file (a crash mid-copy) is skipped, said, and never chosen
    (run / "checkpoints" / "step_000000006000.safetensors").write_bytes(b"torn")
    with pytest.warns(UserWarning, match="unreadable checkpoint"):
        assert [c.step for c in selection.run_candidates(run, 1)] == [5000]
    with pytest.raises(FileNotFoundError, match="no checkpoints"):
        selection.run_candidates(tmp_path / "empty", 2)


def test_the_bot_is_the_candidate_with_most_points_across_runs_ties_to_the_higher_step_then_earlier_run(
    tmp_path, monkeypatch
) -> None:
    first = make_run(tmp_path / "first", {1000: 0.5, 2000: 0.6})
    second = make_run(tmp_path / "second", {1000: 0.4, 2000: 0.1})
    wins = {  # (run, step) -> (wins, draws, losses) of 10 games
        ("first", 1000): (5, 0, 5),
        ("first", 2000): (6, 1, 3),
        ("second", 1000): (6, 1, 3),
        ("second", 2000): (7, 0, 3),
    }

    class Result:
        def __init__(self, w: int, d: int, lost: int) -> None:
            self.wins, self.draws, self.losses = w, d, lost

    monkeypatch.setattr("rocketrl.policy.load.policy_from_checkpoint", lambda path, **_: Path(path))
    played = []

    def play(policy, opponent, match, *names, device="cpu"):
        played.append(policy)
        return Result(*wins[(policy.parent.parent.name, int(policy.stem.split("_")[1]))])

    monkeypatch.setattr(selection, "play_match", play)
    table, best = selection.select_bot([first, second], "rule", match=None, candidates_per_run=2, log=lambda _: None)
    assert len(table) == len(played) == 4
    assert (best.checkpoint.parent.parent.name, best.step, best.points) == ("second", 2000, 7.0)
    wins[("second", 2000)] = (6, 1, 3)  # three at 6.5 points: the higher step wins, and of those the earlier run
    table, best = selection.select_bot([first, second], "rule", match=None, candidates_per_run=2, log=lambda _: None)
    assert (best.checkpoint.parent.parent.name, best.step) == ("first", 2000)
    assert table[0].row()["points"] == 5.0 and table[0].row()["score"] == 0.5


def test_learners_of_benchmark_seeds_do_not_overlap() -> None:
    assert learner_seeds(3, 1) == [3]
    assert [learner_seeds(seed, 2) for seed in range(3)] == [[0, 1], [2, 3], [4, 5]]


def test_a_reused_learner_must_hold_the_same_config_and_a_record_of_its_training(tmp_path) -> None:
    cfg = load_config(preset_config_path("vs_rule_imitate"), ["--run.seed", "4", "--run.max-minutes", "105"])
    run = tmp_path / "run"
    run.mkdir()
    saved = config_to_dict(cfg)
    saved["run"] = {**saved["run"], "name": "another-name", "logdir": "elsewhere"}  # these may differ
    (run / "config.json").write_text(json.dumps(saved))
    records = tmp_path / "runs.jsonl"
    with pytest.raises(ValueError, match="no record of its training"):
        reused_learner(cfg, run, records)
    lines = [
        {
            "seed": 4,
            "bot": f"{run}/checkpoints/step_000024004288.safetensors",
            "steps": 25_004_672,
            "train_wall_seconds": 1700.5,
        },
        {
            "seed": 4,
            "bot": f"{run}/checkpoints/step_000025004672.safetensors",
            "steps": 25_004_672,
            "train_wall_seconds": 0.0,
            "team_size": "2v2",
        },
    ]
    records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    learner = reused_learner(cfg, run, records)
    assert (learner.seed, learner.steps, learner.train_seconds, learner.reused) == (4, 25_004_672, 1700.5, True)
    saved["ppo"] = {**saved["ppo"], "imitation_until": 0.3}
    (run / "config.json").write_text(json.dumps(saved))
    with pytest.raises(ValueError, match=r"ppo.imitation_until is 0.3 there but 0.5"):
        reused_learner(cfg, run, records)
    saved["ppo"] = {**saved["ppo"], "imitation_until": 0.5}
    (run / "config.json").write_text(json.dumps(saved))
    other_seed = load_config(preset_config_path("vs_rule_imitate"), ["--run.seed", "5", "--run.max-minutes", "105"])
    with pytest.raises(ValueError, match="run.seed is 4 there but 5"):
        reused_learner(other_seed, run, records)


def test_select_names_a_folder_without_checkpoints_before_playing(tmp_path, capsys) -> None:
    good = make_run(tmp_path / "good", {1000: 0.5})
    assert main(["select", str(good), str(tmp_path / "empty"), "--games", "2"]) != 0
    assert "empty: no checkpoints (step_*.safetensors) here or in its checkpoints/ folder" in capsys.readouterr().err


def test_train_with_two_learners_trains_two_seeds_and_chooses_the_bot_among_them(tmp_path, monkeypatch) -> None:
    import rocketrl.cli as cli

    monkeypatch.setattr(cli, "SELECT_GAMES", 2)  # two full games per candidate keep the test short
    args = ["train", "--debug", "--learners", "2", "--seed", "7", "--logdir", str(tmp_path), "--name", "pair"]
    assert main([*args, "--ascii"]) == 0
    runs = [tmp_path / "pair-learner0", tmp_path / "pair-learner1"]
    assert [json.loads((run / "config.json").read_text())["run"]["seed"] for run in runs] == [7, 8]
    chosen = json.loads((runs[0] / "selection.json").read_text())
    rows = chosen["selection"]
    assert {Path(row["checkpoint"]).parent.parent for row in rows} == set(runs)
    assert all(row["wins"] + row["draws"] + row["losses"] == 2 for row in rows)
    best = max(rows, key=lambda row: row["points"])
    assert Path(chosen["chosen"]).is_file() and best["points"] == max(row["points"] for row in rows)
    assert chosen["chosen"] in {row["checkpoint"] for row in rows}


def test_train_with_learners_refuses_resume(tmp_path, capsys) -> None:
    assert main(["train", "--debug", "--learners", "2", "--resume", "latest", "--logdir", str(tmp_path)]) != 0
    assert "--learners trains new runs one after another on this machine: not with --resume" in capsys.readouterr().err


def test_the_benchmark_takes_learner_runs_only_for_several_learners(monkeypatch, capsys) -> None:
    import sys

    from benchmark_loader import load_benchmark

    bench = load_benchmark("learn_vs_rule")
    monkeypatch.setattr(sys, "argv", ["learn_vs_rule.py", "--learner-runs", "runs/x"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "--learner-runs stands in for learners of --learners L (L >= 2)" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["learn_vs_rule.py", "--learners", "2", "--select-games", "0"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "--learners: the bot is chosen among the learners by games" in capsys.readouterr().err


def test_against_several_opponents_a_candidate_adds_up_its_points_over_all_of_them(tmp_path, monkeypatch) -> None:
    """The gauntlet's way: each candidate plays the games against every opponent; points over all of them."""
    first = make_run(tmp_path / "first", {1000: 0.5})
    second = make_run(tmp_path / "second", {1000: 0.5})
    scores = {  # (run, opponent) -> (wins, draws, losses)
        ("first", "v1"): (9, 0, 1),
        ("first", "rule"): (2, 0, 8),
        ("second", "v1"): (5, 0, 5),
        ("second", "rule"): (8, 0, 2),
    }

    class Result:
        def __init__(self, w: int, d: int, lost: int) -> None:
            self.wins, self.draws, self.losses = w, d, lost

    monkeypatch.setattr("rocketrl.policy.load.policy_from_checkpoint", lambda path, **_: Path(path))
    monkeypatch.setattr(
        selection,
        "play_match",
        lambda policy, opponent, *a, **k: Result(*scores[(policy.parent.parent.name, opponent)]),
    )
    table, best = selection.select_bot([first, second], ["v1", "rule"], match=None, candidates_per_run=1, log=print)
    assert [(c.wins, c.losses) for c in table] == [(11, 9), (13, 7)]
    assert best.checkpoint.parent.parent.name == "second"
