"""Training infrastructure: crash-safe checkpoints (checkpoint.py) and training logs (logging.py)."""
