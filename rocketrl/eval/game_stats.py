"""How each policy played: scoring, shooting, hitting, moving and positioning figures read from game replays.

A win rate says who won; these figures say how. They are read from replay files (`rocketrl.league.replay`,
written by `rocketrl eval --replays DIR` or `play_match` with `MatchConfig.replay_games`) and summed per policy
name over every car that policy drove (the replay's blue_policy and orange_policy). Units: uu, uu/s, seconds;
rates are per minute of one car's play, so 1v1 and 2v2 figures compare.

What a figure counts:

- goals / goals_against: goals of the policy's team and of the other team (a 2v2 goal counts once).
- own_goals: goals conceded whose last touch was the conceding team's; own_goals_saving: those of them whose last
  touch met a ball already on target at the team's own goal (a save that failed), the rest put it there.
- shots: touches that put the ball on target at the opponent goal when it was not before (the straight-line
  test of the `shot` reward, `rocketrl.env.rewards.ball_on_target`); shot_conversion = goals / shots.
- saves: touches that take the ball off target at the team's own goal (on target before the touch's step, not
  after it), the `save` reward's event.
- kickoffs: each game segment starts with one (the game's start and the restart after each goal). Its first
  touch goes to the team that touches the ball first in the segment (kickoff_first_touch_share), and a goal
  within KICKOFF_GOAL_SECONDS of the kickoff is a kickoff goal (for the scoring team, against the other).
- touches, aerial touches (the ball's centre above 250 uu at the touch), touches in the attacking half.
- hit figures of each touch: the ball's speed after it, the change of the ball's velocity over the touch's
  step, and the ball's speed toward the middle of the opponent goal after it.
- jumps (rising edges of the jump control), boost used and boost taken (drops and rises of the boost amount
  between frames of play with the car alive at both: pads are the only rise, respawns and kickoffs are left out),
  demolitions suffered.
- per-frame means: car speed, supersonic share (above 2200 uu/s), distance to the ball, goal-side share (the car
  nearer its own back wall than the ball is), ball-goal alignment (the `align_ball_goal` reward term's value,
  `rocketrl.env.rewards.ball_goal_alignment`: 1 lined up behind the ball toward the attacked goal, -1 the
  reverse), off-floor share (the car's centre above 100 uu: in the air or on a wall), boost held (0-100).
- how goals were conceded: for each goal against whose last touch was the other team's (the scoring touch), the
  defending team's cars at the frame of that touch: whether one of them was goal-side (conceded_goal_side_share),
  and the nearest live one's distance to the ball (uu) and boost (conceded_defender_distance, _boost). A goal
  conceded with every defender demolished counts as not goal-side and adds no distance or boost.

Frames that end a game segment (a goal, or the end of the recording) carry no controls and start no play time;
the transition from them to the next kickoff is skipped by every step-to-step figure.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch

from rocketrl.env.rewards import GOAL_CENTRES, ball_goal_alignment, ball_on_target
from rocketrl.league.replay import Replay, load_replay
from rocketrl.sim.arena import BLUE_TEAM, SUPERSONIC_SPEED

JUMP = 5
"""Index of the jump button in a control vector (throttle, steer, pitch, yaw, roll, jump, boost, handbrake)."""
AERIAL_TOUCH_HEIGHT = 250.0
"""uu: a touch with the ball's centre above this counts as aerial."""
OFF_FLOOR_HEIGHT = 100.0
"""uu: a car whose centre is above this is in the air or on a wall (it rests at about 17 uu)."""
KICKOFF_GOAL_SECONDS = 6.0
"""s: a goal this soon after its segment's kickoff counts as a kickoff goal (a 1v1 kickoff shot lands in 3-5 s)."""


@dataclass
class PolicyStats:
    """Sums over every car-frame and event of one policy; the figures are derived from them (`summary`)."""

    games: int = 0
    car_seconds: float = 0.0
    goals: int = 0
    goals_against: int = 0
    own_goals: int = 0
    own_goals_saving: int = 0
    shots: int = 0
    saves: int = 0
    kickoffs: int = 0
    kickoff_first_touches: int = 0
    kickoff_goals: int = 0
    kickoff_goals_against: int = 0
    touches: int = 0
    aerial_touches: int = 0
    attacking_half_touches: int = 0
    ball_speed_after_touch: float = 0.0
    ball_speed_change: float = 0.0
    ball_speed_to_goal_after_touch: float = 0.0
    jumps: int = 0
    boost_used: float = 0.0
    boost_taken: float = 0.0
    demolished: int = 0
    car_frames: int = 0
    speed: float = 0.0
    supersonic_frames: int = 0
    distance_to_ball: float = 0.0
    goal_side_frames: int = 0
    ball_goal_alignment: float = 0.0
    off_floor_frames: int = 0
    boost_held: float = 0.0
    conceded_from_touch: int = 0
    conceded_goal_side: int = 0
    conceded_with_defender: int = 0
    conceded_defender_distance: float = 0.0
    conceded_defender_boost: float = 0.0

    def add(self, other: PolicyStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def summary(self) -> dict[str, float]:
        """The figures users read: counts, rates per car-minute, means per touch and shares of frames."""
        minutes = self.car_seconds / 60.0
        per_minute = (lambda n: n / minutes) if minutes > 0 else (lambda n: float("nan"))
        per_touch = (lambda x: x / self.touches) if self.touches else (lambda x: float("nan"))
        per_frame = (lambda x: x / self.car_frames) if self.car_frames else (lambda x: float("nan"))
        with_defender = self.conceded_with_defender
        per_defender = (lambda x: x / with_defender) if with_defender else (lambda x: float("nan"))
        return {
            "games": self.games,
            "car_minutes": minutes,
            "goals": self.goals,
            "goals_against": self.goals_against,
            "own_goals": self.own_goals,
            "own_goals_saving": self.own_goals_saving,
            "shots": self.shots,
            "shot_conversion": self.goals / self.shots if self.shots else float("nan"),
            "saves": self.saves,
            "saves_per_minute": per_minute(self.saves),
            "kickoffs": self.kickoffs,
            "kickoff_first_touch_share": self.kickoff_first_touches / self.kickoffs if self.kickoffs else float("nan"),
            "kickoff_goals": self.kickoff_goals,
            "kickoff_goals_against": self.kickoff_goals_against,
            "touches_per_minute": per_minute(self.touches),
            "shots_per_minute": per_minute(self.shots),
            "aerial_touch_share": per_touch(self.aerial_touches),
            "attacking_half_touch_share": per_touch(self.attacking_half_touches),
            "ball_speed_after_touch": per_touch(self.ball_speed_after_touch),
            "ball_speed_change": per_touch(self.ball_speed_change),
            "ball_speed_to_goal_after_touch": per_touch(self.ball_speed_to_goal_after_touch),
            "jumps_per_minute": per_minute(self.jumps),
            "boost_used_per_minute": per_minute(self.boost_used),
            "boost_taken_per_minute": per_minute(self.boost_taken),
            "demolished_per_minute": per_minute(self.demolished),
            "speed": per_frame(self.speed),
            "supersonic_share": per_frame(self.supersonic_frames),
            "distance_to_ball": per_frame(self.distance_to_ball),
            "goal_side_share": per_frame(self.goal_side_frames),
            "ball_goal_alignment": per_frame(self.ball_goal_alignment),
            "off_floor_share": per_frame(self.off_floor_frames),
            "boost_held": per_frame(self.boost_held),
            "conceded_goal_side_share": (
                self.conceded_goal_side / self.conceded_from_touch if self.conceded_from_touch else float("nan")
            ),
            "conceded_defender_distance": per_defender(self.conceded_defender_distance),
            "conceded_defender_boost": per_defender(self.conceded_defender_boost),
        }


def _last_touches(replay: Replay, teams: torch.Tensor) -> list[tuple[int, int]]:
    """For each frame, (team, frame) of the last touch in this game segment ((-1, -1): nobody touched yet)."""
    touch = replay.car_touch
    segment_end = replay.goal >= 0
    last, out = (-1, -1), []
    for t in range(replay.num_steps):
        touched = torch.nonzero(touch[t]).flatten()
        if touched.numel():
            last = (int(teams[touched[-1]]), t)
        out.append(last)
        if bool(segment_end[t]):
            last = (-1, -1)
    return out


def segments(ends: torch.Tensor) -> list[tuple[int, int]]:
    """(first, last) frame of each game segment: a segment runs from a kickoff to the frame that ends it.
    ends (T,) bool: the frames that end a segment (goal frames and the recording's last)."""
    out, start = [], 0
    for t in torch.nonzero(ends).flatten().tolist():
        out.append((start, t))
        start = t + 1
    return out


def _kickoffs(replay: Replay, teams: torch.Tensor, ends: torch.Tensor) -> list[tuple[int, int]]:
    """Per game segment (each starts with a kickoff), (team of the first touch or -1, team scoring within
    KICKOFF_GOAL_SECONDS of the kickoff or -1). A last segment of one frame and no goal played no kickoff."""
    out: list[tuple[int, int]] = []
    kickoff_steps = KICKOFF_GOAL_SECONDS / replay.step_seconds
    for first, last in segments(ends):
        goal = int(replay.goal[last])
        if last == first and goal < 0:
            continue
        # A touch recorded in a frame is made in the step into it: the kickoff frame's own flag is not play.
        touched = torch.nonzero(replay.car_touch[first + 1 : last + 1])  # (K, 2) rows (frame, car), earliest first
        first_team = int(teams[touched[0, 1]]) if touched.numel() else -1
        out.append((first_team, goal if goal >= 0 and last - first <= kickoff_steps else -1))
    return out


def _count_kickoffs(s: PolicyStats, kickoffs: list[tuple[int, int]], team: int) -> None:
    """Add one team's kickoffs, first touches and kickoff goals for and against (`_kickoffs`) to s."""
    s.kickoffs = len(kickoffs)
    s.kickoff_first_touches = sum(1 for first, _ in kickoffs if first == team)
    s.kickoff_goals = sum(1 for _, scorer in kickoffs if scorer == team)
    s.kickoff_goals_against = sum(1 for _, scorer in kickoffs if scorer == 1 - team)


def _count_own_goals(
    s: PolicyStats, own_touches: list[int], transition: torch.Tensor, own_on_target: torch.Tensor
) -> None:
    """Add one team's own goals to s: own_touches the frame of its last touch before each goal it conceded off its own
    touch; one is saving where that touch met a ball already on target at its goal (on target the frame before, in
    the same game segment)."""
    s.own_goals = len(own_touches)
    s.own_goals_saving = sum(1 for t in own_touches if t > 0 and bool(transition[t] & own_on_target[t - 1]))


def _sum_frames(
    s: PolicyStats, frame: torch.Tensor, speed: torch.Tensor, distance: torch.Tensor, goal_side: torch.Tensor,
    car_pos: torch.Tensor, ball_pos: torch.Tensor, attack_centre: torch.Tensor, boost: torch.Tensor,
) -> None:  # fmt: skip
    """Add one team's car-frames of play to s: frame (T, K) 1.0 for a frame of play of a live car, and per car
    speed (uu/s), distance to the ball (uu), goal-side (bool) and boost (0-100), each (T, K); car_pos (T, K, 3),
    ball_pos (T, 3) and attack_centre (K, 3), the centre of the goal each car attacks, uu."""
    height = car_pos[..., 2]
    alignment = ball_goal_alignment(car_pos, ball_pos.view(-1, 1, 3), attack_centre.view(1, -1, 3))  # (T, K)
    s.car_frames = int(frame.sum())
    s.speed = float((frame * speed).sum())
    s.supersonic_frames = int((frame * (speed > SUPERSONIC_SPEED).double()).sum())
    s.distance_to_ball = float((frame * distance).sum())
    s.goal_side_frames = int((frame * goal_side.double()).sum())
    s.ball_goal_alignment = float((frame * alignment).sum())
    s.off_floor_frames = int((frame * (height > OFF_FLOOR_HEIGHT).double()).sum())
    s.boost_held = float((frame * boost).sum())


def _count_conceded(
    s: PolicyStats, touch_frames: list[int], alive: torch.Tensor, distance: torch.Tensor, goal_side: torch.Tensor,
    boost: torch.Tensor,
) -> None:  # fmt: skip
    """Add to s where one team's cars stood at the other team's scoring touches: touch_frames the frame of each
    such touch; alive, distance (uu), goal_side and boost (0-100) of the team's cars, each (T, K)."""
    for t in touch_frames:
        s.conceded_from_touch += 1
        live = torch.nonzero(alive[t]).flatten()
        if live.numel() == 0:
            continue  # every defender demolished: not goal-side, no distance
        s.conceded_goal_side += int(bool(goal_side[t, live].any()))
        nearest = live[torch.argmin(distance[t, live])]
        s.conceded_with_defender += 1
        s.conceded_defender_distance += float(distance[t, nearest])
        s.conceded_defender_boost += float(boost[t, nearest])


def replay_stats(replay: Replay) -> dict[str, PolicyStats]:
    """Per policy name (a side without one is 'blue' or 'orange'), the sums of one replay (none for an empty one)."""
    if replay.num_steps == 0:
        return {}
    meta = replay.meta
    teams = torch.tensor(meta["car_teams"], dtype=torch.long)  # (C,)
    names = {BLUE_TEAM: meta.get("blue_policy") or "blue", 1 - BLUE_TEAM: meta.get("orange_policy") or "orange"}
    t_steps, dt = replay.num_steps, replay.step_seconds
    ball_pos, ball_vel = replay.ball_pos.double(), replay.ball_vel.double()  # (T, 3)
    car_pos, car_vel = replay.car_pos.double(), replay.car_vel.double()  # (T, C, 3)
    attack_sign = torch.where(teams == BLUE_TEAM, 1.0, -1.0).double()  # (C,): +y is orange's goal, blue attacks it
    # A frame ends a segment when it holds a goal or is the recording's last; the step from it is not play.
    ends = replay.goal >= 0
    ends[-1] = True
    plays = ~ends  # (T,) frames whose step is play
    # Step t-1 -> t is a real transition unless frame t-1 ended a segment (t then holds a kickoff).
    transition = torch.zeros(t_steps, dtype=torch.bool)
    transition[1:] = ~ends[:-1]
    alive = ~replay.car_demolished  # (T, C)

    on_target = ball_on_target(
        ball_pos, ball_vel, attack_sign.view(1, -1).expand(t_steps, -1)
    )  # (T, C): on target at the goal each car attacks
    own_goal_on_target = ball_on_target(
        ball_pos, ball_vel, -attack_sign.view(1, -1).expand(t_steps, -1)
    )  # (T, C): on target at the goal each car defends
    was_on_target = torch.zeros_like(on_target)
    was_on_target[1:] = on_target[:-1]
    touch = replay.car_touch & transition.view(-1, 1)  # (T, C)
    shots = touch & on_target & ~was_on_target

    speed_after = ball_vel.norm(dim=1)  # (T,)
    change = torch.zeros(t_steps, dtype=torch.float64)
    change[1:] = (ball_vel[1:] - ball_vel[:-1]).norm(dim=1)
    goal_centre = GOAL_CENTRES[teams]  # (C, 3) the goal each car attacks
    to_goal = goal_centre.view(1, -1, 3) - ball_pos.view(-1, 1, 3)  # (T, C, 3)
    to_goal_speed = (ball_vel.view(-1, 1, 3) * to_goal).sum(dim=2) / to_goal.norm(dim=2).clamp_min(1e-6)  # (T, C)

    jump = replay.controls[..., JUMP].float() > 0.5  # (T, C)
    held_before = torch.zeros_like(jump)
    held_before[1:] = jump[:-1] & transition[1:].view(-1, 1)  # pressed on the step before, in the same segment
    jump_edges = jump & ~held_before & plays.view(-1, 1)
    boost = replay.car_boost.double()
    boost_change = torch.zeros_like(boost)  # (T, C): from the frame before, within a segment, alive at both
    boost_change[1:] = boost[1:] - boost[:-1]
    boost_change *= (transition.view(-1, 1) & alive & torch.roll(alive, 1, dims=0)).double()
    demolished = torch.zeros_like(alive)
    demolished[1:] = replay.car_demolished[1:] & ~replay.car_demolished[:-1] & transition[1:].view(-1, 1)

    frame = (plays.view(-1, 1) & alive).double()  # (T, C) car-frames of play
    car_speed = car_vel.norm(dim=2)
    distance = (car_pos - ball_pos.view(-1, 1, 3)).norm(dim=2)
    # Goal-side: nearer the own back wall than the ball, i.e. behind the ball as seen from the attacked goal.
    goal_side = (car_pos[..., 1] - ball_pos[:, 1:2]) * attack_sign.view(1, -1) < 0
    attacking_half = (ball_pos[:, 1:2] * attack_sign.view(1, -1)) > 0
    last_touch = _last_touches(replay, teams)
    kickoffs = _kickoffs(replay, teams, ends)
    # Saves: a touch in the step from t-1 to t takes the ball off target at the toucher's own goal.
    saves = touch & ~own_goal_on_target
    saves[1:] &= own_goal_on_target[:-1]
    saves[0] = False

    out: dict[str, PolicyStats] = {}
    for team in (BLUE_TEAM, 1 - BLUE_TEAM):
        cars = torch.nonzero(teams == team).flatten()
        if cars.numel() == 0:
            continue
        s = PolicyStats(games=1)
        scored = replay.goal == team
        conceded = (replay.goal >= 0) & ~scored
        s.goals, s.goals_against = int(scored.sum()), int(conceded.sum())
        conceded_last = [last_touch[t] for t in torch.nonzero(conceded).flatten().tolist()]  # (team, frame) each
        own_on_target = own_goal_on_target[:, cars[0]]  # (T,): the team's cars share the goal they defend
        _count_own_goals(s, [frame for toucher, frame in conceded_last if toucher == team], transition, own_on_target)
        s.car_seconds = float(plays.sum()) * dt * cars.numel()
        tc = touch[:, cars]
        s.touches = int(tc.sum())
        s.shots = int(shots[:, cars].sum())
        s.saves = int(saves[:, cars].sum())
        _count_kickoffs(s, kickoffs, team)
        s.aerial_touches = int((tc & (ball_pos[:, 2:3] > AERIAL_TOUCH_HEIGHT)).sum())
        s.attacking_half_touches = int((tc & attacking_half[:, cars]).sum())
        s.ball_speed_after_touch = float((tc.double() * speed_after.view(-1, 1)).sum())
        s.ball_speed_change = float((tc.double() * change.view(-1, 1)).sum())
        s.ball_speed_to_goal_after_touch = float((tc.double() * to_goal_speed[:, cars]).sum())
        s.jumps = int(jump_edges[:, cars].sum())
        s.boost_used = float((-boost_change[:, cars]).clamp_min(0.0).sum())
        s.boost_taken = float(boost_change[:, cars].clamp_min(0.0).sum())
        s.demolished = int(demolished[:, cars].sum())
        _sum_frames(
            s, frame[:, cars], car_speed[:, cars], distance[:, cars], goal_side[:, cars], car_pos[:, cars], ball_pos,
            goal_centre[cars], boost[:, cars],
        )  # fmt: skip
        scoring = [frame for toucher, frame in conceded_last if toucher == 1 - team]
        _count_conceded(s, scoring, alive[:, cars], distance[:, cars], goal_side[:, cars], boost[:, cars])
        out.setdefault(names[team], PolicyStats()).add(s)
    return out


def replay_paths(sources: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Replay files named directly, or found (*.safetensors, sorted) in named folders."""
    paths: list[Path] = []
    for source in sources:
        p = Path(source)
        if p.is_dir():
            paths.extend(sorted(p.glob("*.safetensors")))
        elif p.is_file():
            paths.append(p)
        else:
            raise FileNotFoundError(
                f"{p}: no such replay file or folder (write replays with rocketrl eval --replays DIR)"
            )
    if not paths:
        raise FileNotFoundError(f"no replays (*.safetensors) in {', '.join(map(str, sources))}")
    return paths


def game_stats(replays: Iterable[Replay]) -> dict[str, PolicyStats]:
    """The sums of every replay, per policy name."""
    total: dict[str, PolicyStats] = {}
    for replay in replays:
        for name, s in replay_stats(replay).items():
            total.setdefault(name, PolicyStats()).add(s)
    return total


def stats_of_paths(sources: Sequence[str | os.PathLike[str]]) -> dict[str, PolicyStats]:
    """The sums per policy of the replays in `sources` (files or folders)."""
    return game_stats(load_replay(p) for p in replay_paths(sources))


def stats_of_files(sources: Sequence[str | os.PathLike[str]]) -> dict[str, dict[str, float]]:
    """The figures (`PolicyStats.summary`) per policy of the replays in `sources` (files or folders)."""
    return {name: s.summary() for name, s in stats_of_paths(sources).items()}


def format_stats(stats: dict[str, dict[str, float]]) -> str:
    """A text table: one row per figure, one column per policy."""
    names = list(stats)
    keys = list(next(iter(stats.values()))) if stats else []
    width = max([len(k) for k in keys] + [6])
    cols = [max(10, len(n)) for n in names]
    lines = [" " * width + "  " + "  ".join(n.rjust(c) for n, c in zip(names, cols, strict=True))]
    for key in keys:
        cells = []
        for name, c in zip(names, cols, strict=True):
            value = stats[name].get(key, float("nan"))
            if isinstance(value, float) and math.isnan(value):
                text = "-"
            elif isinstance(value, int) or abs(value) >= 100:
                text = f"{value:,.0f}"
            else:
                text = f"{value:.3f}"
            cells.append(text.rjust(c))
        lines.append(key.ljust(width) + "  " + "  ".join(cells))
    return "\n".join(lines)


def figures_for_json(figures: dict[str, float]) -> dict[str, float | None]:
    """A policy's figures with those that lack data (e.g. conversion without shots, NaN) as None: JSON null."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in figures.items()}


def stats_as_json(stats: dict[str, PolicyStats]) -> dict[str, dict]:
    """Sums and figures per policy, for a JSON report."""
    return {name: {"sums": asdict(s), "figures": figures_for_json(s.summary())} for name, s in stats.items()}
