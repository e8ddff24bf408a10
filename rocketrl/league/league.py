"""League: the learner's opponents during training, their ratings, evaluation and the curriculum.

- Snapshots of the learner join the pool every `snapshot_interval` agent-steps (one at the start; none when
  it is 0), stored as checkpoints in <run>/league/snapshots/ so `rocketrl eval` can load them too. Fixed
  opponents (`fixed_opponents`: shipped bots or checkpoints) join at the start too and are never pushed out.
- Matchmaking: a snapshot s is picked with weight p(1 - p), p the learner's Elo-predicted win
  probability against s, so most games are close (`matchmaking: hard` weighs (1 - p)^2 instead: the
  snapshots that beat the learner first); `old_floor` of the picks are uniform over the pool so old
  versions keep being played (against forgetting).
- Evaluation every `eval_interval` agent-steps: full games against RulePolicy (anchored at Elo
  1500) and a sampled snapshot update the ratings (Elo and OpenSkill) and the gate measures.
- The curriculum (if any) advances after an update by steps or gate.
Everything is saved with the trainer's checkpoints (JSON) and mirrored to <run>/league.json (at every
checkpoint, snapshot, evaluation and stage change).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from rocketrl.env.batched import BatchedEnv
from rocketrl.env.config import EnvConfig
from rocketrl.infra.atomic_json import write_json_atomic
from rocketrl.infra.checkpoint import load_checkpoint, save_checkpoint
from rocketrl.league.config import MATCHMAKING, LeagueConfig
from rocketrl.league.curriculum import Curriculum, Stage, load_curriculum
from rocketrl.league.match import MatchConfig, MatchResult, game_env_config, play_match
from rocketrl.league.plan import ArenaPlan
from rocketrl.league.ratings import RatingTable
from rocketrl.league.top_replays import TopEpisodeReplays
from rocketrl.policy.actor_critic import ActorCritic, PolicyActor, weights_obs_size
from rocketrl.policy.base import Policy, PolicyDriver
from rocketrl.policy.load import (
    RULE_POLICY,
    checkpoint_config,
    gauntlet_bots,
    policy_from_checkpoint,
    resolve_checkpoint,
)
from rocketrl.policy.normalize import ObservationNormalizer

ROTATION = "rotation"
SCRIPTED_KINDS = {"rule": RULE_POLICY, "rotation": ROTATION}
"""Opponent kinds played by a scripted policy, and that policy's name."""

LEARNER = "learner"
SNAPSHOT_NETWORKS_KEPT = 8
"""Snapshot networks held in memory at once to play (about 1 MiB each for league_1v1); the one loaded first makes
room for a new one. A long run's live memory grows by one network a snapshot until this many are held, then stays
flat (docs/results/reliability.md, "How growth is read")."""


def matchmaking_weights(win_chance: np.ndarray, matchmaking: str) -> np.ndarray:
    """Unnormalised pick weights of snapshots, shape (S,), from the learner's win chance against each, (S,) in
    [0, 1]: 'close' p(1 - p), 'hard' (1 - p)^2 (see LeagueConfig.matchmaking)."""
    if matchmaking == "close":
        return win_chance * (1.0 - win_chance)
    if matchmaking == "hard":
        return (1.0 - win_chance) ** 2
    raise ValueError(f"league.matchmaking={matchmaking!r}: must be one of {', '.join(MATCHMAKING)}")


@dataclass
class LearnerSnapshot:
    """The learner as the league sees it after an update: the hand-off from the runner."""

    model: ActorCritic
    """The network (its current weights)."""
    obs_norm: ObservationNormalizer
    """The observation normalizer (saved with snapshots whether or not it is used)."""
    normalize_observations: bool
    """Whether the policy acts on normalized observations (ppo.normalize_observations)."""
    config_dict: dict
    """The run's resolved configuration, kept with each snapshot."""
    env_config: EnvConfig
    """The training arenas' settings (tick skip, engine, stepping) that evaluation games follow."""


class League:
    """Opponent pool, matchmaking, ratings, evaluation and curriculum of one training run."""

    def __init__(
        self, config: LeagueConfig, run_dir: Path, device: torch.device, seed: int = 0, compile_rule: bool = False
    ) -> None:
        """compile_rule: run the RulePolicy opponent through torch.compile (speed.compile_rule)."""
        self.config = config
        self.compile_rule = compile_rule
        self.run_dir = Path(run_dir)
        self.device = device
        self.seed = seed
        self.table = RatingTable()
        self.table.add(RULE_POLICY)
        self.table.add(LEARNER)
        self.snapshots: list[dict] = []
        """{'name', 'step', 'path'} of every snapshot, oldest first."""
        self.next_snapshot = 0
        self.next_eval = config.eval_interval if config.eval_interval else None
        self.measures: dict[str, float] = {}
        """Latest gate measures: win_rate_vs_rule, elo."""
        self.training_results: dict[str, list[int]] = {}
        """Opponent name -> [wins, draws, losses] of the learner in training episodes."""
        self.recent: dict[str, deque[float]] = {kind: deque(maxlen=200) for kind in ("checkpoint", *SCRIPTED_KINDS)}
        self.picks = np.random.default_rng(seed)
        self.curriculum: Curriculum | None = load_curriculum(config.curriculum) if config.curriculum else None
        for stage in self.curriculum.stages if self.curriculum else []:
            config.check_pool_for(stage.opponents, f"curriculum stage {stage.name!r}")
        self._rule: Policy | None = None
        self._rotation: Policy | None = None
        self._snapshot_policies: dict[str, Policy] = {}
        self._eval_env: BatchedEnv | None = None
        self.last_eval: dict = {}
        self.replays: TopEpisodeReplays | None = None
        """Top-return training episodes as replays (league.replay_top > 0)."""

    def restart_replays(self, env: EnvConfig) -> None:
        """Every arena was reset (start, checkpoint, stage change): start replay recording afresh."""
        if self.config.replay_top <= 0:
            return
        sizes = (env.blue_size, env.orange_size)
        if self.replays is None or (self.replays.blue_size, self.replays.orange_size) != sizes:
            directory = self.run_dir / "replays" / "top" / f"{env.blue_size}v{env.orange_size}"
            self.replays = TopEpisodeReplays(self.config.replay_top, directory, *sizes, env.tick_skip)
        self.replays.restart()

    # ------------------------------------------------------------------------------ stages
    def stage(self, env: EnvConfig) -> Stage:
        """The current stage; without a curriculum, one stage from env's team sizes and league.opponents."""
        if self.curriculum is not None:
            return self.curriculum.stage
        return Stage("main", env.blue_size, env.orange_size, dict(self.config.opponents))

    def make_plan(self, env: EnvConfig) -> ArenaPlan:
        stage = self.stage(env)
        return ArenaPlan(
            env.num_arenas,
            stage.blue_size,
            stage.orange_size,
            stage.opponents,
            self.config.opponent_groups,
            self.device,
        )

    # ------------------------------------------------------------------------------ opponents
    @property
    def rule(self) -> Policy:
        if self._rule is None:
            from rocketrl.policy.rule import RulePolicy

            self._rule = RulePolicy(seed=self.seed, compiled=self.compile_rule)
        return self._rule

    @property
    def rotation(self) -> Policy:
        if self._rotation is None:
            from rocketrl.policy.scripted import Rotation

            self._rotation = Rotation(seed=self.seed, compiled=self.compile_rule)
        return self._rotation

    def scripted_policy(self, name: str) -> Policy:
        """The scripted opponent `name` (RULE_POLICY or ROTATION), or a snapshot's network."""
        if name == RULE_POLICY:
            return self.rule
        if name == ROTATION:
            return self.rotation
        return self.snapshot_policy(name)

    def snapshot_policy(self, name: str) -> Policy:
        if name not in self._snapshot_policies:
            entry = next(s for s in self.snapshots if s["name"] == name)
            if len(self._snapshot_policies) >= SNAPSHOT_NETWORKS_KEPT:  # the first loaded goes
                self._snapshot_policies.pop(next(iter(self._snapshot_policies)))
            self._snapshot_policies[name] = policy_from_checkpoint(self.run_dir / entry["path"], device=self.device)
        return self._snapshot_policies[name]

    def pool_names(self) -> list[str]:
        """The pickable opponents: every fixed opponent, then the `pool_size` newest snapshots of the learner."""
        fixed = [s["name"] for s in self.snapshots if s.get("fixed")]
        learner = [s["name"] for s in self.snapshots if not s.get("fixed")]
        return fixed + learner[-self.config.pool_size :]

    def pick_probabilities(self) -> tuple[list[str], np.ndarray]:
        """Names of the pickable snapshots and their probabilities: (1 - floor) * rating-weighted + floor *
        uniform, the weights those of `matchmaking_weights`."""
        pool = self.pool_names()
        if not pool:
            return [], np.zeros(0)
        p = np.array([self.table.win_probability(LEARNER, name) for name in pool])
        rated = matchmaking_weights(p, self.config.matchmaking)
        uniform = np.full(len(pool), 1.0 / len(pool))
        weights = rated / rated.sum() if rated.sum() > 0 else uniform
        floor = self.config.old_floor
        return pool, (1.0 - floor) * weights + floor * uniform

    def opponent_names(self, plan: ArenaPlan) -> list[str]:
        """Matchmaking for the next rollout: the policy name of each opponent slot of `plan`, in order."""
        names = []
        for slot in plan.slots:
            if slot.kind in SCRIPTED_KINDS:
                names.append(SCRIPTED_KINDS[slot.kind])
            else:
                pool, probs = self.pick_probabilities()
                names.append(pool[int(self.picks.choice(len(pool), p=probs))])
        return names

    def assign_opponents(self, plan: ArenaPlan, names: list[str] | None = None) -> None:
        """Give every opponent slot of `plan` a policy for the next rollout (fresh recurrent state): the
        policies `names` (one per slot), or by matchmaking when None. The first `greedy_groups` snapshot slots
        play their snapshot greedily (the same network, its most likely action)."""
        names = self.opponent_names(plan) if names is None else names
        checkpoint_slots = 0
        for slot, name in zip(plan.slots, names, strict=True):
            slot.name = name
            policy = self.scripted_policy(name)
            if slot.kind == "checkpoint":
                if checkpoint_slots < self.config.greedy_groups and isinstance(policy, PolicyActor):
                    policy = PolicyActor(policy.model, policy.normalizer, deterministic=True)
                checkpoint_slots += 1
            slot.driver = PolicyDriver(policy, int(slot.agents.numel()), self.device)

    def record_training_outcomes(self, plan: ArenaPlan, episodes: dict[str, torch.Tensor]) -> None:
        """Count the learner's wins/draws/losses in finished episodes against each opponent, and rate them
        when `rate_training_games` is on."""
        for arena, score in plan.learner_outcomes(episodes):
            slot = next(s for s in plan.slots if bool((s.arenas == arena).any()))
            counts = self.training_results.setdefault(slot.name, [0, 0, 0])
            counts[0 if score == 1.0 else 1 if score == 0.5 else 2] += 1
            self.recent[slot.kind].append(score)
            if self.config.rate_training_games and slot.name != LEARNER:
                self.table.record(LEARNER, slot.name, score)

    def rate_training_counts(self, name: str, wins: int, draws: int, losses: int) -> None:
        """Rate training games counted elsewhere (a rollout worker's) when `rate_training_games` is on."""
        if self.config.rate_training_games and name != LEARNER:
            self.table.record_many(LEARNER, name, wins, draws, losses)

    # ------------------------------------------------------------------------------ after an update
    def add_snapshot(self, model: torch.nn.Module, obs_norm, config_dict: dict, step: int) -> str:
        """Save the learner's weights as a pool member rated at the learner's current Elo."""
        name = f"snapshot_{step:012d}"
        rel = Path("league") / "snapshots" / f"{name}.safetensors"
        state = {
            "model": {k: v.detach().clone() for k, v in model.state_dict().items()},
            "obs_norm": obs_norm.state_dict(),
        }
        save_checkpoint(self.run_dir / rel, state, meta={"step": step, "config": config_dict, "snapshot": name})
        self.snapshots.append({"name": name, "step": step, "path": str(rel)})
        self.table.add(name, elo=self.table[LEARNER].elo)
        self.next_snapshot = (step // self.config.snapshot_interval + 1) * self.config.snapshot_interval
        return name

    def start_pool(self, model: torch.nn.Module, obs_norm, config_dict: dict, step: int, obs_size: int,
                   start_file: Path | None) -> None:  # fmt: skip
        """The pool at a run's start (not on resume, which restores it): the learner's first snapshot unless
        `snapshot_interval` is 0, then the fixed opponents; `start_file` (the run's `run.init_from`) is left out of
        those only where the first snapshot already is that bot."""
        if self.snapshots:
            return
        if self.config.learner_joins_pool:
            self.add_snapshot(model, obs_norm, config_dict, step)
        self.add_fixed_opponents(obs_size, start_file if self.config.learner_joins_pool else None)

    def add_fixed_opponents(self, obs_size: int, start_file: Path | None = None) -> list[str]:
        """Copy each of `fixed_opponents` into the pool (once, at the start), rated at the learner's Elo; returns
        their names. A bot whose file is `start_file` (the run's `run.init_from`) or one already added is left out.

        Raises ValueError naming league.fixed_opponents when a bot sees a different observation (obs_size floats,
        e.g. a bot of another team size)."""
        specs: list[str] = []
        for spec in self.config.fixed_opponents:
            specs.extend(gauntlet_bots() if spec == "gauntlet" else [spec])
        names: list[str] = []
        taken = {s["name"] for s in self.snapshots}
        seen = {Path(start_file).resolve()} if start_file is not None else set()
        for spec in specs:
            path = resolve_checkpoint(spec)
            if path.resolve() in seen:  # the run's start, or named twice ('pretrained' is the newest gauntlet bot)
                continue
            seen.add(path.resolve())
            state, meta = load_checkpoint(path)
            if "model" not in state:
                raise ValueError(f"league.fixed_opponents: {spec!r} ({path}) holds no network")
            sees = weights_obs_size(state["model"])
            if sees != obs_size:
                raise ValueError(
                    f"league.fixed_opponents: {spec!r} sees {sees} observation floats where this run's cars see "
                    f"{obs_size}; name bots trained with the same team size and observation"
                )
            name = Path(spec).stem if Path(spec).suffix else str(spec)
            name = f"fixed_{name}"
            while name in taken:
                name += "_"
            taken.add(name)
            rel = Path("league") / "snapshots" / f"{name}.safetensors"
            kept = {"model": state["model"], **({"obs_norm": state["obs_norm"]} if "obs_norm" in state else {})}
            about = {"config": checkpoint_config(path, meta), "snapshot": name, "from": str(spec)}
            save_checkpoint(self.run_dir / rel, kept, meta=about)
            self.snapshots.append({"name": name, "step": 0, "path": str(rel), "fixed": True, "from": str(spec)})
            self.table.add(name, elo=self.table[LEARNER].elo)
            names.append(name)
        return names

    def evaluation_env(self, env_config: EnvConfig) -> BatchedEnv:
        """The arenas the evaluation games are played in, for the current stage's team sizes: built once and
        kept (rebuilt only when a curriculum stage changes the team sizes). The trainer builds it at start-up
        when evaluations are on, so a run holds its evaluation workers from the start instead of growing by
        them at the first evaluation."""
        stage = self.stage(env_config)
        cfg = self.config
        sizes = (stage.blue_size, max(1, stage.orange_size))
        if self._eval_env is None or (self._eval_env.config.blue_size, self._eval_env.config.orange_size) != sizes:
            self.close()
            self._eval_env = BatchedEnv(
                game_env_config(
                    min(cfg.eval_games, 32),
                    *sizes,
                    tick_skip=env_config.tick_skip,
                    engine=env_config.engine,
                    stepping=env_config.stepping,
                    num_workers=env_config.num_workers,
                    seed=self.seed + 7919,
                    kickoff_jitter=cfg.eval_kickoff_jitter,
                ),
                device=self.device,
            )
        return self._eval_env

    def evaluate(self, learner: PolicyActor, env_config: EnvConfig, step: int) -> dict[str, MatchResult]:
        """Evaluation matches of the learner vs RulePolicy and vs a sampled snapshot; ratings updated."""
        cfg = self.config
        env = self.evaluation_env(env_config)
        replays = str(self.run_dir / "replays" / f"eval_{step:012d}") if cfg.eval_replays else None
        results: dict[str, MatchResult] = {}
        opponents: list[tuple[str, Policy, int]] = [(RULE_POLICY, self.rule, cfg.eval_games)]
        pool, probs = self.pick_probabilities()
        if pool:
            name = pool[int(self.picks.choice(len(pool), p=probs))]
            opponents.append((name, self.snapshot_policy(name), max(2, cfg.eval_games // 2)))
        for name, policy, games in opponents:
            match = MatchConfig.games(
                num_games=games,
                game_seconds=cfg.eval_game_seconds,
                max_overtime_seconds=cfg.eval_game_seconds,
                seed=self.seed + step,
                replay_games="all" if replays else (),
                replay_dir=f"{replays}/{name}" if replays else None,
            )
            result = play_match(learner, policy, match, LEARNER, name, device=self.device, env=env)
            self.table.record_many(LEARNER, name, result.wins, result.draws, result.losses)
            results[name] = result
        rule = results[RULE_POLICY]
        self.measures = {"win_rate_vs_rule": rule.win_rate_interval()[0], "elo": self.table[LEARNER].elo}
        summaries = {name: {k: v for k, v in r.to_dict().items() if k != "games"} for name, r in results.items()}
        self.last_eval = {"step": step, "results": summaries}
        return results

    def after_update(self, learner: LearnerSnapshot, step: int) -> str | None:
        """Snapshots, evaluation and the curriculum after an update; returns a reason if the stage changed."""
        cfg = self.config
        news = False
        if cfg.learner_joins_pool and step >= self.next_snapshot:
            self.add_snapshot(learner.model, learner.obs_norm, learner.config_dict, step)
            news = True
        if self.next_eval is not None and step >= self.next_eval:
            actor = PolicyActor(
                learner.model,
                learner.obs_norm if learner.normalize_observations else None,
                deterministic=cfg.eval_deterministic,
            )
            self.evaluate(actor, learner.env_config, step)
            self.next_eval = (step // cfg.eval_interval + 1) * cfg.eval_interval
            news = True
        changed = None
        if self.curriculum is not None:
            changed = self.curriculum.maybe_advance(step, self.measures)
        if news or changed is not None:
            self.save_summary()  # also written with every checkpoint
        return changed

    def scalars(self) -> dict[str, float]:
        """Values for TensorBoard under league/..."""
        out = {"league/elo": self.table[LEARNER].elo, "league/openskill": self.table[LEARNER].ordinal}
        out["league/pool_size"] = float(len(self.snapshots))
        if "win_rate_vs_rule" in self.measures:
            out["league/win_rate_vs_rule"] = self.measures["win_rate_vs_rule"]
        for kind, scores in self.recent.items():
            if scores:
                out[f"league/train_score_vs_{kind}"] = float(np.mean(scores))
        if self.curriculum is not None:
            out["league/stage"] = float(self.curriculum.index)
        return out

    # ------------------------------------------------------------------------------ persistence
    def state_dict(self) -> dict:
        return {
            "table": self.table.to_dict(),
            "snapshots": [dict(s) for s in self.snapshots],
            "next_snapshot": self.next_snapshot,
            "next_eval": self.next_eval,
            "measures": dict(self.measures),
            "training_results": {k: list(v) for k, v in self.training_results.items()},
            "recent": {k: list(v) for k, v in self.recent.items()},
            "picks": self.picks.bit_generator.state,
            "curriculum": self.curriculum.state_dict() if self.curriculum is not None else None,
        }

    def load_state_dict(self, state: dict) -> None:
        self.table = RatingTable.from_dict(state["table"])
        self.snapshots = [dict(s) for s in state["snapshots"]]
        self.next_snapshot = int(state["next_snapshot"])
        self.next_eval = None if state["next_eval"] is None else int(state["next_eval"])
        self.measures = dict(state["measures"])
        self.training_results = {k: list(v) for k, v in state["training_results"].items()}
        for kind, values in state["recent"].items():
            self.recent[kind] = deque(values, maxlen=200)
        self.picks.bit_generator.state = state["picks"]
        if self.curriculum is not None and state.get("curriculum") is not None:
            self.curriculum.load_state_dict(state["curriculum"])
        self._snapshot_policies.clear()

    def save_summary(self) -> None:
        """<run>/league.json: ratings, snapshots, stage and latest evaluation (atomic)."""
        data = {
            "ratings": self.table.to_dict(),
            "snapshots": self.snapshots,
            "measures": self.measures,
            "training_results": self.training_results,
            "curriculum": self.curriculum.state_dict() if self.curriculum is not None else None,
            "last_eval": self.last_eval,
        }
        write_json_atomic(self.run_dir / "league.json", data)

    def close(self) -> None:
        if self._eval_env is not None:
            self._eval_env.close()
            self._eval_env = None
