"""Helper of the warp ray tests: a test kernel launched over a batch of rays against a fresh engine's arena."""

from __future__ import annotations

import numpy as np
import warp as wp

from rocketrl.sim.warp.engine import WarpEngine


def launch_rays(
    kernel, starts: np.ndarray, ends: np.ndarray, out_shape: tuple[int, ...], arenas: int = 1
) -> np.ndarray:
    """kernel(sim, starts, ends, out) over len(starts) threads on the CPU, with the SimState of a fresh 1v0 engine
    of `arenas` arenas (one tick a step); starts, ends (N, 3) in uu; returns `out`, zeros of out_shape before the
    launch."""
    engine = WarpEngine(arenas, 1, 0, tick_skip=1)
    try:
        out = wp.zeros(out_shape, dtype=float, device="cpu")
        wp.launch(
            kernel,
            dim=len(starts),
            inputs=[
                engine._sim,
                wp.array(starts.astype(np.float32), dtype=wp.vec3, device="cpu"),
                wp.array(ends.astype(np.float32), dtype=wp.vec3, device="cpu"),
                out,
            ],
            device="cpu",
        )
        return out.numpy()
    finally:
        engine.close()
