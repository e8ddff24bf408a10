"""rocketrl judge: the shipping rule on hand-counted sets, and the command with the games replaced by a stand-in."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import pytest
import torch

import rocketrl.eval.cli  # noqa: F401  binds the real play_match before any test here stands one in for it
import rocketrl.league.match as match
import rocketrl.policy.load as load
from rocketrl.cli import main
from rocketrl.eval.judge import SCRIPTED_FLOOR, SET_SEEDS, FloorResult, compare_field, judge_sets, pass_chance
from rocketrl.eval.judge_cli import field_bots, parse_floor
from rocketrl.infra.checkpoint import file_sha256
from rocketrl.league.match import MatchResult


def _set(wins: int, draws: int, losses: int) -> MatchResult:
    result = MatchResult("candidate", "parent")
    result.wins, result.draws, result.losses = wins, draws, losses
    return result


def test_gauntlet_v14s_five_sets_against_its_parent_ship_it() -> None:
    # the sets that made gauntlet_v14 (docs/results/generations.md): 296 of 500, Wilson 95% 54.8-63.4%
    verdict = judge_sets([_set(w, 0, 100 - w) for w in (55, 64, 58, 56, 63)], SET_SEEDS)
    assert verdict.ships and verdict.reasons == ()
    assert (verdict.wins, verdict.draws, verdict.losses, verdict.num_games) == (296, 0, 204, 500)
    assert verdict.win_rate == pytest.approx(0.592)
    assert round(verdict.win_rate_low, 3) == 0.548 and round(verdict.win_rate_high, 3) == 0.634
    assert "ships" in verdict.summary()


def test_one_lost_set_keeps_the_parent_even_when_the_pool_is_above_even() -> None:
    verdict = judge_sets([_set(70, 0, 30), _set(49, 0, 51), _set(65, 0, 35)], [0, 7, 11])
    assert verdict.win_rate_low > 0.5  # 184 of 300 pooled: clearly above even
    assert not verdict.ships
    assert verdict.reasons == ("seed 7 lost: 49W 0D 51L",)


def test_a_level_set_is_not_a_won_set() -> None:
    verdict = judge_sets([_set(80, 0, 20), _set(45, 10, 45)])  # 125 of 200 pooled: above even
    assert not verdict.ships and verdict.reasons == ("set 2 level: 45W 10D 45L",)


def test_every_set_won_narrowly_is_not_enough_when_the_interval_reaches_even() -> None:
    verdict = judge_sets([_set(51, 0, 49)] * 5, SET_SEEDS)  # 255 of 500: 46.6-55.4%
    assert not verdict.ships
    assert verdict.reasons == ("the pooled interval's low end 46.6% is not above even",)


def test_draws_count_as_half_a_win_and_a_set_is_won_by_more_wins_than_losses() -> None:
    verdict = judge_sets([_set(40, 30, 30)] * 5)  # 40 wins beat 30 losses in each set
    assert verdict.win_rate == pytest.approx(0.55)  # (200 + 150 / 2) / 500
    assert round(verdict.win_rate_low, 3) == 0.506 and verdict.ships


def test_nothing_to_judge_and_unnamed_sets_are_refused() -> None:
    with pytest.raises(ValueError, match="no sets"):
        judge_sets([])
    with pytest.raises(ValueError, match="one seed per set"):
        judge_sets([_set(1, 0, 0)], [0, 7])


def _vs(name_a: str, name_b: str, wins: int, losses: int, draws: int = 0) -> MatchResult:
    result = MatchResult(name_a, name_b)
    result.wins, result.draws, result.losses = wins, draws, losses
    return result


def test_the_field_compares_points_per_game_on_the_same_opponents() -> None:
    mine = [_vs("cand", "v9", 60, 40), _vs("cand", "v10", 70, 30)]
    theirs = [_vs("parent", "v9", 65, 35), _vs("parent", "v10", 74, 24, draws=2)]  # 65 + 74 + 1 of 200
    field = compare_field(mine, theirs)
    assert field.opponents == ("v9", "v10") and field.games == 200
    assert field.candidate_rate == pytest.approx(0.65) and field.parent_rate == pytest.approx(0.70)
    # 1.96 * sqrt((0.65 * 0.35 + 0.70 * 0.30) / 200) = 0.0917 either side of -0.05
    assert field.difference == pytest.approx(-0.05)
    assert field.difference_low == pytest.approx(-0.1417, abs=1e-4) and field.difference_high == pytest.approx(
        0.0417, abs=1e-4
    )
    assert not field.clearly_weaker
    assert judge_sets([_set(60, 0, 40)] * 5, field=field).ships  # level with the parent there: no reason to refuse


def test_a_candidate_clearly_weaker_than_its_parent_against_the_field_does_not_ship() -> None:
    field = compare_field([_vs("cand", "v9", 50, 50)] * 2, [_vs("parent", "v9", 70, 30)] * 2)
    assert field.clearly_weaker  # -20%: 1.96 * sqrt((0.25 + 0.21) / 200) = 9.4% either side
    verdict = judge_sets([_set(65, 0, 35)] * 5, field=field)  # it beats its parent clearly...
    assert not verdict.ships  # ...and has learned to exploit it, not to play better
    assert verdict.reasons == (
        "against the field it scored 50.0% to the parent's 70.0% (difference -29.4% to -10.6%: below zero)",
    )


def test_field_results_that_do_not_pair_up_are_refused() -> None:
    with pytest.raises(ValueError, match="the candidate met"):
        compare_field([_vs("cand", "v9", 1, 0)], [_vs("parent", "v10", 1, 0)])
    with pytest.raises(ValueError, match="3 games of the candidate, 1 of the parent"):
        compare_field([_vs("cand", "v9", 3, 0)], [_vs("parent", "v9", 1, 0)])


def test_the_field_leaves_out_the_judged_bots_however_named() -> None:
    newest = load.gauntlet_bots()[-1]
    bots = field_bots("gauntlet,gauntlet_v1, rule_policy", ("gauntlet_v2", "pretrained"))
    assert bots == [b for b in load.gauntlet_bots() if b not in ("gauntlet_v2", newest)] + ["rule_policy"]
    with pytest.raises(ValueError, match="no bot left besides the candidate and the parent"):
        field_bots("pretrained", (newest, "gauntlet_v1"))


@dataclass
class Games:
    played: list[tuple[str, str, int, int]] = field(default_factory=list)
    """(side A, side B, arena seed, games) of each set."""
    loaded: list[tuple[str, int, bool]] = field(default_factory=list)
    """(spec, seed, greedy) of each policy loaded."""


@pytest.fixture
def games(monkeypatch) -> Games:
    """What the command played and loaded; a set is won 60-40 unless its seed is 7 (lost 45-55)."""
    games = Games()
    played, loaded = games.played, games.loaded
    real_load = load.load_policy

    def fake_play_match(a, b, config, name_a, name_b, device="cpu"):
        played.append((name_a, name_b, config.env.seed, config.num_games))
        result = MatchResult(name_a, name_b)
        result.wins, result.losses = (45, 55) if config.env.seed == 7 else (60, 40)
        if name_b.startswith("gauntlet_v"):  # the field: the parent (random) scores 90 of 100, the candidate 60
            result.wins, result.losses = (90, 10) if name_a == "random" else (60, 40)
        return result

    def spy_load(spec, device="cpu", seed=0, deterministic=False, compile_rule=False):
        loaded.append((spec, seed, deterministic))
        return real_load(spec, device=device, seed=seed, deterministic=deterministic)

    monkeypatch.setattr(match, "play_match", fake_play_match)
    monkeypatch.setattr(load, "load_policy", spy_load)
    return games


def test_the_command_plays_one_set_per_seed_greedily_and_ships_when_every_set_is_won(games, tmp_path, capsys) -> None:
    out = tmp_path / "judged.json"
    args = ["judge", "rule_policy", "--parent", "random", "--seeds", "0,11", "--num-games", "100", "--json", str(out)]
    assert main(args) == 0
    assert games.played == [("rule_policy", "random", 0, 100), ("rule_policy", "random", 11, 100)]
    # each set loads both bots with its own seed, greedy, as `rocketrl eval --seed S --deterministic` does
    assert games.loaded == [(spec, seed, True) for seed in (0, 11) for spec in ("rule_policy", "random")]
    report = json.loads(out.read_text())
    assert [s["seed"] for s in report["sets"]] == [0, 11] and report["sets"][1]["wins"] == 60
    assert report["verdict"]["ships"] is True and report["verdict"]["wins"] == 120
    assert report["settings"]["kickoff_jitter"] == 5.0 and report["settings"]["game_seconds"] == 120.0
    assert "ships (every set won" in capsys.readouterr().out
    assert report["candidate_sha256"] is None  # a scripted bot has no file to name


def test_judging_on_the_cpu_gives_back_the_threads_it_narrowed(games, monkeypatch) -> None:
    # games on the CPU run on one thread; a climb's next run must train with the threads the process had
    monkeypatch.setattr(torch, "set_num_threads", lambda n: threads.append(n))
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2 if not threads else threads[-1])
    threads: list[int] = []
    assert main(["judge", "rule_policy", "--parent", "random", "--seeds", "0", "--device", "cpu"]) == 0
    assert threads[0] == 1 and threads[-1] == 2


def test_the_report_names_the_judged_files_bytes_so_a_copy_of_it_is_the_same_bot(games, tmp_path) -> None:
    out, copy = tmp_path / "judged.json", tmp_path / "copy.safetensors"
    copy.write_bytes((load.GAUNTLET_DIR / "v1.safetensors").read_bytes())
    assert main(["judge", "gauntlet_v1", "--parent", "random", "--seeds", "0", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["candidate_sha256"] == file_sha256(copy)
    assert file_sha256(copy) != file_sha256(load.GAUNTLET_DIR / "v2.safetensors")


def test_the_command_exits_1_and_names_the_lost_set(games, capsys) -> None:
    assert main(["judge", "rule_policy", "--parent", "random"]) == 1
    assert [seed for *_, seed, _ in games.played] == list(SET_SEEDS)
    assert "does not ship (seed 7 lost: 45W 0D 55L)" in capsys.readouterr().out


def test_the_field_is_played_by_both_bots_on_the_first_seed_and_refuses_a_clearly_weaker_candidate(
    games, tmp_path, capsys
) -> None:
    out = tmp_path / "judged.json"
    args = ["judge", "rule_policy", "--parent", "random", "--seeds", "11,0", "--field", "gauntlet_v1,gauntlet_v2",
            "--json", str(out)]  # fmt: skip
    assert main(args) == 1  # every set won, but 60% against the field where the parent scores 90%
    assert games.played[2:] == [
        ("rule_policy", "gauntlet_v1", 11, 100), ("rule_policy", "gauntlet_v2", 11, 100),
        ("random", "gauntlet_v1", 11, 100), ("random", "gauntlet_v2", 11, 100),
    ]  # fmt: skip
    report = json.loads(out.read_text())
    assert report["field"]["seed"] == 11 and report["field"]["opponents"] == ["gauntlet_v1", "gauntlet_v2"]
    assert report["field"]["candidate_rate"] == pytest.approx(0.6) and report["field"]["parent_rate"] == 0.9
    assert report["field"]["games"] == 200 and report["field"]["clearly_weaker"] is True
    assert [m["candidate"]["name_b"] for m in report["field"]["matches"]] == ["gauntlet_v1", "gauntlet_v2"]
    assert report["field"]["matches"][0]["parent"]["wins"] == 90
    assert report["verdict"]["reasons"][0].startswith("against the field it scored 60.0% to the parent's 90.0%")
    assert "field, seed 11: against gauntlet_v1, gauntlet_v2" in capsys.readouterr().out


def test_the_field_on_two_seeds_plays_each_bot_once_per_seed_and_pools_them(games, tmp_path, capsys) -> None:
    out = tmp_path / "judged.json"
    args = ["judge", "rule_policy", "--parent", "random", "--seeds", "11,0,13", "--field", "gauntlet_v1,gauntlet_v2",
            "--field-seeds", "2", "--json", str(out)]  # fmt: skip
    assert main(args) == 1  # the field on the first two seeds, 11 and 0; not on 13
    assert games.played[3:] == [
        ("rule_policy", "gauntlet_v1", 11, 100), ("rule_policy", "gauntlet_v2", 11, 100),
        ("rule_policy", "gauntlet_v1", 0, 100), ("rule_policy", "gauntlet_v2", 0, 100),
        ("random", "gauntlet_v1", 11, 100), ("random", "gauntlet_v2", 11, 100),
        ("random", "gauntlet_v1", 0, 100), ("random", "gauntlet_v2", 0, 100),
    ]  # fmt: skip
    report = json.loads(out.read_text())["field"]
    assert report["opponents"] == ["gauntlet_v1", "gauntlet_v2"] and report["games"] == 400
    assert report["seeds"] == [11, 0] and [m["seed"] for m in report["matches"]] == [11, 11, 0, 0]
    # 240 of 400 against 360 of 400: 1.96 * sqrt((0.6 * 0.4 + 0.9 * 0.1) / 400) = 5.6 points either side of -30
    assert report["candidate_rate"] == pytest.approx(0.6) and report["parent_rate"] == pytest.approx(0.9)
    assert report["difference_high"] == pytest.approx(-0.3 + 0.0563, abs=1e-4)
    assert "field, seeds 11, 0: against gauntlet_v1, gauntlet_v2 (400 games each)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--field-seeds", "2"], "--field-seeds 2: it sets how the --field bots are played; give --field too"),
        (["--field", "gauntlet_v1", "--seeds", "0,7", "--field-seeds", "3"], "--field-seeds 3: only 2 seeds"),
    ],
)
def test_field_seeds_beyond_the_sets_or_without_a_field_are_refused_before_any_game(games, capsys, args, message):
    assert main(["judge", "rule_policy", "--parent", "random", *args]) == 2
    assert message in capsys.readouterr().err
    assert games.played == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gauntlet_v1", "--parent", "gauntlet_v1"], "the candidate is the parent itself"),
        (["pretrained", "--parent", load.gauntlet_bots()[-1]], "the candidate is the parent itself"),
        (["rule_policy", "--seeds", "0,x"], "--seeds '0,x': give comma-separated integers"),
        (["rule_policy", "--seeds", "0,7,0"], "a seed given twice"),
        (["rule_policy", "--kickoff-jitter", "500"], "--kickoff-jitter 500: must lie in"),
    ],
)
def test_bad_input_is_refused_by_name_before_any_game(games, capsys, args, message) -> None:
    assert main(["judge", *args]) == 2
    assert message in capsys.readouterr().err
    assert games.played == []


def test_the_pooled_rule_ships_on_1000_games_above_even_with_sets_lost_when_level_on_the_field() -> None:
    # gen17's candidate against gauntlet_v16 (docs/results/generations.md): ten sets, 563 of 1,000, three sets not won
    counts = [(62, 38), (47, 53), (61, 39), (66, 34), (58, 42), (62, 38), (61, 39), (46, 54), (52, 48), (48, 52)]
    sets = [_set(w, 0, lost) for w, lost in counts]
    field = compare_field([_vs("cand", "v15", 62, 38)], [_vs("parent", "v15", 59, 41)])
    every_set = judge_sets(sets, field=field)
    assert not every_set.ships and len(every_set.reasons) == 3 and every_set.rule == "every-set"
    pooled = judge_sets(sets, field=field, rule="pooled")
    assert pooled.ships and pooled.reasons == () and pooled.rule == "pooled"
    assert pooled.num_games == 1000 and round(pooled.win_rate_low, 3) == 0.532  # Wilson 95%: 53.2-59.3%
    assert "ships (pooled rule" in pooled.summary() and pooled.to_dict()["rule"] == "pooled"


def test_the_pooled_rule_asks_1000_games_the_field_and_no_step_back_there() -> None:
    ahead = compare_field([_vs("cand", "v15", 60, 40)], [_vs("parent", "v15", 59, 41)])
    behind = compare_field([_vs("cand", "v15", 58, 42)], [_vs("parent", "v15", 59, 41)])
    assert not behind.clearly_weaker  # -1 point of 100 games: the interval reaches far above zero...
    verdict = judge_sets([_set(60, 0, 40)] * 10, field=behind, rule="pooled")
    assert verdict.reasons == ("against the field it scored 58.0% to the parent's 59.0%: behind it (-1.0%)",)
    verdict = judge_sets([_set(60, 0, 40)] * 9, field=ahead, rule="pooled")  # 900 games, clearly above even
    assert verdict.reasons == ("the pooled rule needs 1000 games against the parent, 900 were played",)
    verdict = judge_sets([_set(60, 0, 40)] * 10, rule="pooled")
    assert verdict.reasons == ("the pooled rule needs the field (--field): it does not ask every set, so it asks that",)
    verdict = judge_sets([_set(52, 0, 48)] * 10, field=ahead, rule="pooled")  # 520 of 1,000: 48.9-55.1%
    assert verdict.reasons == ("the pooled interval's low end 48.9% is not above even",)
    with pytest.raises(ValueError, match="rule 'best-of' is not one of every-set, pooled"):
        judge_sets([_set(60, 0, 40)], rule="best-of")


def test_the_command_judges_by_the_pooled_rule_when_asked(games, tmp_path, capsys) -> None:
    out = tmp_path / "judged.json"
    seeds = "7,41,43,47,53,59,61,67,71,73"  # seed 7 is lost 45-55 by the stand-in: the pool still ships
    args = ["judge", "rule_policy", "--parent", "random", "--rule", "pooled", "--seeds", seeds,
            "--field", "gauntlet_v1,gauntlet_v2", "--json", str(out)]  # fmt: skip
    assert main(args) == 1
    report = json.loads(out.read_text())
    assert report["rule"] == "pooled" and report["verdict"]["rule"] == "pooled"
    assert report["verdict"]["wins"] == 45 + 9 * 60 and len(report["sets"]) == 10
    # the lost set is no reason under this rule; the field is: the stand-in's parent scores 90 of 100 there, the
    # candidate 60
    assert len(report["verdict"]["reasons"]) == 1
    assert report["verdict"]["reasons"][0].startswith("against the field it scored 60.0% to the parent's 90.0%")
    assert "seed 7 lost" not in capsys.readouterr().out


def test_the_chance_each_rule_passes_a_bot_as_the_docs_table_gives_it() -> None:
    # hand-checked edges: one set of 100 at 50% is won with 51 or more, 46.0% (C(100,50) / 2^100 = 7.96% level)
    assert pass_chance(1.0) == 1.0 and pass_chance(0.0) == 0.0
    # one set alone must also pool above even: 60 of 100 (50.2-69.1%) is the first count whose Wilson low end passes 50%
    assert pass_chance(0.5, num_sets=1) == pytest.approx(sum(math.comb(100, k) for k in range(60, 101)) / 2**100)
    assert pass_chance(0.9, rule="pooled", num_sets=9) == 0.0  # 900 games: too few for the pooled rule
    # docs/results/generations.md, "Which rule ships"
    table = {0.5: (0.010, 0.027), 0.54: (0.22, 0.73), 0.56: (0.47, 0.97), 0.58: (0.71, 0.999)}
    for rate, (every_set, pooled) in table.items():
        assert round(pass_chance(rate), 3 if rate == 0.5 else 2) == every_set
        assert round(pass_chance(rate, rule="pooled", num_sets=10), 3 if rate in (0.5, 0.58) else 2) == pooled
    with pytest.raises(ValueError, match="true_rate 1.5 is not a probability"):
        pass_chance(1.5)
    with pytest.raises(ValueError, match="rule 'any' is not one of"):
        pass_chance(0.5, rule="any")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rule", "pooled", "--seeds", ",".join(map(str, range(10)))], "--rule pooled: give --field BOTS too"),
        (["--rule", "pooled", "--field", "gauntlet_v1"], "--rule pooled: 5 sets of 100 games; it needs 1000"),
    ],
)
def test_the_pooled_rule_refuses_too_few_games_or_no_field_before_any_game(games, capsys, args, message) -> None:
    assert main(["judge", "rule_policy", "--parent", "random", *args]) == 2
    assert message in capsys.readouterr().err
    assert games.played == []


def test_a_floor_counts_wins_only_and_refuses_a_candidate_under_it_by_name() -> None:
    # gauntlet_v24 against ball_chaser (docs/league_gen33_line_average_gauntlet_eval.json): 96 of 100
    assert not FloorResult("ball_chaser", 96, 0, 4, 0.97).met and FloorResult("ball_chaser", 97, 0, 3, 0.97).met
    assert FloorResult("shadow_goalie", 90, 0, 10, 0.9).met and not FloorResult("shadow_goalie", 89, 1, 10, 0.9).met
    assert not FloorResult("rule_policy", 0, 0, 0, 0.5).met  # no games: nothing shown
    assert FloorResult("rule_policy", 50, 0, 50, 0.5).met  # 0.5 * 100 is 50 wins exactly, not 51 by rounding
    ahead = compare_field([_vs("cand", "v15", 62, 38)], [_vs("parent", "v15", 59, 41)])
    floor = [FloorResult("rule_policy", 100, 0, 0, 0.97), FloorResult("ball_chaser", 96, 0, 4, 0.97)]
    verdict = judge_sets([_set(60, 0, 40)] * 10, field=ahead, rule="pooled", floor=floor)
    assert verdict.reasons == ("against ball_chaser it won 96 of 100, under the floor of 97%",) and not verdict.ships
    passed = judge_sets([_set(60, 0, 40)] * 10, field=ahead, rule="pooled", floor=floor[:1])
    assert passed.ships and passed.floor == ("rule_policy",) and passed.to_dict()["floor"] == ["rule_policy"]
    assert passed.summary().endswith("not behind the parent on the field, the floor met against rule_policy)")
    assert judge_sets([_set(60, 0, 40)] * 5, floor=floor).reasons == verdict.reasons  # the every-set rule asks it too


def test_floor_text_reads_scripted_and_bot_share_pairs_and_refuses_the_rest_by_name() -> None:
    assert parse_floor("scripted") == SCRIPTED_FLOOR == {"rule_policy": 0.97, "shadow_goalie": 0.9, "ball_chaser": 0.9}
    assert parse_floor("scripted, ball_chaser=0.99") == SCRIPTED_FLOOR | {"ball_chaser": 0.99}
    assert parse_floor("gauntlet_v1=0.8") == {"gauntlet_v1": 0.8}
    for text in ("ball_chaser", "ball_chaser=1.5", "ball_chaser=0", "ball_chaser=x", "=0.9"):
        with pytest.raises(ValueError, match="give BOT=SHARE with a share of the games in"):
            parse_floor(text)
    with pytest.raises(ValueError, match="name at least one bot"):
        parse_floor(" , ")


def test_the_command_plays_the_floor_first_on_the_first_seed_and_refuses_a_candidate_under_it(
    games, tmp_path, capsys
) -> None:
    out = tmp_path / "judged.json"
    args = ["judge", "rule_policy", "--parent", "random", "--seeds", "11,0", "--floor",
            "shadow_goalie=0.6,ball_chaser=0.61", "--json", str(out)]  # fmt: skip
    assert main(args) == 1  # every set won 60-40; the stand-in wins 60 of 100 against each floor bot too
    assert games.played[:2] == [("rule_policy", "shadow_goalie", 11, 100), ("rule_policy", "ball_chaser", 11, 100)]
    assert [p[1] for p in games.played[2:]] == ["random", "random"]
    report = json.loads(out.read_text())
    assert report["floor"]["seed"] == 11 and [b["met"] for b in report["floor"]["bots"]] == [True, False]
    assert report["floor"]["bots"][1] == {"opponent": "ball_chaser", "wins": 60, "draws": 0, "losses": 40,
                                          "num_games": 100, "required": 0.61, "met": False}  # fmt: skip
    assert report["verdict"]["reasons"] == ["against ball_chaser it won 60 of 100, under the floor of 61%"]
    printed = capsys.readouterr().out
    assert "floor, seed 11: shadow_goalie: won 60 of 100, floor 60% met" in printed
    assert main([*args[:7], "shadow_goalie=0.6"]) == 0  # the floor met, every set won: it ships


@pytest.mark.parametrize("floor", ["ball_chaser", "ball_chaser=97", "scripted,rule_policy=-1"])
def test_a_bad_floor_is_refused_before_any_game(games, capsys, floor) -> None:
    assert main(["judge", "rule_policy", "--parent", "random", "--floor", floor]) == 2
    assert "--floor" in capsys.readouterr().err
    assert games.played == []


def test_a_floor_bot_that_does_not_load_is_refused_before_the_long_games(games, capsys) -> None:
    assert main(["judge", "rule_policy", "--parent", "random", "--floor", "no_such_bot=0.9"]) == 2
    assert "no_such_bot" in capsys.readouterr().err
    assert games.played == []
