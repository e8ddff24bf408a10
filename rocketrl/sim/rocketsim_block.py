"""A block of RocketSim arenas and the numpy rows they read into. No torch here: blocks also run
inside worker processes.

One arena's row in the flat float32 state buffer (see `StateLayout`):
  header (4): game_mode, ball_last_car_hit_id, blue_score, orange_score
  pad_active (34), pad_timer (34, seconds)
  ball (25): RocketSim's gym ball row (pos 0:3, quat 3:7, vel 7:10, ang_vel 10:13, rotation 13:22, pyr 22:25)
  events (2 + 4C): goal_scored (-1/0/1), last_touch_index (-1 or car), then per car C touched,
                   C was_demolished, C demolitions made, C boost pickups
  cars (C x 40): RocketSim's 36-column gym car row, then has_jumped, has_double_jumped, has_flipped,
                 air_time_since_jump
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from rocketrl.sim.arena import (
    BOOST_PAD_COOLDOWN_BIG,
    BOOST_PAD_COOLDOWN_SMALL,
    BOOST_PADS,
    NUM_BOOST_PADS,
    RESET_ON_GROUND_MAX_Z,
    RESET_ON_GROUND_MIN_UP_Z,
    RESPAWN_X_BLUE,
    TICK_TIME,
    respawn_spot,
)
from rocketrl.sim.engine_base import CONTROL_WIDTH

GYM_BALL_WIDTH = 25
GYM_CAR_WIDTH = 36
RAW_CAR_WIDTH = 40
# Columns of a gym car row.
GC_DEMOS, GC_PICKUPS, GC_DEMOED, GC_GROUND, GC_HIT, GC_BOOST = 5, 6, 7, 8, 9, 10
GC_POS, GC_VEL, GC_ANG_VEL, GC_FORWARD, GC_UP = 11, 18, 21, 24, 30
GB_POS, GB_VEL, GB_ANG_VEL = 0, 7, 10
CX_HAS_JUMPED, CX_HAS_DOUBLE_JUMPED, CX_HAS_FLIPPED, CX_AIR_TIME_SINCE_JUMP = 36, 37, 38, 39
RESET_BALL_WIDTH = 9  # pos, vel, ang_vel
RESET_CAR_WIDTH = 13  # pos, vel, ang_vel, (pitch, yaw, roll), boost
RESET_ORDER_WIDTH = 1  # 1: blue cars are added to the arena first, 0: orange first (see ArenaBlock._add_cars)
CONTROLS_CACHE_SIZE = 4096  # distinct control rows whose CarControls a block keeps
_ROW_KEY = np.dtype((np.void, 4 * CONTROL_WIDTH))  # one float32 control row as a hashable bytes key


@dataclass(frozen=True)
class StateLayout:
    """Column offsets of one arena's row in the flat state buffer."""

    num_cars: int
    pads: int = 4
    pad_timers: int = 4 + NUM_BOOST_PADS
    ball: int = 4 + 2 * NUM_BOOST_PADS
    events: int = 4 + 2 * NUM_BOOST_PADS + GYM_BALL_WIDTH

    @property
    def cars(self) -> int:
        return self.events + 2 + 4 * self.num_cars

    @property
    def width(self) -> int:
        return self.cars + RAW_CAR_WIDTH * self.num_cars

    def reset_width(self) -> int:
        return RESET_BALL_WIDTH + RESET_CAR_WIDTH * self.num_cars + RESET_ORDER_WIDTH

    def reset_order_column(self) -> int:
        """Column of the reset row that says which team's cars are added first."""
        return RESET_BALL_WIDTH + RESET_CAR_WIDTH * self.num_cars


_PAD_COOLDOWN = np.array(
    [BOOST_PAD_COOLDOWN_BIG if big else BOOST_PAD_COOLDOWN_SMALL for *_, big in BOOST_PADS], dtype=np.float32
)


class ArenaBlock:
    """Arenas lo..hi-1 of an engine: applies controls, steps, reads state rows, derives events.

    `state`, `controls` and `reset_rows` are the engine's whole buffers (plain or shared memory);
    the block touches only its own rows.
    """

    def __init__(
        self,
        lo: int,
        hi: int,
        blue_size: int,
        orange_size: int,
        seed: int,
        state: np.ndarray,
        controls: np.ndarray,
        reset_rows: np.ndarray,
    ) -> None:
        import RocketSim

        from rocketrl.sim.meshes import init_rocketsim

        init_rocketsim()
        self._rs = RocketSim
        self.lo, self.hi = lo, hi
        self.blue_size, self.orange_size = blue_size, orange_size
        self.num_cars = blue_size + orange_size
        self.layout = StateLayout(self.num_cars)
        self.arenas = []
        self.cars: list[list] = []
        n = hi - lo
        # RocketSim resolves car-car contacts (bumps, 50/50s) in the order cars were added, which
        # favours one of two cars meeting head on; which team goes first is drawn at every reset.
        # gym_row[k, c]: row of our car c in arena k's gym state (rows follow the order of adding);
        # car_of_slot[k, i]: our index of the i-th car added (its id minus the first id).
        self.gym_row = np.zeros((n, self.num_cars), dtype=np.intp)
        self.car_of_slot = np.zeros((n, self.num_cars), dtype=np.float32)
        self.first_car_id = np.zeros(n, dtype=np.float32)
        self._flat_cars: list = [None] * (n * self.num_cars)  # every car, arena by arena, in our order
        for k in range(n):
            arena = RocketSim.Arena(RocketSim.GameMode.SOCCAR)
            self.arenas.append(arena)
            self.cars.append([])
            self._add_cars(k, blue_first=True)
        self._controls_cache: dict[bytes, object] = {}
        self._tick_time = np.float32(self.arenas[0].tick_time) if self.arenas else np.float32(TICK_TIME)
        self.pads = [arena.get_boost_pads() for arena in self.arenas]
        self.state = state[lo:hi]
        self.raw_cars = self.state[:, self.layout.cars :].reshape(hi - lo, self.num_cars, RAW_CAR_WIDTH)
        self.controls = controls[lo:hi]
        self.reset_rows = reset_rows[lo:hi]
        n = hi - lo
        self.prev_scores = np.zeros((n, 2), dtype=np.float32)
        self.prev_demos = np.zeros((n, self.num_cars), dtype=np.float32)
        self.prev_pickups = np.zeros((n, self.num_cars), dtype=np.float32)
        self.prev_demoed = np.zeros((n, self.num_cars), dtype=np.float32)
        self.last_touch = np.full(n, -1.0, dtype=np.float32)
        self.prev_pad_active = np.ones((n, NUM_BOOST_PADS), dtype=bool)
        for k, arena in enumerate(self.arenas):
            arena.reset_kickoff(seed + lo + k)
        self.read_reset(np.arange(n))

    def _add_cars(self, k: int, blue_first: bool) -> None:
        """Add arena k's cars, blue ones first or orange ones first; self.cars[k] keeps our car order
        (blue cars, then orange cars) either way, and the id and gym-row maps follow."""
        rs, arena = self._rs, self.arenas[k]
        blue = list(range(self.blue_size))
        orange = list(range(self.blue_size, self.num_cars))
        order = blue + orange if blue_first else orange + blue
        cars: list = [None] * self.num_cars
        for slot, c in enumerate(order):
            cars[c] = arena.add_car(rs.Team.BLUE if c < self.blue_size else rs.Team.ORANGE)
            self.gym_row[k, c] = 3 + slot
            self.car_of_slot[k, slot] = c
        self.cars[k] = cars
        self._flat_cars[k * self.num_cars : (k + 1) * self.num_cars] = cars
        self.first_car_id[k] = cars[order[0]].id

    def _respawn_cars(self, k: int, blue_first: bool) -> None:
        """Replace arena k's cars by new ones: RocketSim keeps physics state (wheels, suspension)
        that CarState does not cover, so a reset with the old cars would depend on their history."""
        arena = self.arenas[k]
        for car in self.cars[k]:
            arena.remove_car(car)
        self._add_cars(k, blue_first)

    # ------------------------------------------------------------------------------------ step
    def step(self, ticks: int, use_multi_step: bool = False) -> None:
        """Apply this block's controls, advance every arena `ticks` ticks, read the new state.

        An arena where a demolished car respawns during the step is stepped to the end of that car's respawn tick,
        the car is moved to the spot `respawn_spot` names, and the arena steps on (see `_step_respawning`)."""
        self.apply_controls()
        due = self._respawns_due(ticks)
        plain = [arena for k, arena in enumerate(self.arenas) if k not in due] if due else self.arenas
        if use_multi_step:
            self._rs.Arena.multi_step(plain, ticks)
        else:
            for arena in plain:
                arena.step(ticks)
        for k, respawns in due.items():
            self._step_respawning(k, ticks, respawns)
        self.read_all(dt=ticks * TICK_TIME)

    def _respawns_due(self, ticks: int) -> dict[int, list[tuple[int, int]]]:
        """{arena k (local): [(j, c), ...]}: the demolished cars c (our order) of arena k that respawn in tick j
        (1..ticks) of the next step, from their respawn timers as RocketSim counts them down (float32, one tick
        length a tick, respawn when it reaches 0)."""
        ks, cs = np.nonzero(self.raw_cars[:, :, GC_DEMOED] > 0.5)
        due: dict[int, list[tuple[int, int]]] = {}
        for k, c in zip(ks.tolist(), cs.tolist()):
            timer = np.float32(self.cars[k][c].get_state().demo_respawn_timer)
            for j in range(1, ticks + 1):
                timer = max(np.float32(timer - self._tick_time), np.float32(0.0))
                if timer == 0.0:
                    due.setdefault(k, []).append((j, c))
                    break
        return due

    def _step_respawning(self, k: int, ticks: int, respawns: list[tuple[int, int]]) -> None:
        """Step arena k `ticks` ticks, stopping after each respawn tick j to move car c to its spot.

        RocketSim respawns a car at one of four spots drawn from a random engine seeded by the clock (Car::Respawn
        with seed -1), so no seed reproduces a game with a demolition, and no other engine can follow it. The car
        sits at its spot through the respawn tick (RocketSim disables its body for that tick), so moving it along
        x to the spot `respawn_spot` names (the spots differ only in x) is the respawn RocketSim would have made
        there; the warp engine follows the same rule."""
        arena, done = self.arenas[k], 0
        for j, c in sorted(respawns):
            if j > done:
                arena.step(j - done)
                done = j
            car = self.cars[k][c]
            state = car.get_state()
            if state.is_demoed:  # not seen: the countdown above is RocketSim's own arithmetic
                warnings.warn(
                    f"arena {self.lo + k}: car {c} did not respawn in tick {j} of the step as its timer said; "
                    "RocketSim will respawn it at a spot of its own random draw (this game will not replay exactly)",
                    RuntimeWarning,
                    stacklevel=2,
                )
                continue
            x = RESPAWN_X_BLUE[respawn_spot(arena.tick_count - 1, c)]
            state.pos = self._rs.Vec(x if c < self.blue_size else -x, state.pos.y, state.pos.z)
            car.set_state(state)
        if ticks > done:
            arena.step(ticks - done)

    def step_raw(self, ticks: int, use_multi_step: bool = False) -> None:
        """Advance every arena with the controls already set; read nothing (for benchmarks: respawns stay
        RocketSim's random draw)."""
        if use_multi_step:
            self._rs.Arena.multi_step(self.arenas, ticks)
        else:
            for arena in self.arenas:
                arena.step(ticks)

    def apply_controls(self) -> None:
        """Hand every car its row of `controls`. Rows repeat (a discrete action table has 90), so the
        CarControls made for a row is kept, keyed by the row's bytes, up to CONTROLS_CACHE_SIZE rows."""
        keys = np.ascontiguousarray(self.controls).reshape(-1, CONTROL_WIDTH).view(_ROW_KEY).ravel().tolist()
        cache = self._controls_cache
        for car, key in zip(self._flat_cars, keys):
            ctl = cache.get(key)
            if ctl is None:
                ctl = self._make_controls(key)
                if len(cache) < CONTROLS_CACHE_SIZE:
                    cache[key] = ctl
            car.set_controls(ctl)

    def _make_controls(self, key: bytes) -> object:
        row = np.frombuffer(key, dtype=np.float32).tolist()
        ctl = self._rs.CarControls()
        ctl.throttle, ctl.steer, ctl.pitch, ctl.yaw, ctl.roll = row[0], row[1], row[2], row[3], row[4]
        ctl.jump = row[5] > 0.5
        ctl.boost = row[6] > 0.5
        ctl.handbrake = row[7] > 0.5
        return ctl

    # ------------------------------------------------------------------------------------ readout
    def read_all(self, dt: float) -> None:
        """Read every arena of the block after a step of `dt` seconds and derive its events."""
        self._read(list(range(len(self.arenas))))
        self._derive_events(np.arange(len(self.arenas)), reset=False, dt=dt)

    def read_reset(self, ks: np.ndarray) -> None:
        """Read the arenas ks (local indices) just reset: their events are cleared, others untouched."""
        self._read(ks.tolist())
        self._derive_events(ks, reset=True, dt=0.0)

    def _read(self, ks: list[int]) -> None:
        """Copy the gym state and jump flags of arenas ks (local indices, ascending, distinct) into their
        state rows; when ks holds every arena, it is the whole block in order.

        Each arena's gym state is a handful of small arrays; they are gathered with one np.array call
        per kind (a C loop) rather than copied arena by arena, which costs several times more.
        """
        if not ks:
            return
        lay, n = self.layout, self.num_cars
        gyms = [self.arenas[k].get_gym_state() for k in ks]
        if len(ks) == len(self.arenas):
            rows: slice | np.ndarray = slice(None)
            gym_row = self.gym_row
        else:
            rows = np.asarray(ks, dtype=np.intp)
            gym_row = self.gym_row[rows]
        header = np.array([g[0] for g in gyms])  # (K, 4)
        pads = np.array([g[1] for g in gyms])  # (K, 2, 34): as seen by blue, then mirrored
        ball = np.array([g[2] for g in gyms])  # (K, 2, 25)
        by_slot = np.array([g[3:] for g in gyms])[:, :, 0]  # (K, C, 36) in the order cars were added
        # (K, C, 36) in our car order: row k * C + slot of the flattened slots.
        flat_slot = (np.arange(len(ks))[:, None] * n + gym_row - 3).ravel()
        cars = by_slot.reshape(-1, GYM_CAR_WIDTH)[flat_slot].reshape(len(ks), n, GYM_CAR_WIDTH)
        self.state[rows, 0:4] = header
        self.state[rows, lay.pads : lay.pads + NUM_BOOST_PADS] = pads[:, 0]
        self.state[rows, lay.ball : lay.ball + GYM_BALL_WIDTH] = ball[:, 0]
        self.raw_cars[rows, :, :GYM_CAR_WIDTH] = cars
        # RocketSim clears every jump flag of a car on the ground that is not jumping; only other
        # cars need Car.get_state() (the flags are not in the gym state).
        jump_held = self.controls[rows, :, 5] > 0.5
        index, car = np.nonzero((cars[:, :, GC_GROUND] < 0.5) | jump_held)
        flags = np.zeros((len(ks), n, RAW_CAR_WIDTH - GYM_CAR_WIDTH), dtype=np.float32)
        if index.size:
            states = [self.cars[ks[i]][c].get_state() for i, c in zip(index.tolist(), car.tolist())]
            flags[index, car] = [
                (s.has_jumped, s.has_double_jumped, s.has_flipped, s.air_time_since_jump) for s in states
            ]
        self.raw_cars[rows, :, GYM_CAR_WIDTH:] = flags

    def _derive_events(self, ks: np.ndarray, reset: bool, dt: float) -> None:
        """Events of arenas ks (local indices) from counter differences since their last readout.

        After a reset the events are cleared and the counters become the new baseline.
        """
        lay, n = self.layout, self.num_cars
        state, cars = self.state[ks], self.raw_cars[ks]  # copies (fancy indexing); written back below
        scores = state[:, 2:4]
        demos, pickups, demoed = cars[:, :, GC_DEMOS], cars[:, :, GC_PICKUPS], cars[:, :, GC_DEMOED]
        hit = cars[:, :, GC_HIT]
        active = state[:, lay.pads : lay.pads + NUM_BOOST_PADS] > 0.5
        timers = state[:, lay.pad_timers : lay.pad_timers + NUM_BOOST_PADS]
        events = np.zeros((len(ks), 2 + 4 * n), dtype=np.float32)
        if reset:
            events[:, 0] = -1.0
            self.last_touch[ks] = -1.0
            timers = np.where(active, 0.0, timers)
        else:
            scored = scores - self.prev_scores[ks]
            events[:, 0] = np.where(scored[:, 0] > 0, 0.0, np.where(scored[:, 1] > 0, 1.0, -1.0))
            events[:, 2 : 2 + n] = hit
            events[:, 2 + n : 2 + 2 * n] = (demoed > 0.5) & (self.prev_demoed[ks] < 0.5)
            events[:, 2 + 2 * n : 2 + 3 * n] = demos - self.prev_demos[ks]
            events[:, 2 + 3 * n : 2 + 4 * n] = pickups - self.prev_pickups[ks]
            # Pad timers: a pad taken during this step starts its full cooldown (exact to within one step),
            # then counts down; it shows 0 once RocketSim makes it active again.
            taken = ~active & self.prev_pad_active[ks]
            counting = np.maximum(timers - dt, 0.0)
            timers = np.where(active, 0.0, np.where(taken, _PAD_COOLDOWN, counting))
            touched = hit.max(axis=1) > 0.5
            slot = np.clip(state[:, 1] - self.first_car_id[ks], 0, n - 1).astype(np.intp)
            toucher = self.car_of_slot[ks, slot]
            self.last_touch[ks] = np.where(touched, toucher, self.last_touch[ks])
        events[:, 1] = self.last_touch[ks]
        self.state[ks, lay.events : lay.cars] = events
        self.state[ks, lay.pad_timers : lay.pad_timers + NUM_BOOST_PADS] = timers
        self.prev_scores[ks] = scores
        self.prev_demos[ks] = demos
        self.prev_pickups[ks] = pickups
        self.prev_demoed[ks] = demoed
        self.prev_pad_active[ks] = active

    # ------------------------------------------------------------------------------------ reset
    def reset(self, mask: np.ndarray) -> None:
        """Put the arenas with mask[k] (k local) into the state written in their `reset_rows`."""
        rs = self._rs
        ks = np.flatnonzero(mask)
        if ks.size == 0:
            return
        rows = self.reset_rows[ks].astype(np.float64).tolist()
        order_column = self.layout.reset_order_column()
        for k, r in zip(ks.tolist(), rows):
            ball = rs.BallState()
            ball.pos, ball.vel, ball.ang_vel = rs.Vec(*r[0:3]), rs.Vec(*r[3:6]), rs.Vec(*r[6:9])
            self.arenas[k].ball.set_state(ball)
            self._respawn_cars(k, blue_first=r[order_column] > 0.5)
            for c, car in enumerate(self.cars[k]):
                o = RESET_BALL_WIDTH + RESET_CAR_WIDTH * c
                cs = rs.CarState()
                cs.pos, cs.vel, cs.ang_vel = (
                    rs.Vec(*r[o : o + 3]),
                    rs.Vec(*r[o + 3 : o + 6]),
                    rs.Vec(*r[o + 6 : o + 9]),
                )
                pitch, yaw, roll = r[o + 9 : o + 12]
                cs.rot_mat = rs.Angle(yaw, pitch, roll).as_rot_mat()
                # CarState starts on the ground; a car set in the air must read as airborne, with its flip
                cs.is_on_ground = r[o + 2] < RESET_ON_GROUND_MAX_Z and cs.rot_mat.up.z > RESET_ON_GROUND_MIN_UP_Z
                cs.boost = r[o + 12]
                car.set_state(cs)
                car.set_controls(rs.CarControls())
            for pad in self.pads[k]:
                pad.set_state(rs.BoostPadState())
        self.read_reset(ks)

    def reset_kickoff_native(self, mask: np.ndarray, seed: int) -> None:
        """RocketSim's own kickoff for the masked arenas (used to check our kickoff setter)."""
        for k in np.flatnonzero(mask).tolist():
            self.arenas[k].reset_kickoff(seed + self.lo + k)
        self.read_reset(np.flatnonzero(mask))
