"""Full 1v1 games in RocketSim in which an exported bot folder's own agent (its `get_output`) plays through RLBot
v5 GamePackets written the game's way (rocketrl.export.game_packets), and its ControllerStates drive its car.

A game runs as Rocket League runs one: a countdown with the cars held at their spawns (packets in the Countdown
phase), a kickoff (Kickoff until the ball is touched, then Active), a goal followed by GoalScored and Replay
packets, the next kickoff, the clock running only while the ball is in play, overtime when level. The bot sees
every frame but a few: some packets never reach it (the interface hands a bot only the latest packet, so a slow
bot skips frames) and some reach it twice; its last ControllerState holds until it sends another. The opponent
(any rocketrl Policy) acts every tick_skip ticks on rocketrl's own observation. Wherever the bot makes a choice,
the same checkpoint's policy is asked directly on rocketrl's observation of the same state, and the two are
compared.
"""

from __future__ import annotations

import importlib
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rocketrl.env.obs import (
    CAR_DEMOLISHED,
    NUM_OTHER_SLOTS,
    OTHER_DEMOLISHED,
    OTHER_SIZE,
    OTHERS,
    DefaultObs,
    field_name,
)
from rocketrl.env.setters import KickoffSetter
from rocketrl.export.game_packets import PacketWriter, field_info
from rocketrl.league.ratings import win_rate_interval
from rocketrl.policy.base import Policy, to_controls
from rocketrl.sim.arena import DEFAULT_TICK_SKIP, TICK_TIME


@dataclass
class PacketGameConfig:
    """How the packet games are played."""

    num_games: int = 100
    """Games to play; the bot plays blue in even games and orange in odd ones."""
    game_seconds: float = 120.0
    """Game clock, seconds of play."""
    kickoff_jitter: float = 5.0
    """Spawns moved by up to this many uu (rocketrl.env.setters.KickoffSetter)."""
    num_arenas: int = 10
    """Games played side by side."""
    seed: int = 0
    countdown_seconds: float = 3.0
    """Countdown before each kickoff, cars held."""
    goal_seconds: float = 3.0
    """GoalScored and then Replay after a goal, half each."""
    max_overtime_seconds: float = 120.0
    """Overtime longer than this ends level (a draw)."""
    drop_probability: float = 0.02
    """Chance a packet never reaches the bot."""
    repeat_probability: float = 0.02
    """Chance a packet reaches the bot twice."""


COUNTDOWN, KICKOFF, ACTIVE, GOAL = range(4)


def import_bot_module(folder: Path, module: str) -> Any:
    """Module `module` ("agent", "packet", ...) of an exported folder's rocketrl_bot, imported from that folder's
    own files (any rocketrl_bot imported before, from another folder, is forgotten first)."""
    for name in [m for m in sys.modules if m == "rocketrl_bot" or m.startswith("rocketrl_bot.")]:
        del sys.modules[name]
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(f"rocketrl_bot.{module}")
    finally:
        sys.path.remove(str(folder))


@dataclass
class _Game:
    """One arena's game in progress."""

    bot: Any
    bot_car: int
    phase: int = COUNTDOWN
    phase_ticks: int = 0
    clock: float = 0.0
    overtime: float = -1.0
    blue: int = 0
    orange: int = 0
    over: bool = False
    """Decided: ends once its goal replay has run (a goal in overtime), or now."""
    recorded: bool = False


class PacketGames:
    """Plays PacketGameConfig.num_games games of an exported bot against `opponent`, `direct` being the checkpoint's
    policy asked on rocketrl's observation of every state where the bot chooses."""

    def __init__(self, folder: Path, opponent: Policy, direct: Policy | None, config: PacketGameConfig) -> None:
        from rocketrl.sim.rocketsim import RocketSimEngine

        self.config, self.opponent, self.direct = config, opponent, direct
        self.bot_class = import_bot_module(Path(folder), "agent").RocketrlBot
        self.engine = RocketSimEngine(config.num_arenas, 1, 1, tick_skip=1, stepping="serial")
        self.block = self.engine._blocks[0]  # the RocketSim objects the packets are written from
        self.obs = DefaultObs(1, 1)
        self.setter = KickoffSetter(1, 1, jitter=config.kickoff_jitter)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.random = random.Random(config.seed)
        self.field = field_info()
        self.prev = torch.zeros(config.num_arenas, 2, 8)
        self.controls = torch.zeros(config.num_arenas, 2, 8)
        self.writers = [PacketWriter(2) for _ in range(config.num_arenas)]
        self.frame = 0
        self.started = 0
        self.games: list[_Game | None] = [None] * config.num_arenas
        self.results: list[dict] = []
        self.counts = {"packets": 0, "dropped": 0, "repeated": 0, "repeats_answered_alike": 0}
        self.decisions = {"compared": 0, "same_action": 0}
        self.differences: list[dict] = []

    def new_bot(self, car: int) -> Any:
        bot = self.bot_class(default_agent_id="rocketrl/packet-loop")
        bot.index, bot.team, bot.field_info = car, car, self.field
        bot.initialize()
        return bot

    def kickoff(self, arenas: list[int]) -> None:
        mask = torch.zeros(self.config.num_arenas, dtype=torch.bool)
        mask[arenas] = True
        self.engine.reset(mask, lambda k: self.setter(k, self.generator))
        for k in arenas:
            self.games[k].phase, self.games[k].phase_ticks = COUNTDOWN, 0
            self.prev[k] = 0.0
            self.controls[k] = 0.0

    def start_games(self) -> None:
        fresh = []
        for k in range(self.config.num_arenas):
            game = self.games[k]
            if (game is None or game.recorded) and self.started < self.config.num_games:
                car = self.started % 2
                self.games[k] = _Game(self.new_bot(car), car, clock=self.config.game_seconds)
                self.started += 1
                fresh.append(k)
            elif game is not None and game.recorded:
                self.games[k] = None
        if fresh:
            self.kickoff(fresh)

    def phase_flat(self, game: _Game) -> Any:
        from rlbot import flat

        if game.phase == GOAL:
            half = int(self.config.goal_seconds / 2 / TICK_TIME)
            return flat.MatchPhase.GoalScored if game.phase_ticks < half else flat.MatchPhase.Replay
        return (flat.MatchPhase.Countdown, flat.MatchPhase.Kickoff, flat.MatchPhase.Active)[game.phase]

    def deliver(self, k: int, game: _Game) -> None:
        """The bot's packet of this frame (or none, or twice); its controls into self.controls."""
        block = self.block
        clock = game.clock if game.overtime < 0 else game.overtime
        packet = self.writers[k].packet(
            block.arenas[k], block.cars[k], [0, 1], block.pads[k], self.frame, self.frame, self.phase_flat(game),
            seconds_remaining=clock,
        )  # fmt: skip
        self.counts["packets"] += 1
        draw = self.random.random()
        if draw < self.config.drop_probability:
            self.counts["dropped"] += 1
            return
        before = game.bot.next_frame
        prev_controls = game.bot.prev_controls.copy()
        out = game.bot.get_output(packet)
        chose = game.bot.next_frame != before and game.phase in (KICKOFF, ACTIVE)
        if draw < self.config.drop_probability + self.config.repeat_probability:
            self.counts["repeated"] += 1
            again = game.bot.get_output(packet)
            self.counts["repeats_answered_alike"] += _controller(again) == _controller(out)
        values = torch.tensor(_controller(out), dtype=torch.float32)
        self.controls[k, game.bot_car] = values
        if chose:
            self.prev[k, game.bot_car] = torch.from_numpy(game.bot.prev_controls)
            if self.direct is not None:
                self.compare(k, game, packet, prev_controls, game.bot.prev_controls)

    def compare(self, k: int, game: _Game, packet: Any, prev_controls: np.ndarray, chosen: np.ndarray) -> None:
        """The checkpoint's own choice on rocketrl's observation of this state, against the bot's."""
        prev = self.prev[k : k + 1].clone()
        prev[0, game.bot_car] = torch.from_numpy(prev_controls)
        obs = self.obs.build(self.engine.state.index(torch.tensor([k])), prev)[0, game.bot_car]
        action, _ = self.direct.act(obs[None], None)
        direct = to_controls(self.direct.action_kind, action)[0].numpy()
        self.decisions["compared"] += 1
        same = bool(np.array_equal(direct, chosen))
        self.decisions["same_action"] += same
        if not same:
            self.differences.append(explain_difference(game.bot, packet, prev_controls, obs.numpy(), direct, chosen))

    def opponent_acts(self) -> None:
        """The opponent's controls in the arenas where it chooses this tick (every tick_skip ticks of play)."""
        due = [
            k for k, g in enumerate(self.games)
            if g is not None and g.phase in (KICKOFF, ACTIVE) and g.phase_ticks % DEFAULT_TICK_SKIP == 0
        ]  # fmt: skip
        if not due:
            return
        obs = self.obs.build(self.engine.state, self.prev)
        cars = torch.tensor([1 - self.games[k].bot_car for k in due])
        arenas = torch.tensor(due)
        action, _ = self.opponent.act(obs[arenas, cars], None)
        self.controls[arenas, cars] = to_controls(self.opponent.action_kind, action)
        self.prev[arenas, cars] = self.controls[arenas, cars]

    def after_step(self, state: Any) -> None:
        ended, kickoffs = [], []
        for k, game in enumerate(self.games):
            if game is None:
                continue
            game.phase_ticks += 1
            if game.phase == COUNTDOWN and game.phase_ticks >= int(self.config.countdown_seconds / TICK_TIME):
                game.phase, game.phase_ticks = KICKOFF, 0
            elif game.phase in (KICKOFF, ACTIVE):
                if game.phase == KICKOFF and bool(state.car_touched_ball[k].any()):
                    game.phase = ACTIVE
                if game.overtime >= 0:
                    game.overtime += TICK_TIME
                else:
                    game.clock -= TICK_TIME
                goal = int(state.goal_scored[k])
                if goal >= 0:
                    game.blue += goal == 0
                    game.orange += goal == 1
                    game.phase, game.phase_ticks = GOAL, 0
                    game.over = game.overtime >= 0
                elif game.overtime < 0 and game.clock <= 0:
                    if game.blue != game.orange:
                        game.over = True
                        ended.append(k)
                    else:
                        game.overtime = 0.0
                elif game.overtime > self.config.max_overtime_seconds:
                    game.over = True
                    ended.append(k)
            elif game.phase == GOAL and game.phase_ticks >= int(self.config.goal_seconds / TICK_TIME):
                if game.over or (game.overtime < 0 and game.clock <= 0 and game.blue != game.orange):
                    game.over = True
                    ended.append(k)
                else:
                    kickoffs.append(k)
        for k in ended:
            game = self.games[k]
            game.recorded = True
            mine, theirs = (game.blue, game.orange) if game.bot_car == 0 else (game.orange, game.blue)
            self.results.append({"bot_team": game.bot_car, "goals_for": mine, "goals_against": theirs})
        if kickoffs:
            self.kickoff(kickoffs)
        if ended:
            self.start_games()

    def play(self) -> dict:
        started = time.perf_counter()
        self.start_games()
        try:
            while any(g is not None for g in self.games):
                for k, game in enumerate(self.games):
                    if game is None or game.recorded:
                        continue
                    if game.phase not in (KICKOFF, ACTIVE):
                        self.controls[k] = 0.0
                    self.deliver(k, game)
                self.opponent_acts()
                state = self.engine.step(self.controls)
                self.frame += 1
                self.after_step(state)
        finally:
            self.engine.close()
        return self.report(time.perf_counter() - started)

    def report(self, seconds: float) -> dict:
        wins = sum(r["goals_for"] > r["goals_against"] for r in self.results)
        losses = sum(r["goals_for"] < r["goals_against"] for r in self.results)
        draws = len(self.results) - wins - losses
        rate, low, high = win_rate_interval(wins, draws, losses)
        compared = self.decisions["compared"]
        return {
            "games": len(self.results),
            "wins": wins,
            "draws": draws,
            "losses": losses,
            "goals_for": sum(r["goals_for"] for r in self.results),
            "goals_against": sum(r["goals_against"] for r in self.results),
            "win_rate": rate,
            "win_rate_low": low,
            "win_rate_high": high,
            "decisions_compared": compared,
            "same_action": self.decisions["same_action"],
            "agreement": self.decisions["same_action"] / compared if compared else None,
            "differences": summarize_differences(self.differences),
            **self.counts,
            "wall_seconds": round(seconds, 1),
        }


def _controller(c: Any) -> tuple:
    return (c.throttle, c.steer, c.pitch, c.yaw, c.roll, float(c.jump), float(c.boost), float(c.handbrake))


def explain_difference(bot: Any, packet: Any, prev_controls: np.ndarray, direct_obs: np.ndarray,
                       direct_controls: np.ndarray, chosen: np.ndarray) -> dict:  # fmt: skip
    """Why the bot chose `chosen` (8,) where the checkpoint chose `direct_controls` (8,) on one state.
    `observation_gap`: the largest difference between the observation the bot read from the packet and rocketrl's
    `direct_obs` (floats); `fields`: the names of the floats that differ by more than 1e-3, largest first (at most
    five; rocketrl.env.obs.field_name); `read`: each such field as [what the bot read, rocketrl's value];
    `demolished`: the bot's car was demolished (its controls do nothing until it respawns); `others_demolished`:
    the other cars' slots ("other[j]") that were demolished on rocketrl's observation; `only_in_a_wreck`: every
    float that differs by more than 1e-3 (not only the five listed) belongs to one of them (a wreck's orientation is
    RocketSim's CarState in a packet and its gym row in training, which differ while it waits to respawn). `cause`:
    'observation' where the bot's own network on rocketrl's observation chooses as the checkpoint did (what it read
    made the difference), else 'arithmetic' (its numpy network and torch differ on the same input). `margin`: on
    rocketrl's observation, the bot's network's logit gap between the two choices (how near a tie it was). Cause
    and margin only for discrete bots without recurrent state (else None): asking an LSTM again would advance it."""
    policy = bot.policy
    bot_obs = bot.observe(packet, prev_controls)
    diff = np.abs(bot_obs.astype(np.float64) - direct_obs.astype(np.float64))
    order = [int(i) for i in np.argsort(-diff, kind="stable")[:5] if diff[i] > 1e-3]
    wrecks = demolished_others(direct_obs)
    differing = [field_name(int(i)).split(".")[0] for i in np.flatnonzero(diff > 1e-3)]
    seen = {
        "observation_gap": float(diff.max()),
        "fields": [field_name(i) for i in order],
        "read": {field_name(i): [float(bot_obs[i]), float(direct_obs[i])] for i in order},
        "demolished": bool(direct_obs[CAR_DEMOLISHED] > 0.5),
        "others_demolished": wrecks,
        "only_in_a_wreck": bool(differing) and all(slot in wrecks for slot in differing),
    }
    if not policy.discrete or policy.lstm is not None:
        return {**seen, "cause": None, "margin": None}
    logits = policy.logits(direct_obs[None].astype(np.float32))[0]

    def best(controls: np.ndarray) -> float:
        return float(logits[(policy.table == controls[None]).all(-1)].max())

    own = policy.table[int(logits.argmax())]
    cause = "observation" if np.array_equal(own, direct_controls) else "arithmetic"
    return {**seen, "cause": cause, "margin": abs(best(direct_controls) - best(chosen))}


def demolished_others(obs: np.ndarray) -> list[str]:
    """The other cars' slot names ("other[j]", rocketrl.env.obs.field_name's prefix) demolished in `obs` (OBS_SIZE,)."""
    slots = obs[OTHERS].reshape(NUM_OTHER_SLOTS, OTHER_SIZE)
    return [f"other[{j}]" for j in range(NUM_OTHER_SLOTS) if slots[j, OTHER_DEMOLISHED] > 0.5]


DIFFERENCES_LISTED = 20
"""How many differing choices a report lists one by one (with what the bot read), the first ones of the run."""


def summarize_differences(differences: list[dict]) -> dict:
    """Counts by cause and by differing observation field, how many came while the bot's car was demolished (where
    its controls do nothing), how many differ only in a demolished opponent's or teammate's wreck
    (`only_in_a_wreck`), the largest observation gap and logit margin over the differing choices, and the first
    DIFFERENCES_LISTED of them as explain_difference gave them (`each`)."""
    gaps = [d["observation_gap"] for d in differences]
    margins = [d["margin"] for d in differences if d["margin"] is not None]
    fields = Counter(name for d in differences for name in d["fields"])
    return {
        "count": len(differences),
        "by_cause": dict(Counter(str(d["cause"]) for d in differences)),
        "by_field": dict(fields.most_common()),
        "while_demolished": sum(d["demolished"] for d in differences),
        "only_in_a_wreck": sum(d["only_in_a_wreck"] for d in differences),
        "largest_observation_gap": max(gaps) if gaps else None,
        "largest_margin_logits": max(margins) if margins else None,
        "margins_logits": sorted(round(m, 6) for m in margins),
        "each": differences[:DIFFERENCES_LISTED],
    }
