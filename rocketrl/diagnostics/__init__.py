"""Measuring and checking an installation: `rocketrl diagnose` (diagnose.py and the measures in env.py,
inference.py, train.py, system.py, report.py), `rocketrl bench`, `rocketrl doctor`, and the warp engine's
parity against RocketSim (parity.py, car_air_parity.py, car_ground_parity.py)."""
