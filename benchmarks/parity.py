"""Parity report: every measure of rocketrl.diagnostics.parity with its RocketSim value, warp value,
error, bound and pass/miss. Prints JSON and writes it to --out (default warp_parity.json), plus a PNG
bar chart of error / bound per measure next to it when matplotlib is installed.

Ball measures: RocketSim's path length over 2 s and the warp ball's distance from RocketSim's at 2 s
(error = distance / path). Goal measures: the step of the goal, -1 for none (must be identical).
Car and kickoff measures: the quantity itself (relative error). Car-hit measures: the path of the ball a
car drove into over 1 s and the warp ball's distance from RocketSim's then.

Car-air report ("car_air"): airborne cars through both engines tick by tick from the same states and
controls (rocketrl.diagnostics.car_air_parity): for 64 random sequences (controls held 8 ticks, jumps,
flips and boost among them) the median, 90th percentile and max of the position error (uu) and the
orientation error (degrees) after 0.25, 0.5 and 1 s and the share within 1 uu at 1 s; for scripted cases
(drop, boost, flips, a double jump) each error at those times. --no-car-air leaves it out.

Car-ground report ("car_ground"): cars on the flat floor through both engines tick by tick
(rocketrl.diagnostics.car_ground_parity): for 32 random 2 s sequences from rest (throttle, steer, boost,
handbrake, stick held 8 ticks, at most one jump; kept if RocketSim's car stays 400 uu from the walls, away
from the ball and with its hitbox off the floor) the median, 90th percentile and max of the position error
(uu) and the orientation error (degrees) after 0.5, 1 and 2 s and the share within 1 uu at 1 s; for
scripted cases (settling, throttle, boost, steering circles, coasting, braking and reversing, powerslides,
jumps) each error at those times. --no-car-ground leaves it out.

Car-wall report ("car_wall"): cars beyond the flat floor through both engines tick by tick
(rocketrl.diagnostics.car_wall_parity): for 32 random 4 s sequences started on the four walls (throttle
mostly forward, steer, boost, handbrake, stick held 8 ticks, at most one jump; none filtered out) the
median, 90th percentile and max of the position error (uu) and the orientation error (degrees) after 0.5,
1 and 4 s and the share within 1 uu at 1 s; for scripted cases (driving up the side and back walls, into a
corner and onto the ceiling, driving, coasting, powersliding and jumping on walls, driving on the ceiling)
each error at those times. --no-car-wall leaves it out.

Car-contact report ("car_contacts"): two cars and the ball through both engines tick by tick
(rocketrl.diagnostics.car_contact_parity): 64 random 4 s 1v1 sequences from kickoffs and 64 from random
states (both cars' controls random, held 8 ticks), with per body (each car, the ball) the median, 90th
percentile and max of the position error, of its share of the distance travelled, and of the cars'
orientation error after 0.5, 1 and 4 s, and the shares of sequences whose cars are within 1 uu and within 1%
of their path at 1 s and within 5% at 4 s (the targets: 90%, all, all); scripted meetings (a side bump, a
head-on bump, a supersonic demolition, a 50/50, a hit of a ball at rest) with each error and the tick of each
demolition in each engine, and beside each error RocketSim's own ("rocketsim_moved"): RocketSim started with the
blue car 0.001 uu aside, against RocketSim. --no-car-contacts leaves it out.

    python benchmarks/parity.py [--out warp_parity.json] [--no-car-air] [--no-car-ground] [--no-car-wall]
        [--no-car-contacts]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rocketrl.diagnostics.car_air_parity import car_air_report
from rocketrl.diagnostics.car_contact_parity import car_contact_report
from rocketrl.diagnostics.car_ground_parity import car_ground_report
from rocketrl.diagnostics.car_wall_parity import car_wall_report
from rocketrl.diagnostics.parity import run_all


def plot(measures: list[dict], path: Path) -> bool:
    """Bar chart of error / bound (1 = at the bound) per measure; False if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = [m["name"] for m in measures]
    ratio = [m["error"] / m["bound"] if m["bound"] > 0 else (0.0 if m["passed"] else 2.0) for m in measures]
    colours = ["tab:green" if m["passed"] else "tab:red" for m in measures]
    fig, ax = plt.subplots(figsize=(9, 0.3 * len(names) + 1.5))
    ax.barh(names, [min(r, 3.0) for r in ratio], color=colours)
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("error / bound (clipped at 3; dashed line = bound)")
    ax.set_title("warp engine vs RocketSim")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("warp_parity.json"))
    parser.add_argument("--no-car-air", action="store_true", help="leave out the airborne car report")
    parser.add_argument("--no-car-ground", action="store_true", help="leave out the flat-floor car report")
    parser.add_argument("--no-car-wall", action="store_true", help="leave out the walls-and-ceiling car report")
    parser.add_argument("--no-car-contacts", action="store_true", help="leave out the two-car report")
    args = parser.parse_args()
    started = time.perf_counter()
    measures = run_all()
    report = {
        "measures": measures,
        "passed": sum(m["passed"] for m in measures),
        "missed": [m["name"] for m in measures if not m["passed"]],
    }
    if not args.no_car_air:
        report["car_air"] = car_air_report()
    if not args.no_car_ground:
        report["car_ground"] = car_ground_report()
    if not args.no_car_wall:
        report["car_wall"] = car_wall_report()
    if not args.no_car_contacts:
        report["car_contacts"] = car_contact_report()
    report["seconds"] = time.perf_counter() - started
    png = args.out.with_suffix(".png")
    report["plot"] = str(png) if plot(measures, png) else None
    text = json.dumps(report, indent=2)
    args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
