"""Play full games between two policies in batched arenas, with statistics.

A game starts at a kickoff and runs on a game clock (default 5 minutes of game time); every goal
is followed by a kickoff; when the clock runs out with the scores level the game goes to overtime
(next goal wins, capped by `max_overtime_seconds`, then a draw) or ends as a draw. Each arena plays
its games one after another and policy A alternates sides from game to game (arena i starts A on
blue when i is even), so A plays each side equally often. Every agent of a policy acts in one
batched forward per step.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from rocketrl.env.batched import BatchedEnv
from rocketrl.env.config import EnvConfig, no_rewards_path
from rocketrl.league.ratings import win_rate_interval
from rocketrl.policy.base import Policy, PolicyDriver
from rocketrl.sim.arena import BLUE_TEAM
from rocketrl.sim.arena import step_seconds as arena_step_seconds


@dataclass
class MatchConfig:
    """How a match between two policies is played: the games' rules, and the arenas (an EnvConfig)."""

    num_games: int = 25
    """Games to play."""
    game_seconds: float = 300.0
    """Game clock, seconds of game time."""
    overtime: bool = True
    """Level at the end of the clock: play on until the next goal (else the game is a draw)."""
    max_overtime_seconds: float = 300.0
    """Overtime longer than this ends in a draw."""
    replay_games: tuple[int, ...] | str = ()
    """Game indices to save as replays, or 'all'."""
    replay_dir: str | None = None
    """Folder for replays (needed when replay_games is set)."""
    env: EnvConfig = field(default_factory=lambda: game_env_config(25, 1, 1))
    """The arenas the games are played in (team sizes, tick skip, engine, stepping, seed, kickoff jitter):
    every reset a kickoff and only the game clock ending a game, as `game_env_config` builds them."""

    def __post_init__(self) -> None:
        if self.num_games < 1:
            raise ValueError(f"num_games={self.num_games}: play at least 1 game")
        if self.game_seconds <= 0:
            raise ValueError(f"game_seconds={self.game_seconds}: must be positive")
        if self.replay_games and self.replay_dir is None:
            raise ValueError("replay_games is set but replay_dir is not: give a folder for the replays")

    @classmethod
    def games(
        cls,
        num_games: int = 25,
        *,
        game_seconds: float = 300.0,
        overtime: bool = True,
        max_overtime_seconds: float = 300.0,
        replay_games: tuple[int, ...] | str = (),
        replay_dir: str | None = None,
        num_arenas: int | None = None,
        blue_size: int = 1,
        orange_size: int = 1,
        **arena_settings: Any,
    ) -> MatchConfig:
        """A match of `num_games` games in min(num_games, 64) arenas (or `num_arenas`) of `blue_size` v
        `orange_size`; `arena_settings` are further EnvConfig fields (tick_skip, engine, stepping,
        num_workers, seed, kickoff_jitter)."""
        env = game_env_config(num_arenas or min(num_games, 64), blue_size, orange_size, **arena_settings)
        return cls(num_games, game_seconds, overtime, max_overtime_seconds, replay_games, replay_dir, env)


@dataclass
class GameRecord:
    """One finished game, from policy A's point of view."""

    index: int
    a_team: int
    """0: A played blue, 1: A played orange."""
    goals_a: int
    goals_b: int
    overtime: bool
    seconds: float
    """Game time played, overtime included."""


@dataclass
class MatchResult:
    """Outcome of a match, counted for policy A (draws count half in the win rate)."""

    name_a: str
    name_b: str
    wins: int = 0
    draws: int = 0
    losses: int = 0
    goals_for: int = 0
    goals_against: int = 0
    touches_for: int = 0
    touches_against: int = 0
    games: list[GameRecord] = field(default_factory=list)
    wall_seconds: float = 0.0

    @property
    def num_games(self) -> int:
        return self.wins + self.draws + self.losses

    def win_rate_interval(self, z: float = 1.96) -> tuple[float, float, float]:
        """(rate, low, high): win rate with draws as half a win and its Wilson score interval."""
        return win_rate_interval(self.wins, self.draws, self.losses, z)

    def add_game(self, record: GameRecord) -> None:
        """Count one finished game: its goals and its win, draw or loss (for A)."""
        self.games.append(record)
        self.goals_for += record.goals_a
        self.goals_against += record.goals_b
        if record.goals_a > record.goals_b:
            self.wins += 1
        elif record.goals_a < record.goals_b:
            self.losses += 1
        else:
            self.draws += 1

    def to_dict(self) -> dict:
        rate, low, high = self.win_rate_interval()
        data = asdict(self)
        data.update(num_games=self.num_games, win_rate=rate, win_rate_low=low, win_rate_high=high)
        return data

    def summary(self) -> str:
        rate, low, high = self.win_rate_interval()
        return (
            f"{self.name_a} vs {self.name_b}: {self.wins}W {self.draws}D {self.losses}L of {self.num_games}, "
            f"win rate {rate:.1%} (95% CI {low:.1%}-{high:.1%}), goals {self.goals_for}-{self.goals_against}, "
            f"touches {self.touches_for}-{self.touches_against}"
        )


def game_env_config(num_arenas: int, blue_size: int, orange_size: int, **settings: Any) -> EnvConfig:
    """Arenas for full games: every reset is a kickoff (spawns moved by up to `kickoff_jitter` uu, one of
    `settings`, the other EnvConfig fields) and only the game clock ends a game. Games pay no rewards (results
    come from the goals) unless `settings` names a rewards file."""
    game_rules = {"state_setter": {"kickoff": 1.0}, "episode_seconds": 0.0, "no_touch_seconds": 0.0}
    clash = sorted(set(settings) & set(game_rules))
    if clash:
        raise ValueError(f"{clash[0]}: full games always reset to kickoffs and end only by the clock")
    settings = {"rewards": str(no_rewards_path()), **settings}
    return EnvConfig(num_arenas=num_arenas, blue_size=blue_size, orange_size=orange_size, **game_rules, **settings)


def play_match(
    policy_a: Policy,
    policy_b: Policy,
    config: MatchConfig | None = None,
    name_a: str = "a",
    name_b: str = "b",
    device: str | torch.device = "cpu",
    env: BatchedEnv | None = None,
    on_step: Callable[[BatchedEnv], None] | None = None,
) -> MatchResult:
    """Play config.num_games full games of A against B; returns A's results.

    on_step(env) runs after every step (before any kickoff reset), e.g. to stream the game to a viewer.

    `env` reuses an existing BatchedEnv in place of `config.env` (its arenas, team sizes, tick skip and
    kickoff jitter are used); it is reseeded with `config.env.seed` and reset, not closed, so a match plays
    the same kickoffs whatever the env played before.
    """
    config = config or MatchConfig()
    device = torch.device(device)
    started = time.perf_counter()
    own_env = env is None
    if env is None:
        env = BatchedEnv(config.env, device=device)
    else:
        env.seed(config.env.seed)
    try:
        return _play(env, policy_a, policy_b, config, name_a, name_b, device, started, on_step)
    finally:
        if own_env:
            env.close()


def _both_sides_act(
    side_a: PolicyDriver, side_b: PolicyDriver, flat: torch.Tensor, a_cars: torch.Tensor
) -> torch.Tensor:
    """Controls (A*C, 8) of every car: policy A's where a_cars (A*C,) bool, policy B's elsewhere; flat (A*C, O)
    the observations."""
    controls = torch.zeros(flat.shape[0], 8, device=flat.device)
    a_index, b_index = torch.nonzero(a_cars).flatten(), torch.nonzero(~a_cars).flatten()
    if a_index.numel():
        controls[a_index] = side_a.act(flat, a_index)
    if b_index.numel():
        controls[b_index] = side_b.act(flat, b_index)
    return controls


def _play(
    env: BatchedEnv,
    policy_a: Policy,
    policy_b: Policy,
    config: MatchConfig,
    name_a: str,
    name_b: str,
    device: torch.device,
    started: float,
    on_step: Callable[[BatchedEnv], None] | None = None,
) -> MatchResult:
    a, n = env.num_arenas, env.num_cars
    step_seconds = arena_step_seconds(env.config.tick_skip)
    result = MatchResult(name_a, name_b)
    side_a, side_b = PolicyDriver(policy_a, a * n, device), PolicyDriver(policy_b, a * n, device)
    car_blue = (env.state.car_team == BLUE_TEAM).to(device)  # (A, C), fixed per arena
    arena_ids = torch.arange(a, device=device)
    # Arena i plays games i, i + A, i + 2A, ...; A plays blue in even-numbered games of each arena.
    game_index = arena_ids.clone()
    a_team = (arena_ids % 2).long()
    steps = torch.zeros(a, dtype=torch.long, device=device)  # game clock in steps
    regulation = math.ceil(config.game_seconds / step_seconds - 1e-9)
    overtime_cap = regulation + math.ceil(config.max_overtime_seconds / step_seconds - 1e-9)
    goals_a = torch.zeros(a, dtype=torch.long, device=device)
    goals_b = torch.zeros(a, dtype=torch.long, device=device)
    recorders = _Recorders(config, env, policy_names=(name_a, name_b))

    obs = env.reset().to(device)
    for i in range(a):
        recorders.start(i, int(game_index[i]), int(a_team[i]))
    while True:
        active = game_index < config.num_games
        if not bool(active.any()):
            break
        a_cars = torch.where(a_team.view(-1, 1) == 0, car_blue, ~car_blue).reshape(-1)  # (A*C,)
        controls = _both_sides_act(side_a, side_b, obs.reshape(a * n, -1), a_cars)
        before = env.state
        step = env.step_controls(controls.view(a, n, 8))
        state = step.state
        assert state is not None
        if on_step is not None:
            on_step(env)
        # Each state with the controls applied from it and the game clock it shows.
        recorders.append(before, controls.view(a, n, 8), config.game_seconds - steps.float() * step_seconds)
        steps += 1
        touched = state.car_touched_ball.to(device)
        a_touch = (touched & a_cars.view(a, n)).sum(dim=1)
        b_touch = (touched & ~a_cars.view(a, n)).sum(dim=1)
        result.touches_for += int(a_touch[active].sum())
        result.touches_against += int(b_touch[active].sum())
        scored = state.goal_scored.to(device)
        a_scored = (scored >= 0) & (scored == a_team)
        b_scored = (scored >= 0) & (scored != a_team)
        goals_a += a_scored.long()
        goals_b += b_scored.long()

        regulation_over = steps >= regulation
        level = goals_a == goals_b
        overtime_over = steps >= overtime_cap
        finished = regulation_over & (~level | (not config.overtime) | overtime_over)
        finished &= active
        kickoff = step.terminated.to(device) | finished
        # The goal (or the final whistle) before the reset.
        recorders.append_final(state, kickoff, config.game_seconds - steps.float() * step_seconds)
        if bool(finished.any()):
            for i in torch.nonzero(finished).flatten().tolist():
                result.add_game(
                    GameRecord(
                        index=int(game_index[i]),
                        a_team=int(a_team[i]),
                        goals_a=int(goals_a[i]),
                        goals_b=int(goals_b[i]),
                        overtime=int(steps[i]) > regulation,
                        seconds=int(steps[i]) * step_seconds,
                    )
                )
                recorders.finish(i)
            # Next game of these arenas: sides swap, clock and score restart from a kickoff.
            game_index = torch.where(finished, game_index + a, game_index)
            a_team = torch.where(finished, 1 - a_team, a_team)
            steps = steps * ~finished
            goals_a = goals_a * ~finished
            goals_b = goals_b * ~finished
            obs_all = env.reset_arenas(finished & ~step.terminated.to(device))
            obs = obs_all.to(device)
            for i in torch.nonzero(finished).flatten().tolist():
                if int(game_index[i]) < config.num_games:
                    recorders.start(i, int(game_index[i]), int(a_team[i]))
        else:
            obs = step.obs.to(device)
        if bool(kickoff.any()):
            starts = kickoff.repeat_interleave(n)
            side_a.reset(starts)
            side_b.reset(starts)
    result.games.sort(key=lambda g: g.index)
    result.wall_seconds = time.perf_counter() - started
    return result


class _Recorders:
    """Replay recorders of the games chosen in MatchConfig.replay_games, one per arena at a time."""

    def __init__(self, config: MatchConfig, env: BatchedEnv, policy_names: tuple[str, str]) -> None:
        self.config = config
        self.env = env
        self.names = policy_names
        self.active: dict[int, tuple[object, int, int]] = {}

    def _wanted(self, game: int) -> bool:
        chosen = self.config.replay_games
        return chosen == "all" or (not isinstance(chosen, str) and game in chosen)

    def start(self, arena: int, game: int, a_team: int) -> None:
        if game >= self.config.num_games or not self._wanted(game):
            self.active.pop(arena, None)
            return
        from rocketrl.league.replay import ReplayRecorder

        cfg = self.env.config
        recorder = ReplayRecorder(self.env.num_cars, cfg.blue_size, cfg.orange_size, cfg.tick_skip)
        self.active[arena] = (recorder, game, a_team)

    def append(self, state, controls: torch.Tensor, clock: torch.Tensor) -> None:
        """Record each active arena's state, the controls (A, C, 8) applied from it and its clock (A,) seconds."""
        for arena, (recorder, _, _) in self.active.items():
            recorder.append_from_state(state, arena, controls[arena], float(clock[arena]))  # type: ignore[attr-defined]

    def append_final(self, state, ended: torch.Tensor, clock: torch.Tensor) -> None:
        """The state `ended` (A,) arenas ended a step in, before the kickoff reset, with its goal event."""
        for arena, (recorder, _, _) in self.active.items():
            if bool(ended[arena]):
                recorder.append_final_from_state(state, arena, float(clock[arena]))  # type: ignore[attr-defined]

    def finish(self, arena: int) -> None:
        entry = self.active.pop(arena, None)
        if entry is None or self.config.replay_dir is None:
            return
        recorder, game, a_team = entry
        blue, orange = self.names if a_team == 0 else self.names[::-1]
        path = Path(self.config.replay_dir) / f"game_{game:04d}.safetensors"
        recorder.save(path, blue_policy=blue, orange_policy=orange, game=game, seed=self.config.env.seed)  # type: ignore[attr-defined]
