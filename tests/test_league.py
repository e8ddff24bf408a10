"""League: arena plans, matchmaking, curriculum transitions (by steps, by gate, across a resume),
evaluation output and a short league run as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from rocketrl.config import load_config
from rocketrl.env.actions import LookupTableAction
from rocketrl.infra.checkpoint import CheckpointManager, read_meta
from rocketrl.league.config import LeagueConfig
from rocketrl.league.curriculum import Curriculum, Stage, load_curriculum
from rocketrl.league.league import LEARNER, League
from rocketrl.league.match import MatchConfig, MatchResult, play_match
from rocketrl.league.plan import ArenaPlan, allocate_arenas
from rocketrl.policy.actor_critic import ActorCritic, PolicyActor
from rocketrl.policy.random_policy import RandomPolicy
from rocketrl.ppo.trainer import Trainer

PACKAGED = Path(__file__).resolve().parent.parent / "rocketrl" / "configs"


# ------------------------------------------------------------------------------------------ plans
def test_allocate_arenas_follows_shares_and_sums_to_total() -> None:
    assert allocate_arenas(10, {"selfplay": 0.5, "checkpoint": 0.3, "rule": 0.2}) == {
        "selfplay": 5,
        "checkpoint": 3,
        "rule": 2,
    }
    counts = allocate_arenas(7, {"selfplay": 1, "rule": 1, "checkpoint": 1})
    assert sum(counts.values()) == 7 and max(counts.values()) - min(counts.values()) <= 1


def test_arena_plan_learner_plays_each_side_equally_and_opponents_take_the_rest() -> None:
    plan = ArenaPlan(8, 1, 2, {"selfplay": 0.5, "checkpoint": 0.25, "rule": 0.25}, groups=2)
    n = 3
    assert plan.counts == {"selfplay": 4, "checkpoint": 2, "rule": 2}
    # Selfplay arenas: every car is the learner's.
    assert plan.learner_mask[:4].all()
    # Other arenas: blue (car 0) in even arenas, orange (cars 1, 2) in odd arenas.
    assert plan.learner_mask[4].tolist() == [True, False, False]
    assert plan.learner_mask[5].tolist() == [False, True, True]
    opponent_agents = torch.cat([s.agents for s in plan.slots])
    learner = set(plan.learner_index.tolist())
    assert learner.isdisjoint(opponent_agents.tolist())
    assert learner | set(opponent_agents.tolist()) == set(range(8 * n))
    assert [s.kind for s in plan.slots] == ["checkpoint", "checkpoint", "rule"]
    assert torch.equal(plan.learner_arena, plan.learner_index // n)


def test_learner_outcomes_score_from_the_learners_side() -> None:
    plan = ArenaPlan(4, 1, 1, {"selfplay": 0.5, "rule": 0.5})  # arenas 2 (learner blue) and 3 (orange) vs rule
    episodes = {
        "arena": torch.tensor([0, 2, 3]),
        "goals_blue": torch.tensor([1, 1, 1]),
        "goals_orange": torch.tensor([0, 0, 0]),
    }
    assert plan.learner_outcomes(episodes) == [(2, 1.0), (3, 0.0)]


# ------------------------------------------------------------------------------------------ matchmaking
def _league_with_snapshots(tmp_path: Path, elos: list[float], floor: float) -> League:
    league = League(LeagueConfig(old_floor=floor), tmp_path, torch.device("cpu"))
    for i, elo in enumerate(elos):
        name = f"snapshot_{i}"
        league.snapshots.append({"name": name, "step": i, "path": f"{name}.safetensors"})
        league.table.add(name, elo=elo)
    league.table[LEARNER].elo = 1500.0
    return league


def test_matchmaking_prefers_opponents_near_even_odds(tmp_path: Path) -> None:
    league = _league_with_snapshots(tmp_path, [1000.0, 1500.0, 1700.0], floor=0.0)
    names, probs = league.pick_probabilities()
    p = np.array([1 / (1 + 10 ** ((r - 1500) / 400)) for r in (1000.0, 1500.0, 1700.0)])
    expected = p * (1 - p) / (p * (1 - p)).sum()
    np.testing.assert_allclose(probs, expected)
    assert names[int(np.argmax(probs))] == "snapshot_1"
    # Sampled frequencies follow the probabilities.
    draws = league.picks.choice(len(names), size=20_000, p=probs)
    np.testing.assert_allclose(np.bincount(draws, minlength=3) / 20_000, probs, atol=0.015)


def test_matchmaking_floor_keeps_old_versions_in_play(tmp_path: Path) -> None:
    league = _league_with_snapshots(tmp_path, [200.0, 1500.0], floor=0.2)
    _, probs = league.pick_probabilities()
    assert probs[0] >= 0.2 / 2 - 1e-12  # the floor share, uniform over the pool
    assert probs.sum() == pytest.approx(1.0)


def test_hard_matchmaking_prefers_the_opponents_the_learner_loses_to(tmp_path: Path) -> None:
    """Learner at 1500 against snapshots at 1000, 1500, 1700: p = 0.947, 0.5, 0.240 (Elo). 'close' weighs
    p(1-p) = 0.050, 0.25, 0.182 and picks the even one most; 'hard' weighs (1-p)^2 = 0.0028, 0.25, 0.577 and picks
    the one that beats the learner most; the uniform floor is mixed in the same way for both."""
    elos = [1000.0, 1500.0, 1700.0]
    p = np.array([1 / (1 + 10 ** ((r - 1500) / 400)) for r in elos])
    np.testing.assert_allclose(p, [0.9468, 0.5, 0.2403], atol=5e-5)
    league = _league_with_snapshots(tmp_path, elos, floor=0.25)
    league.config.matchmaking = "hard"
    names, probs = league.pick_probabilities()
    hard = (1 - p) ** 2
    np.testing.assert_allclose(probs, 0.75 * hard / hard.sum() + 0.25 / 3)
    np.testing.assert_allclose(probs, [0.0859, 0.3092, 0.6049], atol=5e-4)
    assert names[int(np.argmax(probs))] == "snapshot_2"
    league.config.matchmaking = "close"
    _, close = league.pick_probabilities()
    assert int(np.argmax(close)) == 1 and close[2] < probs[2]


def test_matchmaking_setting_is_checked_and_set_from_the_command_line() -> None:
    with pytest.raises(ValueError, match=r"league.matchmaking='fair': must be one of close, hard"):
        LeagueConfig(matchmaking="fair")
    assert LeagueConfig().matchmaking == "close"
    assert load_config(None, ["--league.matchmaking", "hard"]).league.matchmaking == "hard"


def test_matchmaking_pool_size_limits_to_recent_snapshots(tmp_path: Path) -> None:
    league = _league_with_snapshots(tmp_path, [1500.0] * 5, floor=0.2)
    league.config.pool_size = 2
    names, _ = league.pick_probabilities()
    assert names == ["snapshot_3", "snapshot_4"]


def test_rated_training_games_steer_matchmaking_off_a_beaten_snapshot(tmp_path: Path) -> None:
    """Two snapshots start at the learner's rating; the learner wins every training game against the first
    (arena 0, learner blue) and draws against the second (arena 1, learner orange). Rated, the beaten one falls
    below the learner and is picked less; unrated, the ratings and the picks stay where they were."""
    plan = ArenaPlan(2, 1, 1, {"checkpoint": 1.0}, groups=2)
    episodes = {"arena": torch.tensor([0, 1] * 5), "goals_blue": torch.tensor([1, 0] * 5),
                "goals_orange": torch.tensor([0, 0] * 5)}  # fmt: skip
    for rate in (False, True):
        league = _league_with_snapshots(tmp_path, [1500.0, 1500.0], floor=0.0)
        league.config.rate_training_games = rate
        plan.slots[0].name, plan.slots[1].name = "snapshot_0", "snapshot_1"
        league.record_training_outcomes(plan, episodes)
        assert league.training_results == {"snapshot_0": [5, 0, 0], "snapshot_1": [0, 5, 0]}
        _, probs = league.pick_probabilities()
        if rate:
            assert league.table["snapshot_0"].elo < 1500.0 < league.table[LEARNER].elo
            assert league.table["snapshot_0"].games == 5 and league.table["snapshot_1"].draws == 5
            assert probs[0] < probs[1]
        else:
            assert league.table["snapshot_0"].elo == 1500.0 == league.table[LEARNER].elo
            np.testing.assert_allclose(probs, [0.5, 0.5])


def test_rated_training_counts_from_workers(tmp_path: Path) -> None:
    league = _league_with_snapshots(tmp_path, [1500.0], floor=0.0)
    league.rate_training_counts("snapshot_0", 3, 1, 0)
    assert league.table["snapshot_0"].games == 0  # off by default
    league.config.rate_training_games = True
    league.rate_training_counts("snapshot_0", 3, 1, 0)
    league.rate_training_counts(LEARNER, 2, 0, 0)  # self-play is never rated
    assert (league.table["snapshot_0"].losses, league.table["snapshot_0"].draws) == (3, 1)
    assert league.table[LEARNER].games == 4


def test_greedy_groups_meet_their_snapshot_playing_its_most_likely_action(tmp_path: Path) -> None:
    """Two snapshot groups, one greedy: the first group's opponents play the network's argmax action on every
    call (as in `rocketrl eval --deterministic` and the real game), the second's sample from the same network."""
    torch.manual_seed(0)
    model = ActorCritic(12, 90, discrete=True, actor_hidden=[16], critic_hidden=[16])
    league = _league_with_snapshots(tmp_path, [1500.0], floor=0.0)
    league.config.greedy_groups = 1
    league._snapshot_policies["snapshot_0"] = PolicyActor(model)
    plan = ArenaPlan(64, 1, 1, {"checkpoint": 1.0}, groups=2)
    league.assign_opponents(plan, ["snapshot_0", "snapshot_0"])
    greedy, sampling = plan.slots
    obs = torch.randn(128, 12)
    with torch.no_grad():
        best = model.act(obs, deterministic=True)[0]  # the argmax of the network's action distribution
    table = LookupTableAction(torch.device("cpu")).table
    for _ in range(3):
        assert torch.equal(greedy.driver.act(obs[greedy.agents]), table[best[greedy.agents]])
    drawn = torch.stack([sampling.driver.act(obs[sampling.agents]) for _ in range(3)])
    assert not torch.equal(drawn[0], table[best[sampling.agents]]) and not torch.equal(drawn[0], drawn[1])
    league.config.greedy_groups = 0  # the default: every group samples
    league.assign_opponents(plan, ["snapshot_0", "snapshot_0"])
    assert not any(slot.driver.policy.deterministic for slot in plan.slots)


def test_greedy_groups_are_checked_and_set_from_the_command_line() -> None:
    with pytest.raises(ValueError, match=r"league.greedy_groups=3: must lie in \[0, league.opponent_groups=2\]"):
        LeagueConfig(greedy_groups=3)
    assert LeagueConfig().greedy_groups == 0
    assert load_config(None, ["--league.greedy-groups", "1"]).league.greedy_groups == 1


# ------------------------------------------------------------------------------------------ curriculum
def test_curriculum_advances_by_steps_and_by_gate() -> None:
    stages = [
        Stage("a", 1, 1, until_steps=100),
        Stage("b", 1, 2, {"checkpoint": 1.0}, until_steps=1000, gate={"win_rate_vs_rule": 0.7}),
        Stage("c", 2, 2),
    ]
    cur = Curriculum(stages)
    assert cur.maybe_advance(99, {}) is None
    assert cur.maybe_advance(100, {}) == "steps" and cur.stage.name == "b"
    assert cur.maybe_advance(200, {"win_rate_vs_rule": 0.6}) is None
    assert cur.maybe_advance(300, {"win_rate_vs_rule": 0.75}) == "gate" and cur.stage.name == "c"
    assert cur.maybe_advance(10**9, {"win_rate_vs_rule": 1.0}) is None  # the last stage never ends
    assert [h["reason"] for h in cur.history] == ["steps", "gate"]


def test_packaged_curricula_load() -> None:
    three = load_curriculum(PACKAGED / "curriculum.yaml")
    assert [(s.blue_size, s.orange_size) for s in three.stages] == [(1, 1), (1, 2), (2, 2)]
    assert [s.until_steps for s in three.stages] == [2_000_000, 3_500_000, None]
    assert three.stages[1].opponents == {"checkpoint": 1.0}
    five = load_curriculum(PACKAGED / "curriculum_5stage.yaml")
    assert [(s.blue_size, s.orange_size) for s in five.stages] == [(1, 1), (1, 2), (2, 2), (2, 3), (3, 3)]


def test_bad_curriculum_names_the_stage_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("stages:\n  - name: x\n    blue_size: 1\n    until_step: 5\n")
    with pytest.raises(ValueError, match=r"stages\[0\]\.until_step is not a stage field"):
        load_curriculum(bad)
    bad.write_text("stages:\n  - name: x\n  - name: y\n")
    with pytest.raises(ValueError, match="never ends"):
        load_curriculum(bad)


def _curriculum_config(tmp_path: Path, timesteps: int, name: str, resume: str | None = None):
    path = tmp_path / "cur.yaml"
    path.write_text(
        "stages:\n"
        "  - {name: one, blue_size: 1, orange_size: 1, until_steps: 512}\n"
        "  - {name: two, blue_size: 1, orange_size: 2, opponents: {checkpoint: 1.0}}\n"
    )
    overrides = [
        "--env.num-arenas", "4", "--env.stepping", "serial", "--ppo.rollout-steps", "32", "--ppo.minibatches", "2",
        "--ppo.epochs", "1", "--model.actor-hidden", "[32]", "--model.critic-hidden", "[32]",
        "--run.timesteps", str(timesteps), "--run.checkpoint-interval", "10000", "--run.logdir", str(tmp_path),
        "--run.name", name, "--league.curriculum", str(path), "--league.snapshot-interval", "256",
    ]  # fmt: skip
    if resume:
        overrides += ["--run.resume", resume]
    return load_config(None, overrides)


def test_curriculum_changes_team_sizes_and_survives_resume(tmp_path: Path) -> None:
    trainer = Trainer(_curriculum_config(tmp_path, 768, "cur"))
    try:
        trainer.verify()
        trainer.learn()
        assert trainer.league is not None and trainer.league.curriculum is not None
        assert trainer.league.curriculum.stage.name == "two"
        assert (trainer.env.config.blue_size, trainer.env.config.orange_size) == (1, 2)
        # 2 arenas with the learner on blue (1 car) and 2 on orange (2 cars) -> 6 learner agents.
        assert trainer.num_agents == 6 and trainer.storage.obs.shape[1] == 6
        history = trainer.league.curriculum.history
        assert history and history[0]["to"] == "two" and history[0]["reason"] == "steps"
        snapshots = len(trainer.league.snapshots)
        latest = trainer.checkpoints.latest()
    finally:
        trainer.close()
    resumed = Trainer(_curriculum_config(tmp_path, 1024, "cur", resume=str(latest)))
    try:
        resumed.resume(latest)
        assert resumed.league.curriculum.stage.name == "two"
        assert (resumed.env.config.blue_size, resumed.env.config.orange_size) == (1, 2)
        assert len(resumed.league.snapshots) == snapshots
        resumed.learn()
        assert resumed.counters.global_step >= 1024
    finally:
        resumed.close()


# ------------------------------------------------------------------------------------------ evaluation
def test_match_result_fields_and_interval() -> None:
    result = MatchResult("a", "b", wins=7, draws=0, losses=3)
    data = result.to_dict()
    for key in ("wins", "draws", "losses", "win_rate", "win_rate_low", "win_rate_high", "goals_for", "touches_for"):
        assert key in data
    assert data["win_rate"] == pytest.approx(0.7)
    assert data["win_rate_low"] == pytest.approx(0.397, abs=1e-3)
    assert data["win_rate_high"] == pytest.approx(0.892, abs=1e-3)


def test_play_match_plays_every_game_with_sides_alternating() -> None:
    config = MatchConfig.games(num_games=5, game_seconds=4.0, max_overtime_seconds=2.0, num_arenas=2, stepping="serial")
    result = play_match(RandomPolicy(1), RandomPolicy(2), config, "x", "y")
    assert result.num_games == 5 and [g.index for g in result.games] == list(range(5))
    # Arena 0 plays games 0, 2, 4 starting on blue; arena 1 plays 1, 3 starting on orange.
    assert [g.a_team for g in result.games] == [0, 1, 1, 0, 0]
    assert result.goals_for == sum(g.goals_a for g in result.games)
    for game in result.games:
        assert game.seconds <= 6.0 + 1e-6
        assert game.overtime == (game.seconds > 4.0 + 1e-6)


# ------------------------------------------------------------------------------------------ end to end
def test_short_league_run_and_eval_as_subprocesses(tmp_path: Path) -> None:
    train = [
        sys.executable, "-m", "rocketrl.cli", "train", "--timesteps", "1536", "--logdir", str(tmp_path),
        "--name", "lg", "--ascii", "--env.num-arenas", "4", "--env.stepping", "serial",
        "--ppo.rollout-steps", "64", "--model.actor-hidden", "[32]", "--model.critic-hidden", "[32]",
        "--league.opponents", "{selfplay: 0.5, checkpoint: 0.25, rule: 0.25}", "--league.snapshot-interval", "512",
        "--league.eval-interval", "768", "--league.eval-games", "2", "--league.eval-game-seconds", "4",
        "--league.eval-kickoff-jitter", "5",
    ]  # fmt: skip
    done = subprocess.run(train, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "checkpoint 1, rule 1" in done.stdout
    run = tmp_path / "lg"
    league = json.loads((run / "league.json").read_text())
    names = [p["name"] for p in league["ratings"]["players"]]
    assert "learner" in names and "rule_policy" in names
    assert len(league["snapshots"]) >= 3 and league["last_eval"]["results"]["rule_policy"]["num_games"] == 2
    assert 0.0 <= league["measures"]["win_rate_vs_rule"] <= 1.0
    checkpoint = sorted((run / "checkpoints").glob("*.safetensors"))[-1]
    evaluate = [
        sys.executable, "-m", "rocketrl.cli", "eval", "--checkpoint", str(checkpoint), "--opponents", "rule_policy",
        "--num-games", "2", "--game-seconds", "4", "--max-overtime-seconds", "2", "--workers", "1",
        "--deterministic", "--kickoff-jitter", "5", "--json", str(tmp_path / "eval.json"),
    ]  # fmt: skip
    done = subprocess.run(evaluate, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "eval.json").read_text())
    (result,) = report["results"]
    assert result["num_games"] == 2 and result["name_b"] == "rule_policy"
    assert "rule_policy" in report["ratings"] and report["ratings"]["rule_policy"]["elo"] == 1500.0
    assert report["machine"].endswith(f"{os.cpu_count()} cores")  # every result names the CPU it was measured on


def test_top_return_episodes_and_evaluation_games_are_saved_as_replays(tmp_path: Path) -> None:
    from rocketrl.league.replay import load_replay

    cfg = load_config(
        None,
        [
            "--env.num-arenas", "4", "--env.stepping", "serial", "--env.episode-seconds", "3",
            "--ppo.rollout-steps", "32", "--ppo.minibatches", "2", "--ppo.epochs", "1",
            "--model.actor-hidden", "[32]", "--model.critic-hidden", "[32]", "--run.timesteps", "512",
            "--run.logdir", str(tmp_path), "--run.name", "rp", "--league.replay-top", "3",
            "--league.opponents", "{selfplay: 0.5, rule: 0.5}",
        ],
    )  # fmt: skip
    trainer = Trainer(cfg)
    try:
        trainer.learn()
    finally:
        trainer.close()
    top = tmp_path / "rp" / "replays" / "top" / "1v1"
    index = json.loads((top / "index.json").read_text())
    assert 1 <= len(index) <= 3
    assert [e["return"] for e in index] == sorted((e["return"] for e in index), reverse=True)
    assert sorted(p.name for p in top.glob("*.safetensors")) == sorted(e["file"] for e in index)
    replay = load_replay(top / index[0]["file"])
    # 3 s episodes at 15 steps per second: 45 steps from the kickoff/reset state on, then the state the
    # episode ended in, with zero controls.
    assert index[0]["steps"] == 45 and replay.num_steps == 46
    assert (replay.controls[-1] == 0).all() and (replay.controls[:-1] != 0).any()
    assert replay.meta["episode_return"] == pytest.approx(index[0]["return"])

    match = MatchConfig.games(num_games=2, game_seconds=2.0, num_arenas=2, stepping="serial", overtime=False)
    match.replay_games, match.replay_dir = "all", str(tmp_path / "eval")
    play_match(RandomPolicy(0), RandomPolicy(1), match, "x", "y")
    games = sorted((tmp_path / "eval").glob("game_*.safetensors"))
    assert [g.name for g in games] == ["game_0000.safetensors", "game_0001.safetensors"]
    assert load_replay(games[1]).meta["blue_policy"] == "y"  # game 1: A plays orange
    assert load_replay(games[0]).num_steps == 30 + 1  # 2 s of steps, then the final whistle's state


def test_a_reused_env_replays_the_same_match_for_the_same_seed(tmp_path: Path) -> None:
    """League evaluations reuse one env: each match reseeds it, so its (jittered) kickoffs depend on the
    match's seed only, not on what the env played before (and a resumed run evaluates as a straight one)."""
    from rocketrl.env.batched import BatchedEnv
    from rocketrl.league.match import game_env_config
    from rocketrl.league.replay import load_replay
    from rocketrl.policy.rule import RulePolicy

    env = BatchedEnv(game_env_config(2, 1, 1, stepping="serial", seed=3, kickoff_jitter=5.0))
    try:
        balls = []
        for run in ("first", "other", "again"):
            seed = 11 if run != "other" else 12
            match = MatchConfig.games(num_games=2, game_seconds=3.0, num_arenas=2, overtime=False, seed=seed)
            match.replay_games, match.replay_dir = "all", str(tmp_path / run)
            play_match(RulePolicy(), RulePolicy(), match, "a", "b", env=env)
            balls.append(torch.stack([load_replay(p).ball_pos for p in sorted((tmp_path / run).glob("*"))]))
    finally:
        env.close()
    assert torch.equal(balls[0], balls[2])
    assert not torch.equal(balls[0], balls[1])


def test_game_replays_hold_every_goal_then_the_kickoff(tmp_path: Path) -> None:
    """Each goal of a game is a frame with its goal event and the new score, followed by the kickoff."""
    from rocketrl.league.replay import load_replay
    from rocketrl.policy.rule import RulePolicy

    match = MatchConfig.games(num_games=2, game_seconds=30.0, num_arenas=2, stepping="serial", overtime=False)
    match.replay_games, match.replay_dir = "all", str(tmp_path)
    result = play_match(RulePolicy(seed=0), RandomPolicy(1), match, "rule", "random")
    goals = result.goals_for + result.goals_against
    assert goals >= 2, "RulePolicy should score on a random policy within 30 s"
    seen = 0
    for path in sorted(tmp_path.glob("game_*.safetensors")):
        replay = load_replay(path)
        scored = torch.nonzero(replay.goal >= 0).flatten().tolist()
        seen += len(scored)
        assert replay.num_steps == 450 + len(scored) + 1  # 30 s of steps, each goal's frame, the final state
        for t in scored:
            team = int(replay.goal[t])
            score = replay.blue_score if team == 0 else replay.orange_score
            assert score[t] == score[t - 1] + 1, "the goal frame carries the new score"
            assert (replay.controls[t] == 0).all()
            assert replay.ball_pos[t + 1, :2].abs().max() < 1e-3, "a kickoff follows the goal"
        assert replay.blue_score[-1] + replay.orange_score[-1] == len(scored)
    assert seen == goals


def tiny_run(logdir: Path) -> list[str]:
    """Overrides of a tiny in-process run: 2 serial arenas, 128 agent-steps per update, one small update."""
    return [
        "--env.num-arenas", "2", "--env.stepping", "serial", "--ppo.rollout-steps", "32", "--ppo.minibatches", "1",
        "--ppo.epochs", "1", "--model.actor-hidden", "[16]", "--model.critic-hidden", "[16]",
        "--run.logdir", str(logdir),
    ]  # fmt: skip


@pytest.mark.parametrize("deterministic", [True, False])
def test_league_evaluation_plays_the_learner_as_configured(tmp_path: Path, monkeypatch, deterministic: bool) -> None:
    seen: list[bool] = []
    monkeypatch.setattr(League, "evaluate", lambda self, learner, env_config, step: seen.append(learner.deterministic))
    overrides = tiny_run(tmp_path) + [
        "--run.timesteps", "256", "--run.checkpoint-interval", "10000",
        "--league.eval-interval", "128", "--league.eval-deterministic", str(deterministic).lower(),
    ]  # fmt: skip
    trainer = Trainer(load_config(None, overrides))
    try:
        trainer.learn()
    finally:
        trainer.close()
    assert seen and all(d is deterministic for d in seen)


def test_checkpoints_ranked_by_win_rate_vs_rule_keep_the_evaluated_best(tmp_path: Path, monkeypatch) -> None:
    rates = iter([0.25, 0.75])

    def fake_evaluate(self, learner, env_config, step):
        self.measures = {"win_rate_vs_rule": next(rates), "elo": 1500.0}
        self.last_eval = {"step": step, "results": {}}

    saved: list[tuple[int, float | None]] = []
    original_save = CheckpointManager.save

    def recording_save(self, step, state, meta=None, score=None):
        saved.append((step, score))
        return original_save(self, step, state, meta=meta, score=score)

    monkeypatch.setattr(League, "evaluate", fake_evaluate)
    monkeypatch.setattr(CheckpointManager, "save", recording_save)
    overrides = tiny_run(tmp_path) + [
        "--run.timesteps", "1152", "--run.checkpoint-interval", "256",
        "--run.keep-best", "1", "--run.best-by", "win_rate_vs_rule", "--league.eval-interval", "512",
    ]  # fmt: skip
    trainer = Trainer(load_config(None, overrides))
    try:
        trainer.learn()
    finally:
        trainer.close()
    # 128 agent-steps per update; evaluations at 512 and 1024 score the checkpoint saved right after them,
    # the checkpoints between evaluations have no score, nor has the final one at 1152 (no evaluation since 1024).
    assert saved == [(256, None), (512, 0.25), (768, None), (1024, 0.75), (1152, None)]
    kept = sorted(p.name for p in trainer.checkpoints.list())
    assert kept == ["step_000000001024.safetensors", "step_000000001152.safetensors"]
    assert read_meta(trainer.checkpoints.best())["score_by"] == "win_rate_vs_rule"


def test_ranking_by_win_rate_needs_league_evaluations() -> None:
    with pytest.raises(ValueError, match=r"run.best_by='win_rate_vs_rule'.*league.eval_interval"):
        load_config(None, ["--run.best-by", "win_rate_vs_rule"])
    with pytest.raises(ValueError, match=r"run.best_by"):
        load_config(None, ["--run.best-by", "elo"])


def test_evaluation_arenas_start_with_the_run_and_are_kept(tmp_path: Path) -> None:
    """The evaluation env (and its workers) exists as soon as training starts, before any evaluation, so a
    long run does not grow by it later; every later request returns the same env."""
    overrides = tiny_run(tmp_path) + [
        "--run.timesteps", "128", "--run.checkpoint-interval", "10000", "--league.eval-interval", "1000000",
    ]  # fmt: skip
    trainer = Trainer(load_config(None, overrides))
    try:
        assert trainer.league is not None and trainer.league._eval_env is None
        trainer.learn()
        assert trainer.counters.global_step < 1_000_000  # no evaluation ran
        env = trainer.league._eval_env
        assert env is not None, "the evaluation arenas should start with the run"
        assert trainer.league.evaluation_env(trainer.cfg.env) is env
    finally:
        trainer.close()
    assert trainer.league._eval_env is None


def test_full_game_arenas_pay_no_rewards_unless_asked(tmp_path):
    """Games are decided by goals: their arenas compute no reward terms (every reward 0, goals still counted);
    a rewards file named in the settings is kept."""
    from rocketrl.env.batched import BatchedEnv
    from rocketrl.env.config import default_rewards_path
    from rocketrl.league.match import game_env_config

    env = BatchedEnv(game_env_config(2, 1, 1, stepping="serial", seed=3))
    try:
        assert env.reward_fn.names == ()
        env.reset()
        for _ in range(3):
            result = env.step(torch.full((2, 2), 16))  # full throttle at the ball
        assert torch.equal(result.reward, torch.zeros(2, 2))
    finally:
        env.close()
    asked = game_env_config(2, 1, 1, rewards=str(default_rewards_path()))
    assert asked.rewards == str(default_rewards_path())
