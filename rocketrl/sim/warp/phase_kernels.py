"""The warp step as phase kernels, launched in turn (engine.WarpEngine, split_step): each tick runs the cars'
starts (a thread per car), the ball and the meetings (a thread per arena), the cars' ends (a thread per car) and
the arena's end (a thread per arena). The functions and their order per arena are kernels.step_kernel's, so the
state is the same bit for bit; on a GPU the smaller kernels keep fewer values live per thread and the per-car
phases run a thread per car. A module of their own: beside step_kernel they would give the functions they share a
second call site in its build and change how the CPU build inlines step_kernel."""

from __future__ import annotations

import warp as wp

from rocketrl.sim.warp.kernels import MODULE_OPTIONS
from rocketrl.sim.warp.layout import SimState
from rocketrl.sim.warp.tick import ball_and_meetings, begin_step, car_tick_end, car_tick_start, end_step_car, end_tick

wp.set_module_options(dict(MODULE_OPTIONS))


@wp.kernel
def begin_step_kernel(s: SimState, num_cars: int, first_arena: int):
    """begin_step for arena first_arena + thread id."""
    begin_step(s, first_arena + wp.tid(), num_cars)


@wp.kernel
def car_tick_start_kernel(s: SimState, first_arena: int):
    """car_tick_start for thread (arena offset, car)."""
    i, c = wp.tid()
    a = first_arena + i
    car_tick_start(s, a, c, s.tick[a])


@wp.kernel
def ball_and_meetings_kernel(s: SimState, num_cars: int, first_arena: int):
    """ball_and_meetings for arena first_arena + thread id."""
    a = first_arena + wp.tid()
    ball_and_meetings(s, a, num_cars, s.tick[a])


@wp.kernel
def car_tick_end_kernel(s: SimState, first_arena: int):
    """car_tick_end for thread (arena offset, car)."""
    i, c = wp.tid()
    car_tick_end(s, first_arena + i, c)


@wp.kernel
def end_tick_kernel(s: SimState, num_cars: int, num_pads: int, first_arena: int):
    """end_tick for arena first_arena + thread id."""
    a = first_arena + wp.tid()
    end_tick(s, a, num_cars, num_pads, s.tick[a])


@wp.kernel
def end_step_kernel(s: SimState, first_arena: int):
    """end_step_car for thread (arena offset, car)."""
    i, c = wp.tid()
    end_step_car(s, first_arena + i, c)
