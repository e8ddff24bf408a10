"""A batched soccar engine written as NVIDIA Warp kernels (CUDA or CPU), with RocketSimEngine's interface.

One thread simulates one arena for all `tick_skip` ticks of a step; the state lives in
structure-of-arrays buffers shared with torch. See `engine.WarpEngine`.
"""

import warp as _wp

_wp.config.quiet = True
if hasattr(_wp, "LOG_WARNING"):
    _wp.config.log_level = _wp.LOG_WARNING
