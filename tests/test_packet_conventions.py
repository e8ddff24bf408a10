"""The exported bot reads RLBot v5 packets as the game writes them (rocketrl.export.game_packets): the dodge
window's -1, Jumping before the car leaves the ground, flip resets, demolitions, boost pad timers."""

from __future__ import annotations

import numpy as np
import pytest

flat = pytest.importorskip("rlbot.flat", reason="the export tests need the RLBot v5 package: pip install -e .[test]")

import RocketSim as rs  # noqa: E402
from export_helpers import make_checkpoint  # noqa: E402

from rocketrl.export.bundle import export_rlbot  # noqa: E402
from rocketrl.export.game_packets import PacketWriter, field_info  # noqa: E402
from rocketrl.export.packet_game import import_bot_module  # noqa: E402
from rocketrl.sim.meshes import init_rocketsim  # noqa: E402
from rocketrl.sim.rocketsim import DOUBLE_JUMP_MAX_DELAY  # noqa: E402


@pytest.fixture(scope="module")
def packet_mod(tmp_path_factory):
    """The exported folder's own packet reader."""
    tmp = tmp_path_factory.mktemp("conventions")
    return import_bot_module(export_rlbot(make_checkpoint(tmp), tmp / "bot"), "packet")


def player(**fields) -> flat.PlayerInfo:
    base = {"air_state": flat.AirState.OnGround, "dodge_timeout": -1.0, "demolished_timeout": -1.0, "team": 0}
    return flat.PlayerInfo(physics=flat.Physics(location=flat.Vector3(0.0, 0.0, 17.0)), **(base | fields))


def flags(packet_mod, *players: flat.PlayerInfo) -> tuple[list, list, list, list]:
    packet = flat.GamePacket(players=list(players), match_info=flat.MatchInfo(frame_num=10))
    pads = np.zeros(0, dtype=np.int64)
    arrays = packet_mod.read_packet(packet, list(range(len(players))), pads, flat.AirState.OnGround)
    return (
        arrays.car_on_ground.tolist(),
        arrays.car_has_jump.tolist(),
        arrays.car_has_flip.tolist(),
        arrays.car_demolished.tolist(),
    )


def test_a_car_past_its_dodge_window_has_no_flip(packet_mod) -> None:
    """The game sends dodge_timeout -1 once the window after a jump has run out: no flip. Inside the window, a
    positive timeout: a flip. After driving off a surface (no jump), -1 and a flip (a flip reset)."""
    expired = player(air_state=flat.AirState.InAir, has_jumped=True, dodge_timeout=-1.0)
    inside = player(air_state=flat.AirState.InAir, has_jumped=True, dodge_timeout=0.4)
    reset = player(air_state=flat.AirState.InAir, has_jumped=False, dodge_timeout=-1.0)
    used = player(air_state=flat.AirState.InAir, has_jumped=True, has_dodged=True, dodge_timeout=0.4)
    grounded = player()
    assert flags(packet_mod, expired, inside, reset, used, grounded)[2] == [False, True, True, False, False]


def test_a_demolished_car_reads_as_demolished_only_while_its_timeout_runs(packet_mod) -> None:
    assert flags(packet_mod, player(demolished_timeout=2.5), player(demolished_timeout=-1.0))[3] == [True, False]


def rocketsim_arena():
    init_rocketsim()
    arena = rs.Arena(rs.GameMode.SOCCAR)
    car = arena.add_car(rs.Team.BLUE)
    state = car.get_state()
    state.pos = rs.Vec(0.0, -2000.0, 17.0)
    car.set_state(state)
    return arena, car


def rocketsim_flags(s) -> tuple[bool, bool, bool]:
    """on ground, has jump, has flip as rocketrl's RocketSim engine reads them (rocketrl.sim.rocketsim)."""
    flip = (
        not s.is_on_ground
        and not s.has_double_jumped
        and not s.has_flipped
        and (not s.has_jumped or s.air_time_since_jump < DOUBLE_JUMP_MAX_DELAY)
    )
    return s.is_on_ground, s.is_on_ground and not s.has_jumped, flip


def test_a_jump_reads_as_in_training_tick_by_tick(packet_mod) -> None:
    """A car jumps from rest under low gravity, holds jump 8 ticks, stays in the air past its dodge window and
    lands: every tick's packet (Jumping from the jump's first tick, while the wheels still touch; dodge_timeout
    counting down, then -1) read through the bot's JumpTracker gives RocketSim's on-ground, has-jump and has-flip
    flags."""
    arena, car = rocketsim_arena()
    mutators = arena.get_mutator_config()
    mutators.gravity = rs.Vec(0.0, 0.0, -150.0)
    arena.set_mutator_config(mutators)
    pads = np.zeros(0, dtype=np.int64)
    writer, tracker = PacketWriter(1), packet_mod.JumpTracker()
    controls = rs.CarControls()
    seen_states, differ, expired = set(), [], 0
    for tick in range(600):
        controls.jump = 30 <= tick < 38
        car.set_controls(controls)
        arena.step(1)
        packet = writer.packet(arena, [car], [0], arena.get_boost_pads(), tick, 1000 + tick, flat.MatchPhase.Active)
        on_ground = tracker.on_ground(packet, [0], flat.AirState.OnGround, flat.AirState.Jumping)
        arrays = packet_mod.read_packet(packet, [0], pads, flat.AirState.OnGround, on_ground)
        seen_states.add(int(packet.players[0].air_state))
        expired += packet.players[0].has_jumped and packet.players[0].dodge_timeout == -1.0 and not on_ground[0]
        got = (bool(arrays.car_on_ground[0]), bool(arrays.car_has_jump[0]), bool(arrays.car_has_flip[0]))
        if got != rocketsim_flags(car.get_state()):
            differ.append((tick, got, rocketsim_flags(car.get_state())))
    assert not differ, differ[:5]
    assert expired > 0, "the car never outlived its dodge window in the air"
    assert {int(flat.AirState.OnGround), int(flat.AirState.Jumping), int(flat.AirState.InAir)} <= seen_states


def test_a_jump_seen_only_by_air_state_would_leave_the_ground_early(packet_mod) -> None:
    """Without the tracker, the first Jumping packets read as off the ground, which RocketSim's car is not."""
    arena, car = rocketsim_arena()
    writer = PacketWriter(1)
    controls = rs.CarControls()
    controls.jump = True
    car.set_controls(controls)
    arena.step(1)
    packet = writer.packet(arena, [car], [0], arena.get_boost_pads(), 0, 0, flat.MatchPhase.Active)
    assert packet.players[0].air_state == flat.AirState.Jumping and car.get_state().is_on_ground
    arrays = packet_mod.read_packet(packet, [0], np.zeros(0, dtype=np.int64), flat.AirState.OnGround)
    assert not arrays.car_on_ground[0]


def test_boost_pad_timers_count_up_from_pickup() -> None:
    """BoostPadState.timer: seconds since pickup, 0 while active; pads in FieldInfo's order."""
    arena, car = rocketsim_arena()
    pads = arena.get_boost_pads()
    big = next(i for i, p in enumerate(pads) if p.is_big)
    state = car.get_state()
    state.pos = pads[big].get_pos()
    state.pos = rs.Vec(state.pos.x, state.pos.y, 17.0)
    car.set_state(state)
    writer = PacketWriter(1)
    for _ in range(120):
        arena.step(1)
    packet = writer.packet(arena, [car], [0], pads, 120, 120, flat.MatchPhase.Active)
    field = field_info()
    where = pads[big].get_pos()
    index = next(
        j for j, p in enumerate(field.boost_pads) if abs(p.location.x - where.x) < 1 and abs(p.location.y - where.y) < 1
    )
    assert not packet.boost_pads[index].is_active
    assert 0.9 < packet.boost_pads[index].timer < 1.01
    assert all(p.timer == 0.0 for p in packet.boost_pads if p.is_active)
