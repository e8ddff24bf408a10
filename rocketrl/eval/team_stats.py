"""How each team played together: spacing, double commits, kickoffs, who stays back, possession.

Read from the same replay files as `rocketrl.eval.game_stats`, summed per policy name and team size (the key
is (name, "2v2"): a policy's 2v2 and 3v3 play are kept apart). Units: uu and seconds; rates are per minute
of the team's play (game time, not car time), so a team of three is not counted three times.

What a figure counts (frames of play only: the frame that ends a game segment, a goal or the recording's
end, starts no play; demolished cars are left out of every frame they are demolished in):

- mate_distance: the mean distance between two teammates, uu, over every frame and every pair of teammates.
- double_commits_per_minute: a car *commits* in a frame when it is within COMMIT_RADIUS (800 uu) of the
  ball's centre and closes on it at COMMIT_CLOSING (300 uu/s) or more (its velocity relative to the ball's,
  along the line to the ball). A *double commit* starts in a frame where two or more teammates commit and
  did not in the frame before (a run of such frames counts once; a kickoff starts afresh). Two cars of a
  team challenging the ball together is the double commit of the game's team play.
- kickoffs, kickoff_goers: a kickoff is the first frame of a game segment (the game's start or the frame
  after a goal). The cars of the team that *go* are those within KICKOFF_GO_RADIUS (1000 uu) of the ball at
  the segment's first touch (anyone's), or KICKOFF_WINDOW (3 s) in when nobody touched by then.
  kickoff_goers_per_kickoff is their mean count (1 is the rotation ideal).
- kickoff_nearest_takes_share: share of kickoffs where the team's car nearest the ball at that moment (the
  taker) was, at the kickoff, no more than KICKOFF_TIE (50 uu) farther from the ball than its nearest teammate
  (the car closest to the ball takes the kickoff; equal diagonal spawns count for either car).
- last_back_share_car1..3: share of frames each car of the team (in its order in the replay) was its team's
  last defender, the alive car nearest its own back wall; last_back_share_max: that of the car that was last
  defender most often in each game (1/team size when the cars share it evenly, 1 when one car always is).
- nobody_back_share: share of frames with no alive car of the team goal-side of the ball (nearer its own
  back wall than the ball).
- possession_share: share of frames, among those after the segment's first touch, where the team's car
  touched the ball last.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields

import torch

from rocketrl.env.rewards import commits_to_ball, is_goal_side
from rocketrl.eval.game_stats import figures_for_json
from rocketrl.eval.game_stats import segments as game_segments
from rocketrl.league.replay import Replay
from rocketrl.sim.arena import BLUE_TEAM

KICKOFF_GO_RADIUS = 1000.0
"""uu: a car this close to the ball at the kickoff's first touch went for the kickoff."""
KICKOFF_WINDOW = 3.0
"""Seconds: a kickoff nobody touched by then is judged at this time."""
KICKOFF_TIE = 50.0
"""uu: kickoff spawns this close in distance to the ball count as equally near."""
MAX_TEAM = 3


@dataclass
class TeamStats:
    """Sums over every frame and event of one policy's teams of one size; `summary` derives the figures."""

    games: int = 0
    cars: int = 0
    """Cars in the team (kept, not summed)."""
    play_frames: int = 0
    play_seconds: float = 0.0
    mate_distance: float = 0.0
    mate_pair_frames: int = 0
    double_commits: int = 0
    kickoffs: int = 0
    kickoff_goers: int = 0
    kickoff_nearest_takes: int = 0
    last_back_frames: list[int] = field(default_factory=lambda: [0] * MAX_TEAM)
    last_back_max_frames: int = 0
    nobody_back_frames: int = 0
    possession_frames: int = 0
    touched_frames: int = 0

    def add(self, other: TeamStats) -> None:
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if f.name == "cars":
                self.cars = max(mine, theirs)
            elif isinstance(mine, list):
                setattr(self, f.name, [a + b for a, b in zip(mine, theirs, strict=True)])
            else:
                setattr(self, f.name, mine + theirs)

    def summary(self) -> dict[str, float]:
        """The figures users read (NaN where there is no data)."""
        nan = float("nan")
        frames = self.play_frames
        share = (lambda n: n / frames) if frames else (lambda n: nan)
        out = {
            "games": self.games,
            "minutes": self.play_seconds / 60.0,
            "mate_distance": self.mate_distance / self.mate_pair_frames if self.mate_pair_frames else nan,
            "double_commits_per_minute": self.double_commits / (self.play_seconds / 60.0) if self.play_seconds else nan,
            "kickoffs": self.kickoffs,
            "kickoff_goers_per_kickoff": self.kickoff_goers / self.kickoffs if self.kickoffs else nan,
            "kickoff_nearest_takes_share": self.kickoff_nearest_takes / self.kickoffs if self.kickoffs else nan,
        }
        for i, n in enumerate(self.last_back_frames[: self.cars]):
            out[f"last_back_share_car{i + 1}"] = share(n)
        out["last_back_share_max"] = share(self.last_back_max_frames)
        out["nobody_back_share"] = share(self.nobody_back_frames)
        out["possession_share"] = self.possession_frames / self.touched_frames if self.touched_frames else nan
        return out


def _last_touch_team(replay: Replay, teams: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
    """(T,) team of the last touch so far in the frame's segment (-1: nobody yet)."""
    out = torch.full((replay.num_steps,), -1, dtype=torch.long)
    last = -1
    for t in range(replay.num_steps):
        touched = torch.nonzero(replay.car_touch[t]).flatten()
        if touched.numel():
            last = int(teams[touched[-1]])
        out[t] = last
        if bool(ends[t]):
            last = -1
    return out


def replay_team_stats(replay: Replay) -> dict[tuple[str, str], TeamStats]:
    """Per (policy name, team size such as '2v2'), the team sums of one replay (none for an empty one)."""
    if replay.num_steps == 0:
        return {}
    meta = replay.meta
    teams = torch.tensor(meta["car_teams"], dtype=torch.long)  # (C,)
    names = {BLUE_TEAM: meta.get("blue_policy") or "blue", 1 - BLUE_TEAM: meta.get("orange_policy") or "orange"}
    t_steps, dt = replay.num_steps, replay.step_seconds
    ball_pos, ball_vel = replay.ball_pos.double(), replay.ball_vel.double()  # (T, 3)
    car_pos, car_vel = replay.car_pos.double(), replay.car_vel.double()  # (T, C, 3)
    ends = replay.goal >= 0
    ends[-1] = True
    plays = ~ends
    alive = ~replay.car_demolished  # (T, C)
    live = alive & plays.view(-1, 1)  # (T, C) car-frames of play
    distance = (ball_pos.view(-1, 1, 3) - car_pos).norm(dim=2)  # (T, C)
    commits = live & commits_to_ball(ball_pos, ball_vel, car_pos, car_vel)
    # Step t-1 -> t is play unless frame t-1 ended a segment (frame t is then a kickoff).
    transition = torch.zeros(t_steps, dtype=torch.bool)
    transition[1:] = ~ends[:-1]
    segments = game_segments(ends)
    touch_team = _last_touch_team(replay, teams, ends)
    window = max(1, round(KICKOFF_WINDOW / dt))
    any_touch = replay.car_touch.any(dim=1)  # (T,)

    out: dict[tuple[str, str], TeamStats] = {}
    for team in (BLUE_TEAM, 1 - BLUE_TEAM):
        cars = torch.nonzero(teams == team).flatten()
        if cars.numel() == 0:
            continue
        sign = 1.0 if team == BLUE_TEAM else -1.0  # blue defends -y
        s = TeamStats(games=1, cars=cars.numel(), play_frames=int(plays.sum()))
        s.play_seconds = s.play_frames * dt
        on = live[:, cars]  # (T, K)
        pos = car_pos[:, cars]
        for i in range(cars.numel()):
            for j in range(i + 1, cars.numel()):
                both = on[:, i] & on[:, j]
                s.mate_distance += float(((pos[:, i] - pos[:, j]).norm(dim=1) * both.double()).sum())
                s.mate_pair_frames += int(both.sum())
        double = commits[:, cars].sum(dim=1) >= 2  # (T,)
        before = torch.zeros_like(double)
        before[1:] = double[:-1] & transition[1:]
        s.double_commits = int((double & ~before).sum())

        # Depth: how far up the field each car is, from its own back wall (uu); the last defender has the least.
        depth = (pos[..., 1] * sign).masked_fill(~on, float("inf"))  # (T, K)
        last = depth.argmin(dim=1)  # (T,)
        anyone = on.any(dim=1)
        slot_frames = torch.stack([(anyone & (last == k)).sum() for k in range(cars.numel())])
        for k in range(cars.numel()):
            s.last_back_frames[k] = int(slot_frames[k])
        s.last_back_max_frames = int(slot_frames.max())
        goal_side = is_goal_side(ball_pos[:, 1:2], pos[..., 1], team) & on
        s.nobody_back_frames = int((plays & ~goal_side.any(dim=1)).sum())
        s.possession_frames = int((plays & (touch_team == team)).sum())
        s.touched_frames = int((plays & (touch_team >= 0)).sum())

        for first, end in segments:
            if first >= end:
                continue  # a segment of no play
            touches = torch.nonzero(any_touch[first + 1 : end + 1]).flatten()
            judge = first + 1 + int(touches[0]) if touches.numel() else min(first + window, end)
            s.kickoffs += 1
            at_judge = distance[judge, cars]
            s.kickoff_goers += int((at_judge < KICKOFF_GO_RADIUS).sum())
            taker = int(at_judge.argmin())
            spawn = distance[first, cars]
            s.kickoff_nearest_takes += int(bool(spawn[taker] <= spawn.min() + KICKOFF_TIE))
        size = f"{cars.numel()}v{teams.numel() - cars.numel()}"
        out.setdefault((names[team], size), TeamStats()).add(s)
    return out


def team_stats(replays: Iterable[Replay]) -> dict[tuple[str, str], TeamStats]:
    """The team sums of every replay, per (policy name, team size)."""
    total: dict[tuple[str, str], TeamStats] = {}
    for replay in replays:
        for key, s in replay_team_stats(replay).items():
            total.setdefault(key, TeamStats()).add(s)
    return total


def team_label(key: tuple[str, str]) -> str:
    """'rule_policy 2v2' for the key ('rule_policy', '2v2')."""
    return f"{key[0]} {key[1]}"


def team_stats_as_json(stats: dict[tuple[str, str], TeamStats]) -> dict[str, dict]:
    """Sums and figures per 'name NvM', for a JSON report (NaN figures as null)."""
    return {team_label(k): {"sums": asdict(s), "figures": figures_for_json(s.summary())} for k, s in stats.items()}
