"""Reward terms: pure batched functions of (previous state, state) -> (A, C) per-car rewards.

Each term is unweighted and roughly in [-1, 1] per step; `RewardFunction` weights them with the
values in configs/rewards.yaml, applies team spirit and zero-sum, and keeps each term's mean of the
last step for logging.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from rocketrl.infra.yaml_extends import read_extending_yaml
from rocketrl.sim.arena import (
    BACK_WALL_Y,
    BALL_MAX_SPEED,
    BALL_RADIUS,
    BLUE_TEAM,
    BOOST_MAX,
    CAR_MAX_SPEED,
    CEILING_Z,
    GOAL_HALF_WIDTH,
    GOAL_HEIGHT,
    ORANGE_TEAM,
)
from rocketrl.sim.state import BatchState

RewardTerm = Callable[[BatchState, BatchState], torch.Tensor]


def _unit(v: torch.Tensor) -> torch.Tensor:
    return v / v.norm(dim=-1, keepdim=True).clamp_min(1e-6)


GOAL_CENTRES = torch.tensor(
    [[0.0, BACK_WALL_Y, GOAL_HEIGHT / 2], [0.0, -BACK_WALL_Y, GOAL_HEIGHT / 2]], dtype=torch.float64
)
"""(2, 3) uu, by team: the centre of the goal blue attacks (orange's, +y) and the one orange attacks (blue's, -y).
`GOAL_CENTRES[car_team]` is the goal each car attacks, in the rewards (as float32) and in `rocketrl stats`."""


_GOAL_CENTRES_ON: dict[torch.device, torch.Tensor] = {}
"""GOAL_CENTRES per device, as float32, so that a step on a GPU copies nothing from the host."""


def opponent_goal(state: BatchState) -> torch.Tensor:
    """(A, C, 3) centre of the goal each car attacks."""
    if torch.compiler.is_compiling():  # a constant of the compiled graph
        return GOAL_CENTRES.to(state.device, torch.float32)[state.car_team]
    centres = _GOAL_CENTRES_ON.get(state.device)
    if centres is None:
        centres = _GOAL_CENTRES_ON.setdefault(state.device, GOAL_CENTRES.to(state.device, torch.float32))
    return centres[state.car_team]


def ball_on_target(ball_pos: torch.Tensor, ball_vel: torch.Tensor, goal_sign: torch.Tensor) -> torch.Tensor:
    """(A, C) bool: the ball's straight-line path crosses the goal line at y = goal_sign * 5120
    inside the goal mouth. ball_pos, ball_vel (A, 3); goal_sign (A, C) of +-1."""
    vy = ball_vel[:, 1].unsqueeze(1)
    distance = goal_sign * BACK_WALL_Y - ball_pos[:, 1].unsqueeze(1)
    heading = (vy * goal_sign) > 1.0
    t = distance / torch.where(heading, vy, torch.ones_like(vy))
    x = ball_pos[:, 0].unsqueeze(1) + ball_vel[:, 0].unsqueeze(1) * t
    z = ball_pos[:, 2].unsqueeze(1) + ball_vel[:, 2].unsqueeze(1) * t
    inside = (x.abs() < GOAL_HALF_WIDTH - BALL_RADIUS) & (z < GOAL_HEIGHT - BALL_RADIUS) & (z > 0)
    return heading & (t > 0) & inside


# ----------------------------------------------------------------------------------------- terms
def goal(prev: BatchState, state: BatchState) -> torch.Tensor:
    """+1 to every car of the team that scored this step, -1 to every car of the team conceding."""
    scored = state.goal_scored.unsqueeze(1)  # (A, 1): -1 none, else scoring team
    own = (scored == state.car_team).float()
    conceded = ((scored >= 0) & (scored != state.car_team)).float()
    return own - conceded


def touch(prev: BatchState, state: BatchState) -> torch.Tensor:
    """1 for each car that touched the ball this step."""
    return state.car_touched_ball.float()


def touch_strength(prev: BatchState, state: BatchState) -> torch.Tensor:
    """For each car that touched the ball this step: the change of the ball's velocity over the step,
    / 6000, at most 1. A shot that sends the ball off at 3000 uu/s earns 0.5, a dribbling push ~0.02,
    so touches cannot be farmed by pushing the ball along (the plain `touch` term pays those in full)."""
    change = (state.ball_vel - prev.ball_vel).norm(dim=-1).unsqueeze(1) / BALL_MAX_SPEED  # (A, 1)
    return state.car_touched_ball.float() * change.clamp(max=1.0)


def velocity_player_to_ball(prev: BatchState, state: BatchState) -> torch.Tensor:
    """Car velocity along the direction to the ball, / 2300: in [-1, 1]."""
    direction = _unit(state.ball_pos.unsqueeze(1) - state.car_pos)
    return (state.car_vel * direction).sum(-1) / CAR_MAX_SPEED


def velocity_ball_to_goal(prev: BatchState, state: BatchState) -> torch.Tensor:
    """Ball velocity along the direction to the goal each car attacks, / 6000: in [-1, 1]."""
    direction = _unit(opponent_goal(state) - state.ball_pos.unsqueeze(1))
    return (state.ball_vel.unsqueeze(1) * direction).sum(-1) / BALL_MAX_SPEED


def ball_goal_alignment(car_pos: torch.Tensor, ball_pos: torch.Tensor, attack_centre: torch.Tensor) -> torch.Tensor:
    """(...) in [-1, 1]: the mean of cos(car -> ball, own goal -> car) (defence: the car stands between its goal
    and the ball) and cos(car -> ball, car -> attacked goal) (offence: the ball lies between the car and the goal
    it attacks); -1 when the ball is behind the car on the way to its own goal. car_pos (..., 3), ball_pos and
    attack_centre (the centre of the goal the car attacks) broadcast to it, uu. The goals sit at +-y, so the
    defended goal is the attacked one with y mirrored."""
    defend = attack_centre * attack_centre.new_tensor([1.0, -1.0, 1.0])
    to_ball = _unit(ball_pos - car_pos)
    defence = (to_ball * _unit(car_pos - defend)).sum(-1)
    offence = (to_ball * _unit(attack_centre - car_pos)).sum(-1)
    return 0.5 * (defence + offence)


def align_ball_goal(prev: BatchState, state: BatchState) -> torch.Tensor:
    """Being behind the ball, on the side of the goal the car defends (`ball_goal_alignment` of each car)."""
    return ball_goal_alignment(state.car_pos, state.ball_pos.unsqueeze(1), opponent_goal(state))


def face_ball(prev: BatchState, state: BatchState) -> torch.Tensor:
    """Cosine between the car's forward vector and the direction to the ball."""
    direction = _unit(state.ball_pos.unsqueeze(1) - state.car_pos)
    return (state.car_forward * direction).sum(-1)


def boost_pickup(prev: BatchState, state: BatchState) -> torch.Tensor:
    """Boost gained from pads this step, / 100 (spending boost is not penalised). Only a step with a pad picked up
    (`car_boost_pickups`) pays: the refill of a respawn after a demolition or of a kickoff is no pickup."""
    gained = (state.car_boost - prev.car_boost).clamp_min(0.0) / BOOST_MAX
    return gained * (state.car_boost_pickups > 0)


def boost_held(prev: BatchState, state: BatchState) -> torch.Tensor:
    """sqrt(boost / 100): values the first units of boost most."""
    return torch.sqrt((state.car_boost / BOOST_MAX).clamp(0.0, 1.0))


def in_air(prev: BatchState, state: BatchState) -> torch.Tensor:
    """1 while the car is off the ground (and not demolished), else 0: meant, weighted small, to keep jumping in the
    policy, which bots otherwise unlearn early. Keep its weight well under driving at the ball's: at a tenth of
    vs_rule's velocity_player_to_ball the cars learn to stay in the air (docs/results/learning-experiments.md)."""
    return (~state.car_on_ground & ~state.car_demolished).float()


COMMIT_RADIUS = 800.0
"""uu: a car this close to the ball's centre, closing on it, commits to it (rocketrl stats counts the same)."""
COMMIT_CLOSING = 300.0
"""uu/s: the least closing speed on the ball (car velocity relative to the ball's, along the line to it)."""


def commits_to_ball(
    ball_pos: torch.Tensor, ball_vel: torch.Tensor, car_pos: torch.Tensor, car_vel: torch.Tensor
) -> torch.Tensor:
    """(..., C) bool from ball (..., 3) and cars (..., C, 3), uu and uu/s: the car is within COMMIT_RADIUS of the
    ball's centre and closes on it at COMMIT_CLOSING or more (its velocity relative to the ball's, along the line
    to the ball). The one definition the `double_commit` reward and `rocketrl stats` share."""
    offset = ball_pos.unsqueeze(-2) - car_pos
    distance = offset.norm(dim=-1)
    closing = ((car_vel - ball_vel.unsqueeze(-2)) * offset).sum(-1) / distance.clamp_min(1e-6)
    return (distance < COMMIT_RADIUS) & (closing >= COMMIT_CLOSING)


def committing(state: BatchState) -> torch.Tensor:
    """(A, C) bool: the car commits to the ball (`commits_to_ball`) and is not demolished."""
    return commits_to_ball(state.ball_pos, state.ball_vel, state.car_pos, state.car_vel) & ~state.car_demolished


def _teammates(state: BatchState) -> torch.Tensor:
    """(A, C, C) bool: [a, i, j] is True when cars i and j of arena a are on one team (i == j included)."""
    return state.car_team.unsqueeze(2) == state.car_team.unsqueeze(1)


def double_commit(prev: BatchState, state: BatchState) -> torch.Tensor:
    """-1 for a car that commits to the ball (`committing`) while a teammate nearer the ball commits too: the
    second car of a double commit, which leaves its team's half open; 0 otherwise (always 0 in 1v1)."""
    commits = committing(state)
    distance = (state.ball_pos.unsqueeze(1) - state.car_pos).norm(dim=-1)
    nearer = distance.unsqueeze(1) < distance.unsqueeze(2)  # [a, i, j]: car j is nearer the ball than car i
    second = (_teammates(state) & nearer & commits.unsqueeze(1)).any(-1) & commits
    return -second.float()


def first_man_to_ball(prev: BatchState, state: BatchState) -> torch.Tensor:
    """`velocity_player_to_ball` for each team's first man, the alive car nearest the ball (the lower car index
    on a tie), and 0 for its teammates: one car is paid to go to the ball, the others are free to support. The
    same as velocity_player_to_ball in 1v1."""
    distance = (state.ball_pos.unsqueeze(1) - state.car_pos).norm(dim=-1).masked_fill(state.car_demolished, math.inf)
    index = torch.arange(distance.shape[1], device=distance.device)
    mine, theirs = distance.unsqueeze(2), distance.unsqueeze(1)  # [a, i, 1] and [a, 1, j]
    ahead = (theirs < mine) | ((theirs == mine) & (index.view(1, 1, -1) < index.view(1, -1, 1)))  # j before i
    first = ~(_teammates(state) & ahead).any(-1) & ~state.car_demolished
    return velocity_player_to_ball(prev, state) * first.float()


def is_goal_side(ball_y: torch.Tensor, car_y: torch.Tensor, car_team: torch.Tensor | int) -> torch.Tensor:
    """Bool, broadcast over ball_y (..., 1), car_y (..., C) uu and car_team (..., C) or one team: the car is nearer
    its own back wall than the ball is (blue defends -y). The one rule the `nobody_back` reward and `rocketrl stats`
    share."""
    sign = torch.where(torch.as_tensor(car_team) == BLUE_TEAM, 1.0, -1.0)  # depth = y * sign grows from own goal
    return car_y * sign < ball_y * sign


def nobody_back(prev: BatchState, state: BatchState) -> torch.Tensor:
    """-1 to every car of a team none of whose alive cars is goal-side of the ball (nearer its own back wall, along
    y, than the ball), else 0: the frames `rocketrl stats` counts in nobody_back_share."""
    goal_side = is_goal_side(state.ball_pos[:, 1:2], state.car_pos[..., 1], state.car_team) & ~state.car_demolished
    covered = (_teammates(state) & goal_side.unsqueeze(1)).any(-1)
    return -(~covered).float()


def demolition(prev: BatchState, state: BatchState) -> torch.Tensor:
    """Demolitions the car made this step, minus 1 if it was demolished."""
    return state.car_demolitions.float() - state.car_was_demolished.float()


def aerial_touch_height(prev: BatchState, state: BatchState) -> torch.Tensor:
    """For a touch made with no wheels on the ground: ball height / 2044."""
    airborne_touch = state.car_touched_ball & ~state.car_on_ground
    return airborne_touch.float() * (state.ball_pos[:, 2] / CEILING_Z).unsqueeze(1)


class _OnTargetMemo:
    """The on-target flags of the last two ball states. A step's `state` is the next step's `prev`, and shot
    and save each need the flags of both, so each state's flags are computed once, not four times. An entry
    is reused only for the very same ball position and velocity tensors at the same in-place version, so
    terms stay pure functions of the tensors they are given."""

    def __init__(self) -> None:
        self.entries: list[tuple[tuple[torch.Tensor, int, torch.Tensor, int], torch.Tensor]] = []

    def __call__(self, state: BatchState) -> torch.Tensor:
        if torch.compiler.is_compiling():  # a compiled env layer fuses the recomputation instead
            return _on_target_both_now(state)
        pos, vel = state.ball_pos, state.ball_vel
        for (known_pos, pos_version, known_vel, vel_version), flags in self.entries:
            if known_pos is pos and known_vel is vel and pos_version == pos._version and vel_version == vel._version:
                return flags
        flags = _on_target_both_now(state)
        self.entries = [*self.entries[-1:], ((pos, pos._version, vel, vel._version), flags)]
        return flags


def _on_target_both_now(state: BatchState) -> torch.Tensor:
    """(A, 2) bool: ball on target at the orange goal (+y) and at the blue goal (-y)."""
    signs = torch.tensor([[1.0, -1.0]], device=state.device).expand(state.num_arenas, 2)
    return ball_on_target(state.ball_pos, state.ball_vel, signs)


_on_target_both = _OnTargetMemo()


def _on_target_at(state: BatchState, attacking: bool) -> torch.Tensor:
    """(A, C) bool: ball on target at the goal each car attacks (or defends, attacking=False)."""
    both = _on_target_both(state)
    toward_orange_goal = (state.car_team != ORANGE_TEAM) == attacking  # (A, C)
    return torch.where(toward_orange_goal, both[:, 0:1], both[:, 1:2])


def shot(prev: BatchState, state: BatchState) -> torch.Tensor:
    """1 for a touch that puts the ball on target at the opponent goal when it was not before."""
    now, before = _on_target_at(state, True), _on_target_at(prev, True)
    return (state.car_touched_ball & now & ~before).float()


def save(prev: BatchState, state: BatchState) -> torch.Tensor:
    """1 for a touch that takes the ball off a path into the car's own goal."""
    before, now = _on_target_at(prev, False), _on_target_at(state, False)
    return (state.car_touched_ball & before & ~now).float()


def _speed_added_toward_goal(prev: BatchState, state: BatchState) -> torch.Tensor:
    """(A, C) the change of the ball's velocity over the step along the direction from the ball to the goal each
    car attacks, / 6000 (not clipped)."""
    direction = _unit(opponent_goal(state) - state.ball_pos.unsqueeze(1))  # (A, C, 3)
    return ((state.ball_vel - prev.ball_vel).unsqueeze(1) * direction).sum(-1) / BALL_MAX_SPEED


def touch_ball_to_goal(prev: BatchState, state: BatchState) -> torch.Tensor:
    """For each car that touched the ball this step: the change of the ball's velocity over the step along the
    direction from the ball to the goal the car attacks, / 6000, clipped to [-1, 1]. A touch that adds 3000 uu/s
    toward that goal earns 0.5 (a dodge into the ball adds most); one that sends the ball as fast toward the car's
    own goal costs as much. Unlike `velocity_ball_to_goal`, paid once, to the car that made the change."""
    return state.car_touched_ball.float() * _speed_added_toward_goal(prev, state).clamp(-1.0, 1.0)


def dodge_touch(prev: BatchState, state: BatchState) -> torch.Tensor:
    """For a touch made in the air after the car spent its second jump (a dodge or a double jump; or its 1.25 s
    window for one ran out): the speed the touch adds toward the goal the car attacks, / 6000, in [0, 1]. A dodge
    into the ball that sends it 3000 uu/s faster toward that goal earns 0.5; a touch on the ground or with the
    dodge still in hand earns nothing."""
    spent = ~state.car_on_ground & ~state.car_has_flip  # (A, C): in the air, with no dodge left
    return (state.car_touched_ball & spent).float() * _speed_added_toward_goal(prev, state).clamp(0.0, 1.0)


def conceding_touch(prev: BatchState, state: BatchState) -> torch.Tensor:
    """1 for a touch that puts the ball on target at the car's own goal when it was not before: a shot at its own
    goal. Give it a negative weight."""
    now, before = _on_target_at(state, False), _on_target_at(prev, False)
    return (state.car_touched_ball & now & ~before).float()


REWARD_TERMS: dict[str, RewardTerm] = {
    "goal": goal,
    "touch": touch,
    "touch_strength": touch_strength,
    "velocity_player_to_ball": velocity_player_to_ball,
    "velocity_ball_to_goal": velocity_ball_to_goal,
    "face_ball": face_ball,
    "align_ball_goal": align_ball_goal,
    "boost_pickup": boost_pickup,
    "boost_held": boost_held,
    "demolition": demolition,
    "double_commit": double_commit,
    "first_man_to_ball": first_man_to_ball,
    "nobody_back": nobody_back,
    "aerial_touch_height": aerial_touch_height,
    "shot": shot,
    "save": save,
    "touch_ball_to_goal": touch_ball_to_goal,
    "conceding_touch": conceding_touch,
    "dodge_touch": dodge_touch,
    "in_air": in_air,
}

SPARSE_TERMS = ("goal",)


# ----------------------------------------------------------------------------------------- config
@dataclass
class RewardConfig:
    """Weights of the reward terms and how rewards are shared between cars."""

    weights: dict[str, float] = field(default_factory=lambda: {"goal": 10.0, "touch": 0.5})
    """Weight of each term by name; terms not listed have weight 0."""
    mode: str = "dense"
    """'dense' uses every weighted term; 'sparse' keeps only the goal reward."""
    team_spirit: float = 0.0
    """Share of the team's mean reward each car receives: r = (1 - s) r_own + s mean_team(r)."""
    zero_sum: bool = False
    """Subtract the mean reward of the opposing team from each car's reward."""
    weights_end: dict[str, float] = field(default_factory=dict)
    """Weight each listed term reaches at the end of training (run.timesteps), moving linearly from its weight in
    `weights` (0 where not listed there) as training goes on; terms not listed keep their weight throughout. For
    shaping that guides early and fades: e.g. velocity_player_to_ball 0.1 in `weights` and 0.02 here."""

    def __post_init__(self) -> None:
        for section in ("weights", "weights_end"):
            table = getattr(self, section)
            if not isinstance(table, dict):
                raise ValueError(f"rewards.{section} must be a mapping of term -> weight, got {table!r}")
            unknown = sorted(set(table) - set(REWARD_TERMS))
            if unknown:
                raise ValueError(
                    f"rewards.{section}.{unknown[0]} is not a reward term; known terms: {', '.join(REWARD_TERMS)}"
                )
            for name, weight in table.items():
                if not isinstance(weight, (int, float)) or isinstance(weight, bool) or not math.isfinite(weight):
                    raise ValueError(f"rewards.{section}.{name} must be a finite number, got {weight!r}")
        if self.mode not in ("dense", "sparse"):
            raise ValueError(f"rewards.mode={self.mode!r}: choose 'dense' or 'sparse'")
        if not 0.0 <= self.team_spirit <= 1.0:
            raise ValueError(f"rewards.team_spirit={self.team_spirit}: must lie in [0, 1]")

    @classmethod
    def from_dict(cls, data: dict) -> RewardConfig:
        allowed = {"weights", "weights_end", "mode", "team_spirit", "zero_sum"}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise ValueError(f"rewards.{unknown[0]} is not a reward setting; allowed: {', '.join(sorted(allowed))}")
        return cls(**data)

    @classmethod
    def from_yaml(cls, path: str | Path) -> RewardConfig:
        """The settings in the YAML file at `path`, over those of the file its `extends:` names: `weights` and
        `weights_end` are merged term by term (a term is dropped with weight 0), other settings replaced."""
        data = read_extending_yaml(path, expected="a mapping of reward settings")
        try:
            return cls.from_dict(data)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None


class RewardFunction:
    """Weighted sum of reward terms with team spirit and zero-sum, over (A, C) cars."""

    def __init__(self, config: RewardConfig, blue_size: int, orange_size: int) -> None:
        self.config = config
        start, end = dict(config.weights), {**config.weights, **config.weights_end}
        if config.mode == "sparse":
            start = {k: v for k, v in start.items() if k in SPARSE_TERMS}
            end = {k: v for k, v in end.items() if k in SPARSE_TERMS}
        names = dict.fromkeys([*start, *end])  # the terms in order: weights first, then those only in weights_end
        self.names = tuple(name for name in names if start.get(name, 0.0) != 0.0 or end.get(name, 0.0) != 0.0)
        self.terms = [REWARD_TERMS[name] for name in self.names]
        self.weights_start = [float(start.get(name, 0.0)) for name in self.names]
        self.weights_end = [float(end.get(name, 0.0)) for name in self.names]
        self._weight_vector = torch.tensor(self.weights_start, dtype=torch.float32)
        self.blue_size = blue_size
        self.orange_size = orange_size
        self.last_term_means: torch.Tensor | None = None
        """(num_terms,) mean over all cars of each unweighted term at the last call."""

    @property
    def weights(self) -> list[float]:
        """The weights in use (one per name), at the progress last set."""
        return self._weight_vector.tolist()

    @property
    def scheduled(self) -> bool:
        """True when some weight changes over training (rewards.weights_end)."""
        return self.weights_start != self.weights_end

    def weights_at(self, progress: float) -> list[float]:
        """The weights (one per name) at `progress`, the fraction of training done (clamped to [0, 1]):
        start + (end - start) * progress."""
        p = min(max(float(progress), 0.0), 1.0)
        return [a + (b - a) * p for a, b in zip(self.weights_start, self.weights_end)]

    def scheduled_weights(self, progress: float) -> dict[str, float]:
        """{term: weight at `progress`} of the terms whose weight changes over training (for logging)."""
        now = self.weights_at(progress)
        return {n: w for n, w, a, b in zip(self.names, now, self.weights_start, self.weights_end) if a != b}

    def set_progress(self, progress: float) -> None:
        """Move every weight to its value at `progress` (weights_at). Updates the weights in place, so a
        compiled env layer sees them."""
        if not self.scheduled:
            return
        self._weight_vector.copy_(torch.tensor(self.weights_at(progress), dtype=torch.float32))

    def __call__(self, prev: BatchState, state: BatchState) -> torch.Tensor:
        """Rewards (A, C) for the step that led from `prev` to `state`; keeps the term means."""
        reward, self.last_term_means = self.compute(prev, state)
        return reward

    def compute(self, prev: BatchState, state: BatchState) -> tuple[torch.Tensor, torch.Tensor]:
        """Pure form: (rewards (A, C), mean of each unweighted term (T,))."""
        if not self.terms:
            return torch.zeros(state.car_pos.shape[:2], device=state.device), torch.zeros(0, device=state.device)
        values = torch.stack([term(prev, state) for term in self.terms], dim=-1)  # (A, C, T)
        total = values @ self._weight_vector.to(values.device)
        return self.share(total), values.mean(dim=(0, 1))

    def share(self, reward: torch.Tensor) -> torch.Tensor:
        """Apply team spirit, then zero-sum, to per-car rewards (A, C)."""
        b = self.blue_size
        blue, orange = reward[:, :b], reward[:, b:]
        s = self.config.team_spirit
        if s > 0:
            blue = (1 - s) * blue + s * blue.mean(1, keepdim=True)
            if orange.shape[1]:
                orange = (1 - s) * orange + s * orange.mean(1, keepdim=True)
        if self.config.zero_sum and orange.shape[1]:
            blue, orange = blue - orange.mean(1, keepdim=True), orange - blue.mean(1, keepdim=True)
        return torch.cat([blue, orange], dim=1)

    def term_means(self) -> dict[str, float]:
        """{term: mean} of the last call, for logging (one device sync)."""
        if self.last_term_means is None:
            return {}
        return dict(zip(self.names, self.last_term_means.tolist()))
