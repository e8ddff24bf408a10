"""LeagueConfig: opponents, snapshots, matchmaking, periodic evaluation and the curriculum file."""

from __future__ import annotations

from dataclasses import dataclass, field

from rocketrl.env.setters import MAX_KICKOFF_JITTER, kickoff_jitter_in_range
from rocketrl.policy.load import refuse_community_bot

OPPONENT_KINDS = ("selfplay", "checkpoint", "rule", "rotation")
MATCHMAKING = ("close", "hard")


@dataclass
class LeagueConfig:
    """Who the learner plays against. The default, {selfplay: 1.0}, is pure self-play."""

    opponents: dict[str, float] = field(default_factory=lambda: {"selfplay": 1.0})
    """Share of arenas by opponent: selfplay (the learner on both sides), checkpoint (past snapshots),
    rule (the scripted RulePolicy), rotation (the scripted rotation team, rocketrl.policy.rotation). In
    non-selfplay arenas the learner plays blue in even arenas and
    orange in odd ones."""
    snapshot_interval: int = 1_000_000
    """Agent-steps between snapshots of the learner joining the opponent pool (one joins at the start). 0: the
    learner never joins, so its checkpoint arenas play `fixed_opponents` only (an exploiter: a bot trained to beat
    the named bots and nothing else)."""
    pool_size: int = 20
    """Most recent snapshots that can be picked as opponents."""
    old_floor: float = 0.2
    """Share of snapshot picks made uniformly over the pool regardless of rating (against forgetting)."""
    matchmaking: str = "close"
    """How the other picks weigh a snapshot by p, the learner's rated win chance against it: 'close' weighs
    p(1 - p), games either side may win first; 'hard' weighs (1 - p)^2, the opponents the learner still loses to
    first (prioritised fictitious self-play's 'hard' weighting)."""
    fixed_opponents: list[str] = field(default_factory=list)
    """Bots that join the pool at the start, beside the learner's first snapshot, and stay in it: shipped bots
    ('gauntlet_vN'; 'gauntlet' for every gauntlet bot; 'pretrained') or checkpoint paths; never a community bot
    ('nexto:PATH', 'necto:PATH': measured against, not trained against). They are matched by
    the same ratings and never pushed out by `pool_size`; one that is the file the run starts from
    (`run.init_from`) is left out, its first snapshot being that bot. Each is copied into
    <run>/league/snapshots/, so the run keeps the opponents it trained against."""
    rate_training_games: bool = False
    """Finished training games against snapshots and RulePolicy also update the ratings (Elo and OpenSkill)
    that matchmaking reads. Without it the ratings move only in evaluation matches, so with `eval_interval: 0`
    every snapshot keeps the learner's rating from when it joined and the pool is picked uniformly."""
    opponent_groups: int = 2
    """Snapshots met per rollout: the checkpoint arenas are split into this many groups."""
    greedy_groups: int = 0
    """Of those groups, how many meet their snapshot playing greedily (its most likely action each step), as bots
    play in `rocketrl eval --deterministic` and in the real game (`rocketrl export`); the other groups' snapshots
    sample their actions, as the learner does. 0 to `opponent_groups`."""
    eval_interval: int = 0
    """Agent-steps between evaluation matches (learner vs RulePolicy and a sampled snapshot) that update
    the ratings; 0 disables them."""
    eval_games: int = 16
    """Games per evaluation match."""
    eval_game_seconds: float = 60.0
    """Game clock of evaluation games, seconds."""
    eval_deterministic: bool = False
    """The learner acts greedily (its most likely action) in evaluation games instead of sampling."""
    eval_kickoff_jitter: float = 0.0
    """Move each car's kickoff spawn in evaluation games by up to this many uu in x and y (0 to 100). A greedy
    learner against RulePolicy replays the same kickoff from the same spawn; a few uu make the games
    independent trials."""
    eval_replays: bool = False
    """Save a replay of every evaluation game in <run>/replays/."""
    replay_top: int = 0
    """Keep replays of the top-return training episodes, this many (0: none)."""
    curriculum: str | None = None
    """Path of a curriculum YAML (see configs/curriculum.yaml); null trains on env's team sizes throughout."""

    def __post_init__(self) -> None:
        self.validate()

    @property
    def pure_selfplay(self) -> bool:
        return set(k for k, v in self.opponents.items() if v > 0) == {"selfplay"}

    @property
    def learner_joins_pool(self) -> bool:
        """Whether snapshots of the learner join the pool (snapshot_interval > 0)."""
        return self.snapshot_interval > 0

    def check_pool_for(self, opponents: dict[str, float], where: str) -> None:
        """Raise ValueError when `opponents` (shares by kind; `where` names them) have checkpoint arenas that
        would find the pool empty: no snapshots of the learner and no fixed opponents."""
        if opponents.get("checkpoint", 0) > 0 and not self.learner_joins_pool and not self.fixed_opponents:
            raise ValueError(
                f"league.snapshot_interval=0 leaves the pool empty but {where} has checkpoint arenas: name the bots "
                "they play in league.fixed_opponents (e.g. [pretrained]), or give snapshots an interval"
            )

    def validate(self) -> None:
        """Raise ValueError naming the first setting out of range."""
        validate_opponents(self.opponents, "league.opponents")
        if self.snapshot_interval < 0:
            raise ValueError(
                f"league.snapshot_interval={self.snapshot_interval}: must be 0 (the learner never joins the pool) "
                "or a positive number of agent-steps"
            )
        self.check_pool_for(self.opponents, "league.opponents")
        if self.pool_size < 1:
            raise ValueError(f"league.pool_size={self.pool_size}: must be at least 1")
        if not 0.0 <= self.old_floor <= 1.0:
            raise ValueError(f"league.old_floor={self.old_floor}: must be in [0, 1]")
        if self.matchmaking not in MATCHMAKING:
            raise ValueError(
                f"league.matchmaking={self.matchmaking!r}: must be one of {', '.join(MATCHMAKING)} "
                "(close: weight p(1-p); hard: weight (1-p)^2, p the learner's win chance)"
            )
        if not isinstance(self.fixed_opponents, list) or not all(
            isinstance(spec, str) and spec.strip() for spec in self.fixed_opponents
        ):
            raise ValueError(
                f"league.fixed_opponents={self.fixed_opponents!r}: must be a list of bot names or checkpoint paths, "
                "e.g. [gauntlet_v1] or [gauntlet]"
            )
        for spec in self.fixed_opponents:
            refuse_community_bot(
                "league.fixed_opponents",
                spec,
                "an opponent to train against",
                "Name gauntlet bots or your own checkpoints",
            )
        if self.opponent_groups < 1:
            raise ValueError(f"league.opponent_groups={self.opponent_groups}: must be at least 1")
        if not 0 <= self.greedy_groups <= self.opponent_groups:
            raise ValueError(
                f"league.greedy_groups={self.greedy_groups}: must lie in [0, league.opponent_groups="
                f"{self.opponent_groups}] (the snapshot groups that play greedily); raise opponent_groups for more"
            )
        if self.eval_interval < 0:
            raise ValueError(f"league.eval_interval={self.eval_interval}: must be 0 (off) or positive")
        if self.eval_games < 1:
            raise ValueError(f"league.eval_games={self.eval_games}: must be at least 1")
        if self.eval_game_seconds <= 0:
            raise ValueError(f"league.eval_game_seconds={self.eval_game_seconds}: must be positive")
        if not kickoff_jitter_in_range(self.eval_kickoff_jitter):
            raise ValueError(
                f"league.eval_kickoff_jitter={self.eval_kickoff_jitter!r}: must lie in [0, {MAX_KICKOFF_JITTER:g}] uu"
            )
        if self.replay_top < 0:
            raise ValueError(f"league.replay_top={self.replay_top}: must be 0 (off) or positive")


def validate_opponents(opponents: dict[str, float], where: str) -> None:
    """Opponent shares: known kinds, non-negative, not all zero."""
    if not isinstance(opponents, dict) or not opponents:
        raise ValueError(f"{where}={opponents!r}: give shares by opponent, e.g. {{selfplay: 0.6, rule: 0.4}}")
    for kind, share in opponents.items():
        if kind not in OPPONENT_KINDS:
            raise ValueError(f"{where}.{kind} is not an opponent kind; allowed: {', '.join(OPPONENT_KINDS)}")
        if not isinstance(share, (int, float)) or share < 0:
            raise ValueError(f"{where}.{kind}={share!r}: a share must be a number >= 0")
    if sum(opponents.values()) <= 0:
        raise ValueError(f"{where}: the shares sum to 0; give at least one positive share")
