"""`rocketrl watch --live`: stream a game to RLViser as it is played, in real time.

RLViser is a separate 3D viewer; `rlviser-py` (PyPI) sends it RocketSim states over UDP. The game is played in
one RocketSim arena in this process (serial stepping), and after every step the arena's ball, cars and boost
pads go to the viewer, paced to game time. Without rlviser-py the command says what to install and stops.
"""

from __future__ import annotations

import time
from typing import Any

from rocketrl.sim.arena import BOOST_PADS, TICK_RATE

INSTALL_HINT = (
    "--live streams the game to RLViser: pip install rlviser-py, and put the RLViser viewer "
    "(github.com/VirxEC/rlviser releases) next to where you run rocketrl; or leave out --live to write a video"
)


def load_rlviser() -> Any:
    """The rlviser_py module; ImportError with INSTALL_HINT when it is missing."""
    try:
        import rlviser_py
    except ImportError as err:
        raise ImportError(INSTALL_HINT) from err
    return rlviser_py


class LiveStream:
    """An on_step callback for `play_match` that sends arena 0 to RLViser and keeps to real time."""

    def __init__(self, rlviser: Any, tick_skip: int, speed: float = 1.0) -> None:
        self.rlviser = rlviser
        self.tick_skip = tick_skip
        self.speed = speed
        self.ticks = 0
        self.started = time.perf_counter()
        rlviser.set_boost_pad_locations([tuple(p[:3]) for p in BOOST_PADS])

    def __call__(self, env: Any) -> None:
        import RocketSim as rs

        block = env.engine._blocks[0]
        arena, cars = block.arenas[0], block.cars[0]
        teams = env.engine.state.car_team[0].tolist()
        pads = [pad.get_state().is_active for pad in block.pads[0]]
        car_data = [(car.id, int(team), car.get_config(), car.get_state()) for car, team in zip(cars, teams)]
        self.ticks += self.tick_skip
        self.rlviser.render(self.ticks, TICK_RATE, rs.GameMode.SOCCAR, pads, arena.ball.get_state(), car_data)
        ahead = self.ticks / TICK_RATE / self.speed - (time.perf_counter() - self.started)
        if ahead > 0:
            time.sleep(ahead)

    def close(self) -> None:
        self.rlviser.quit()
