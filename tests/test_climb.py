"""`rocketrl climb`: the line's steps (which start, which average, which seeds), stopping, continuing, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketrl.cli import build_parser, main
from rocketrl.config import load_config, preset_config_path
from rocketrl.eval.climb import ClimbRecord, ClimbTools, climb, half_way, next_start, step_judge_seeds
from rocketrl.eval.climb_cli import JUDGING
from rocketrl.eval.judge_cli import recent_bots
from rocketrl.infra.checkpoint import file_sha256, read_meta
from rocketrl.policy.load import gauntlet_bots


class FakeTools:
    """Records every call; the runs 'train' to `last_step`, a step ships when its number is in `ships`, and the
    run of step `stop_at` is stopped by a signal the first time it trains."""

    def __init__(self, folder: Path, ships: set[int] = frozenset(), last_step: int = 21_400_000, stop_at: int = 0):
        self.folder, self.ships, self.last_step, self.stop_at = folder, ships, last_step, stop_at
        self.trained: list[tuple[str, int, str, bool]] = []
        self.averaged: list[tuple[list[str], str, int | None]] = []
        self.judged: list[tuple[str, str, list[int], str]] = []
        self.measured: list[tuple[str, str, int]] = []  # (candidate, report, judgings so far)

    def train(self, start: str, seed: int, name: str, resume: bool) -> tuple[Path, int, bool]:
        self.trained.append((start, seed, name, resume))
        (self.folder / name / "checkpoints").mkdir(parents=True, exist_ok=True)
        (self.folder / name / "checkpoints" / "step_1.safetensors").write_text("")
        stopped = name == f"step{self.stop_at}" and not resume
        return self.folder / name, self.last_step, stopped

    def average(self, specs, out: Path, from_step: int | None) -> Path:
        self.averaged.append(([str(s) for s in specs], out.name, from_step))
        return out

    def judge(self, candidate: str, parent: str, seeds: list[int], json_path: Path) -> bool:
        self.judged.append((Path(candidate).name, parent, seeds, json_path.name))
        return int(Path(candidate).name.removeprefix("step").split("_")[0]) in self.ships

    def measure(self, candidate: str, json_path: Path) -> None:
        self.measured.append((Path(candidate).name, json_path.name, len(self.judged)))

    def tools(self, yardstick: bool = False) -> ClimbTools:
        return ClimbTools(self.train, self.average, self.judge, 2_000_000, self.measure if yardstick else None)


def test_the_half_way_step_is_rounded_down_to_the_checkpoint_spacing() -> None:
    assert half_way(56_300_000, 2_000_000) == 28_000_000  # gen35: its 16 checkpoints from 28M
    assert half_way(21_400_000, 2_000_000) == 10_000_000  # gen36: 7 checkpoints from 10M
    assert half_way(3_000_000, 2_000_000) == 2_000_000  # never below the first kept checkpoint
    assert step_judge_seeds([1, 2, 3], 1) == [1, 2, 3] and step_judge_seeds([1, 2, 3], 3) == [2001, 2002, 2003]


def test_three_level_steps_start_and_average_as_the_shipped_lines_did(tmp_path: Path) -> None:
    fake = FakeTools(tmp_path)
    record = climb(ClimbRecord("gauntlet_v25", ["--x", "1"], 24, [1, 2]), tmp_path, 3, fake.tools())
    a, b = str(tmp_path / "step1_average.safetensors"), str(tmp_path / "step2_candidate.safetensors")
    # Starts: the parent, the first run's average (not its candidate), then the second step's line average.
    assert [(start, seed, name) for start, seed, name, _ in fake.trained] == [
        ("gauntlet_v25", 24, "step1"),
        (a, 25, "step2"),
        (b, 26, "step3"),
    ]
    assert fake.averaged == [
        ([str(tmp_path / "step1")], "step1_average.safetensors", 10_000_000),
        ([a, "gauntlet_v25"], "step1_candidate.safetensors", None),
        ([str(tmp_path / "step2")], "step2_average.safetensors", 10_000_000),
        ([str(tmp_path / "step2_average.safetensors"), a], "step2_candidate.safetensors", None),
        ([str(tmp_path / "step3")], "step3_average.safetensors", 10_000_000),
        ([str(tmp_path / "step3_average.safetensors"), b], "step3_candidate.safetensors", None),
    ]
    # Every candidate against the parent, each step on new seeds.
    assert [(c, p, s) for c, p, s, _ in fake.judged] == [
        ("step1_candidate.safetensors", "gauntlet_v25", [1, 2]),
        ("step2_candidate.safetensors", "gauntlet_v25", [1001, 1002]),
        ("step3_candidate.safetensors", "gauntlet_v25", [2001, 2002]),
    ]
    assert record.shipped is None and [step.ships for step in record.steps] == [False, False, False]
    saved = json.loads((tmp_path / "climb.json").read_text())
    assert saved["steps"][2]["averaged_with"] == b and saved["steps"][0]["from_step"] == 10_000_000
    assert next_start(record) == str(tmp_path / "step3_candidate.safetensors")


def test_the_line_stops_at_the_first_candidate_that_ships(tmp_path: Path) -> None:
    fake = FakeTools(tmp_path, ships={2})
    record = climb(ClimbRecord("pretrained", [], 0, [5]), tmp_path, 5, fake.tools())
    assert len(fake.trained) == 2 and record.shipped == str(tmp_path / "step2_candidate.safetensors")
    assert ClimbRecord.load(tmp_path) == record


def test_a_stopped_line_continues_where_it_stopped(tmp_path: Path) -> None:
    fake = FakeTools(tmp_path, stop_at=2)
    record = climb(ClimbRecord("pretrained", [], 0, [5]), tmp_path, 3, fake.tools())
    assert len(record.steps) == 2 and record.steps[1].run is None and record.steps[1].ships is None
    assert len(fake.judged) == 1  # step 2 was not averaged nor judged
    again = FakeTools(tmp_path, ships={2})
    loaded = ClimbRecord.load(tmp_path)
    assert loaded is not None and loaded.steps[0].ships is False
    record = climb(loaded, tmp_path, 3, again.tools())
    # Step 1 is kept as judged; step 2's run resumes from its checkpoint, from the same start and seed.
    assert again.trained == [(str(tmp_path / "step1_average.safetensors"), 1, "step2", True)]
    assert [c for c, *_ in again.judged] == ["step2_candidate.safetensors"]
    assert record.shipped == str(tmp_path / "step2_candidate.safetensors")


def test_each_judged_candidate_meets_the_yardstick_after_its_verdict(tmp_path: Path) -> None:
    fake = FakeTools(tmp_path, ships={2})
    record = climb(ClimbRecord("pretrained", [], 0, [5]), tmp_path, 3, fake.tools(yardstick=True))
    # After each judging, the shipping one too, and never before it: the verdicts are the judge's alone.
    assert fake.measured == [
        ("step1_candidate.safetensors", "step1_yardstick.json", 1),
        ("step2_candidate.safetensors", "step2_yardstick.json", 2),
    ]
    assert [s.yardstick for s in record.steps] == [str(tmp_path / f"step{k}_yardstick.json") for k in (1, 2)]
    assert [s.ships for s in record.steps] == [False, True] and ClimbRecord.load(tmp_path) == record
    # A line stopped between a verdict and its yardstick games plays those first, and nothing else again.
    record.steps[1].yardstick = None
    record.save(tmp_path)
    again = FakeTools(tmp_path)
    assert climb(ClimbRecord.load(tmp_path), tmp_path, 3, again.tools(yardstick=True)).steps[1].yardstick
    assert again.measured == [("step2_candidate.safetensors", "step2_yardstick.json", 0)]
    assert again.trained == [] and again.judged == []
    # Without a yardstick nothing is measured, and a record without the field (older lines) loads as before.
    plain = FakeTools(tmp_path / "plain")
    assert climb(ClimbRecord("pretrained", [], 0, [5]), tmp_path / "plain", 1, plain.tools()).steps[0].yardstick is None
    older = json.loads((tmp_path / "climb.json").read_text())
    for step in older["steps"]:
        del step["yardstick"]
    (tmp_path / "older").mkdir()
    (tmp_path / "older" / "climb.json").write_text(json.dumps(older))
    assert [s.yardstick for s in ClimbRecord.load(tmp_path / "older").steps] == [None, None]


def test_a_line_going_on_from_a_line_average_trains_and_averages_with_it(tmp_path: Path) -> None:
    fake = FakeTools(tmp_path)
    given = "docs/candidates/gen51_line_average.safetensors"
    record = climb(ClimbRecord("gauntlet_v31", [], 40, [1], start=given), tmp_path, 2, fake.tools())
    c1 = str(tmp_path / "step1_candidate.safetensors")
    # Step 1 starts from the given line average and averages with it, as a later step of a line does; step 2 starts
    # from step 1's candidate (not its run average, which averaged with the parent only at a line's first step).
    assert [(start, seed) for start, seed, *_ in fake.trained] == [(given, 40), (c1, 41)]
    a1, a2 = str(tmp_path / "step1_average.safetensors"), str(tmp_path / "step2_average.safetensors")
    assert fake.averaged[1] == ([a1, given], "step1_candidate.safetensors", None)
    assert fake.averaged[3] == ([a2, c1], "step2_candidate.safetensors", None)
    # The bot to beat is the parent throughout, and the start is kept with the line's settings.
    assert [p for _, p, *_ in fake.judged] == ["gauntlet_v31", "gauntlet_v31"]
    assert ClimbRecord.load(tmp_path).start == given
    assert ClimbRecord("gauntlet_v31", [], 40, [1]).settings() != record.settings()


def test_the_recent_field_is_the_five_bots_shipped_before_the_parent() -> None:
    bots = gauntlet_bots()
    newest = bots[-1]
    assert recent_bots(newest) == bots[-6:-1][::-1]
    assert recent_bots("pretrained") == recent_bots(newest)  # the same file however named
    assert recent_bots("gauntlet_v3") == ["gauntlet_v2", "gauntlet_v1"]
    assert recent_bots("gauntlet_v1") == []
    assert recent_bots("some/run/of/mine.safetensors") == bots[-5:][::-1]  # not shipped: the five newest


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give each step's length"),
        (["--minutes", "1", "--seeds", "1,2,3"], "--rule pooled: 3 sets of 100 games; it needs 1000"),
        (["--minutes", "1", "--field", "none"], "--rule pooled: give --field BOTS too"),
        (["--minutes", "1", "--floor", "ball_chaser=2"], "--floor 'ball_chaser=2'"),
        (["--minutes", "1", "--from", "gauntlet_v999"], "'gauntlet_v999' is not a gauntlet bot"),
        (["--minutes", "1", "--from", "gauntlet_v1"], "--field 'recent': no bot left"),
        (["--minutes", "1", "--ppo.learning-rat", "1"], "learning-rat"),
        (["--minutes", "0"], "--minutes 0"),
        (["--minutes", "1", "--start", "runs/nosuch.safetensors"], "--start: checkpoint"),
        (["--minutes", "1", "--yardstick", "nexto:runs/nosuch.pt"], "--yardstick 'nexto:runs/nosuch.pt'"),
        (["--minutes", "1", "--yardstick", "ball_chasr"], "--yardstick 'ball_chasr': policy 'ball_chasr' is neither"),
        (["--minutes", "1", "--yardstick", ","], "--yardstick ',': name at least one bot"),
        (["--minutes", "1", "--yardstick", "rule_policy", "--yardstick-seeds", "0,0"], "--yardstick-seeds '0,0'"),
        (["--minutes", "1", "--yardstick", "ball_chaser", "--yardstick-jitter", "-1"], "--yardstick-jitter -1"),
    ],
)
def test_bad_settings_are_refused_before_any_training(tmp_path: Path, capsys, args, message) -> None:
    assert main(["climb", "--out", str(tmp_path / "line"), *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "line").exists()


def test_a_line_with_other_settings_is_not_continued(tmp_path: Path, capsys) -> None:
    ClimbRecord("gauntlet_v24", ["--run.timesteps", "1000000000000", "--run.max-minutes", "1.0"], 0, [1]).save(tmp_path)
    assert main(["climb", "--out", str(tmp_path), "--minutes", "1"]) == 2
    err = capsys.readouterr().err
    assert "it holds a line with other settings (--from, --seeds, the judging's settings;" in err
    # Written by a command, continued only by the same one: a changed rule is refused by name.
    line = tmp_path / "line"
    command = ["climb", "--out", str(line), "--minutes", "1", "--seeds", ",".join(map(str, range(10)))]
    args = build_parser().parse_known_args(command)[0]
    judging = {key: getattr(args, key) for key in JUDGING}
    overrides = ["--run.timesteps", str(10**12), "--run.max-minutes", "1.0"]
    ClimbRecord("pretrained", overrides, 0, list(range(10)), judging).save(line)
    assert main([*command, "--rule", "every-set"]) == 2
    assert "other settings (the judging's settings;" in capsys.readouterr().err
    assert ClimbRecord.load(line).judging["rule"] == "pooled"  # the record is left as it was


def test_every_command_prints_its_help() -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # noqa: SLF001 - argparse keeps its subparsers there
    assert "climb" in commands and "judge" in commands
    for name, sub in commands.items():
        assert sub.format_help().startswith(f"usage: rocketrl {name}"), name
    # climb's --workers/--engine/--device reach its games only; the training settings its help names instead are real
    climb_help = " ".join(commands["climb"].format_help().split())
    named = ["--env.num-workers", "--env.engine", "--run.device"]
    assert all(f"(training: the preset's, or {flag})" in climb_help.replace("- ", "-") for flag in named)
    assert "the judging's games only" not in commands["judge"].format_help()
    overrides = ["--env.num-workers", "1", "--env.engine", "warp", "--run.device", "cpu"]
    config = load_config(preset_config_path("league_1v1_next"), overrides)
    assert (config.env.num_workers, config.env.engine, config.run.device) == (1, "warp", "cpu")


def test_a_short_line_trains_averages_judges_and_continues(tmp_path: Path, capsys) -> None:
    """Real runs, averages and games, tiny: one step, then the same line asked for two continues with the second."""
    out = tmp_path / "line"
    small = ["--env.num-arenas", "2", "--run.checkpoint-interval", "512", "--run.keep-every", "512"]
    small += [
        "--speed.compile-rule",
        "false",
        "--league.eval-interval",
        "0",
        "--run.ascii",
        "true",
        "--run.device",
        "cpu",
    ]
    judging = ["--rule", "every-set", "--seeds", "3", "--field", "none", "--floor", "none", "--num-games", "2"]
    judging += ["--game-seconds", "3", "--workers", "1", "--device", "cpu"]
    judging += ["--yardstick", "ball_chaser", "--yardstick-seeds", "5"]  # measured after each verdict
    command = ["climb", "--from", "gauntlet_v1", "--out", str(out), "--timesteps", "1024", "--seed", "7"]
    assert main([*command, "--steps", "1", *small, *judging]) == 1  # 2 games cannot ship
    step1 = json.loads((out / "climb.json").read_text())["steps"][0]
    assert step1["ships"] is False and step1["from_step"] == 512 and step1["trained_steps"] >= 1024
    yardstick = json.loads((out / "step1_yardstick.json").read_text())
    assert step1["yardstick"] == str(out / "step1_yardstick.json")
    assert yardstick["candidate_sha256"] == file_sha256(out / "step1_candidate.safetensors")
    assert yardstick["settings"]["kickoff_jitter"] == 5.0 and yardstick["settings"]["game_seconds"] == 3.0
    (played,) = yardstick["sets"]
    assert (played["seed"], played["name_b"], played["num_games"]) == (5, "ball_chaser", 2)
    assert played["goals_margin_per_game"] == (played["goals_for"] - played["goals_against"]) / 2
    report = json.loads((out / "step1_judged.json").read_text())
    assert report["parent"] == "gauntlet_v1" and [s["seed"] for s in report["sets"]] == [3]
    assert [leaf["checkpoint"] for leaf in read_meta(out / "step1_candidate.safetensors")["averaged_from"]] == [
        str(out / "step1_average.safetensors"),
        "gauntlet_v1",
    ]
    capsys.readouterr()
    assert main([*command, "--steps", "2", *small, *judging]) == 1
    printed = capsys.readouterr().out
    assert "continuing the line" in printed and printed.count("start from") == 1  # step 1 was not trained again
    record = ClimbRecord.load(out)
    assert record is not None and [s.ships for s in record.steps] == [False, False]
    assert "the same command with --steps 3 continues the line" in printed
    assert record.steps[1].start == str(out / "step1_average.safetensors") and record.steps[1].seed == 8
    assert json.loads((out / "step2_judged.json").read_text())["sets"][0]["seed"] == 1003
    assert json.loads((out / "step2_yardstick.json").read_text())["sets"][0]["seed"] == 5  # every step's starts


@pytest.mark.parametrize("ships", [True, False])
def test_the_last_lines_say_what_to_do_next(tmp_path: Path, capsys, monkeypatch, ships: bool) -> None:
    """A line that climbed names its bot to watch, export and climb on from; one that did not names where the next
    step's run would start (step 3's candidate after three steps, not an average)."""
    import rocketrl.eval.climb_cli as climb_cli

    out = tmp_path / "line"

    def three_steps(record: ClimbRecord, folder: Path, max_steps: int, tools: ClimbTools) -> ClimbRecord:
        fake = FakeTools(folder, ships={3} if ships else set())
        done = climb(record, folder, max_steps, fake.tools())
        assert [Path(start).name for start, *_ in fake.trained] == [
            "gauntlet_v1",
            "step1_average.safetensors",
            "step2_candidate.safetensors",
        ]
        return done

    monkeypatch.setattr(climb_cli, "climb", three_steps)
    command = ["climb", "--from", "gauntlet_v1", "--out", str(out), "--timesteps", "1024", "--steps", "3"]
    assert main([*command, "--seeds", "3", "--rule", "every-set", "--field", "none", "--floor", "none"]) == (
        0 if ships else 1
    )
    printed = capsys.readouterr().out
    candidate = out / "step3_candidate.safetensors"
    if ships:
        assert f"the line climbed: {candidate} ships against gauntlet_v1" in printed
        assert f"rocketrl watch --checkpoint {candidate} --opponent gauntlet_v1" in printed
        assert f"rocketrl export --checkpoint {candidate} --out bots/climbed" in printed
        assert f"rocketrl climb --from {candidate} --out {out}_next" in printed
        assert "continues the line" not in printed
    else:
        assert "no candidate of 3 judged step(s) ships against gauntlet_v1" in printed
        assert f"the same command with --steps 4 continues the line: its next run starts from {candidate}" in printed
        assert "rocketrl export" not in printed


def test_a_start_that_names_the_parent_another_way_is_no_start(tmp_path: Path, capsys) -> None:
    """`--start pretrained --from <the shipped bot's gauntlet name>` names one file twice: the line starts from its
    parent as any line does (no start in its settings), so the kept line's settings differ only where they do."""
    newest = gauntlet_bots()[-1]  # the shipped bot, whose file 'pretrained' also names
    line = tmp_path / "line"
    command = [
        "climb",
        "--out",
        str(line),
        "--minutes",
        "1",
        "--from",
        newest,
        "--seeds",
        ",".join(map(str, range(10))),
    ]
    args = build_parser().parse_known_args(command)[0]
    judging = {key: getattr(args, key) for key in JUDGING}
    overrides = ["--run.timesteps", str(10**12), "--run.max-minutes", "1.0"]
    ClimbRecord(newest, overrides, 0, list(range(1, 11)), judging).save(line)  # other --seeds, no start
    assert main([*command, "--start", "pretrained"]) == 2
    assert "other settings (--seeds;" in capsys.readouterr().err  # the start is not among them
    # A start that is another file is one.
    other = tmp_path / "other.safetensors"
    other.write_bytes(b"")
    assert main([*command, "--start", str(other)]) == 2
    assert "other settings (--seeds, --start;" in capsys.readouterr().err


def test_the_judgings_kickoff_jitter_is_not_the_trainings(tmp_path: Path, capsys) -> None:
    """--kickoff-jitter moves the judging's spawns only; the training's kickoffs move with --env.kickoff-jitter, a
    training setting, so a line trained one way is not continued the other."""
    from rocketrl.eval.climb_cli import train_overrides

    line = tmp_path / "line"
    command = ["climb", "--out", str(line), "--minutes", "1", "--seeds", ",".join(map(str, range(10)))]
    command += ["--kickoff-jitter", "100"]
    preset = preset_config_path("league_1v1_next")
    for extra, trained in (([], 0.0), (["--env.kickoff-jitter", "100"], 100.0)):
        args, rest = build_parser().parse_known_args([*command, *extra])
        assert args.kickoff_jitter == 100.0 and rest == extra
        assert load_config(preset, train_overrides(args, rest)).env.kickoff_jitter == trained
    args, rest = build_parser().parse_known_args(command)
    judging = {key: getattr(args, key) for key in JUDGING}
    ClimbRecord("pretrained", train_overrides(args, rest), 0, list(range(10)), judging).save(line)
    assert main([*command, "--env.kickoff-jitter", "100"]) == 2
    assert "other settings (training settings and length;" in capsys.readouterr().err
    assert ClimbRecord.load(line).train_overrides == train_overrides(args, rest)  # the record is left as it was
