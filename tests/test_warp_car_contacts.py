"""Two cars through the warp engine against RocketSim, tick by tick: until they meet they agree to a fraction
of a uu, a supersonic hit demolishes in the same tick, and a car driving into a ball at rest sends it the same
way (rocketrl.diagnostics.car_contact_parity)."""

from __future__ import annotations

import pytest

pytest.importorskip("warp")

from rocketrl.diagnostics import car_contact_parity as parity  # noqa: E402
from rocketrl.sim.state import ResetState  # noqa: E402


@pytest.fixture(scope="module")
def meetings() -> tuple[list[str], dict]:
    names, state, controls = parity.scripted_cases(seconds=1.0)
    return names, parity.contact_paths(state, controls)


def test_cars_agree_before_they_meet(meetings) -> None:
    names, paths = meetings
    err = parity.errors_at(paths, ticks=60)  # 0.5 s: no car has reached the other or the ball yet
    assert float(err["position"].max()) < 0.1, dict(zip(names, err["position"].tolist()))
    assert float(err["orientation"].max()) < 0.05


def test_a_supersonic_hit_demolishes_in_the_same_tick(meetings) -> None:
    names, paths = meetings
    i = names.index("demolition")
    rs, wa = paths["rocketsim"]["demolished"][:, i], paths["warp"]["demolished"][:, i]
    assert not bool(rs[:, 0].any()) and not bool(wa[:, 0].any())  # the blue car that hits stays
    assert bool(rs[:, 1].any()), "RocketSim should demolish the orange car"
    assert int(rs[:, 1].float().argmax()) == int(wa[:, 1].float().argmax())
    for name in ("side_bump", "head_on_bump", "fifty_fifty", "hit_rolling_ball"):
        j = names.index(name)
        assert not bool(paths["rocketsim"]["demolished"][:, j].any()) and not bool(
            paths["warp"]["demolished"][:, j].any()
        )


def test_a_demolished_car_respawns_at_the_same_spot_in_both_engines() -> None:
    # Demolished at tick 73, the car respawns 360 ticks later, at tick 433, where rocketrl.sim.arena.respawn_spot
    # says in both engines (RocketSim alone would draw the spot from a clock-seeded random engine, up to 5,376 uu
    # from warp's); measured: 0.0000 uu at tick 433 and 0.0005 uu at 4 s.
    names, state, controls = parity.scripted_cases(seconds=4.0)
    i = names.index("demolition")
    paths = parity.contact_paths(state, controls)
    demoed = {engine: p["demolished"][:, i, 1] for engine, p in paths.items()}
    assert int(demoed["rocketsim"].float().argmax()) == 73 and int(demoed["warp"].float().argmax()) == 73
    assert bool(demoed["rocketsim"][432]) and not bool(demoed["rocketsim"][433]) and not bool(demoed["warp"][433])
    for ticks in (433, 480):
        err = parity.errors_at(paths, ticks=ticks)
        assert float(err["position"][i, 1]) < 0.01, ticks
        assert float(err["orientation"][i, 1]) < 0.01, ticks


def test_a_car_hits_a_ball_at_rest_the_same_way(meetings) -> None:
    names, paths = meetings
    i = names.index("hit_rolling_ball")
    err = parity.errors_at(paths, ticks=120)  # 1 s: the hit happened a few ticks before
    # Measured: the car 0.0014 uu, the ball 0.0015 uu at 1 s, with Bullet's rounded box, its contact threshold,
    # the solver's iterations, the ball's arena contact solved before the car's and a ball at rest touching the
    # floor (0.010 and 0.11 uu before that; 0.04 and 0.54 uu before the order; 0.42 and 3.3 uu before the
    # contact work).
    assert float(err["position"][i, 0]) < 0.01  # the car
    assert float(err["position"][i, 2]) < 0.01  # the ball, after travelling hundreds of uu
    assert float(err["relative"][i, 2]) < 1.0e-4  # within 0.01% of the ball's path


def test_bumps_follow_rocketsim_through_the_box_box_contact(meetings) -> None:
    # Bullet's box-box detector, a two-body impulse solve and RocketSim's bump from the velocities before the
    # tick's forces: 0.0 / 0.0 uu (side bump) and 0.002 / 0.002 uu (head-on) at 1 s. With the velocities after
    # them 0.0 / 1.4 and 4.0 / 1.8 uu; with the earlier centre-against-box test 1.2 / 3.1 and 15 / 18 uu.
    names, paths = meetings
    err = parity.errors_at(paths, ticks=120)
    for name in ("side_bump", "head_on_bump"):
        i = names.index(name)
        assert float(err["position"][i, :2].max()) < 0.05, (name, err["position"][i].tolist())


def test_a_fifty_fifty_solves_both_cars_at_the_ball_together(meetings) -> None:
    # Both cars into the ball at once: their points on the ball are solved together, last car first, as RocketSim
    # solves them. Measured at 1 s: the cars 5.6 and 2.4 uu, the ball 0.0014 uu from RocketSim's (in car order:
    # 69-71 and 12 uu; each car's point solved alone: 135, 181 and 185 uu).
    names, paths = meetings
    i = names.index("fifty_fifty")
    err = parity.errors_at(paths, ticks=120)
    assert float(err["position"][i, :2].max()) < 6.0, err["position"][i].tolist()
    assert float(err["position"][i, 2]) < 0.01, err["position"][i].tolist()


def test_the_head_on_fifty_fifty_parts_from_itself_in_rocketsim() -> None:
    """Why the 50/50's 4 s bound is reported as a miss rather than chased: RocketSim started with the blue car
    0.001 uu aside ends the 50/50 over 5% of the blue car's path from RocketSim (measured: 11.2%), while a bump
    started the same way stays where it was (0.000%)."""
    names, state, controls = parity.scripted_cases(seconds=4.0)
    keep = [names.index("fifty_fifty"), names.index("side_bump")]
    state = ResetState(**{f: getattr(state, f)[keep] for f in ("ball_pos", "ball_vel", "ball_ang_vel",
        "car_pos", "car_vel", "car_ang_vel", "car_rotation", "car_boost")})  # fmt: skip
    controls = controls[:, keep]
    paths = parity.contact_paths(parity.with_blue_moved(state, 0.001), controls.repeat(1, 2, 1, 1))
    rocketsim = paths["rocketsim"]
    self_paths = {"rocketsim": parity.arenas_of(rocketsim, 0, 2), "warp": parity.arenas_of(rocketsim, 2, 4)}
    err = parity.errors_at(self_paths, ticks=480)
    assert float(err["relative"][0, 0]) > 0.05, err["relative"].tolist()
    assert float(err["relative"][1, :2].max()) < 1e-4, err["relative"].tolist()


MAX_KNIFE_EDGES = 2
"""Random sequences of 64 allowed to end outside END_PATH_SHARE, each only where it is a knife edge (measured: none
from kickoffs; random state 60 of seed 1 with Intel's RocketSim, none with AMD's)."""


def assert_end_within_share_or_on_a_knife_edge(state, controls, paths) -> None:
    """Both cars within END_PATH_SHARE of their RocketSim path at 4 s, or, for at most MAX_KNIFE_EDGES sequences,
    on a knife edge: 2-ulp nudges of the start send RocketSim's own run elsewhere, and warp's run ends within
    END_PATH_SHARE of one of RocketSim's. Which way such a sequence falls depends on the CPU's rounding
    (rocketrl.diagnostics.cpu_arithmetic): RocketSim's rsqrtss estimate is Intel's or AMD's own."""
    shares = parity.end_path_shares(paths)
    outside = (shares > parity.END_PATH_SHARE).nonzero().flatten().tolist()
    assert len(outside) <= MAX_KNIFE_EDGES, {a: round(float(shares[a]), 4) for a in outside}
    for arena in outside:
        edge = parity.knife_edge(state, controls, arena)
        assert edge["rocketsim_parted"] >= 1, (
            f"sequence {arena} ends {float(shares[arena]):.1%} off and is no knife edge"
        )
        assert edge["warp_shadow_share"] <= parity.END_PATH_SHARE, (arena, edge)


def test_most_random_kickoff_sequences_replay_rocketsim_for_a_second() -> None:
    # The measures: 64 random 4 s control sequences from kickoffs, both cars within 1 uu of
    # RocketSim's at 1 s in at least 90% of them and within 1% of their path in all (measured: all 64 on
    # both; 87.5% and 96.9% before the plane manifolds and RocketSim's auto-roll on contact).
    state, controls = parity.random_sequences("kickoff")
    paths = parity.contact_paths(state, controls)
    report = parity.random_report("kickoff", paths=paths)
    assert report["share_cars_within_1.0uu_at_1.0s"] >= 0.9, report["share_cars_within_1.0uu_at_1.0s"]
    assert report["share_cars_within_1%_of_path_at_1.0s"] == 1.0, report["share_cars_within_1%_of_path_at_1.0s"]
    # At 4 s all within 5% of the path (all 64 since the auto-flip runs where RocketSim runs it, before the double
    # jump, which it blocks), knife edges aside.
    assert_end_within_share_or_on_a_knife_edge(state, controls, paths)


def test_random_states_replay_rocketsim_through_their_mesh_contacts() -> None:
    # 64 random 1v1 states (cars anywhere on the floor at any speed, the ball anywhere and moving), random controls:
    # the targets, both cars within 1 uu of RocketSim's at 1 s in at least 90%, within 1% of their path at
    # 1 s and within 5% at 4 s in all, are met on all 64 since every car contact is made anew each tick, GJK is
    # replayed, the auto-roll reads the last point's normal and the first tick's push-back uses Bullet's default
    # step (62, 62 and 56 of 64 before). At 4 s sequence 60 is a knife edge: 2-ulp nudges of its start scatter
    # RocketSim's orange car 97-250 uu, and warp's run ends 0.04 uu from one of them (docs/cpu_determinism.json).
    state, controls = parity.random_sequences("random", seed=1)
    paths = parity.contact_paths(state, controls)
    report = parity.random_report("random", seed=1, paths=paths)
    assert report["share_cars_within_1.0uu_at_1.0s"] == 1.0, report["share_cars_within_1.0uu_at_1.0s"]
    assert report["share_cars_within_1%_of_path_at_1.0s"] == 1.0, report["share_cars_within_1%_of_path_at_1.0s"]
    assert_end_within_share_or_on_a_knife_edge(state, controls, paths)
