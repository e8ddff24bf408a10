"""Shared low-level pieces: crash-safe checkpoints, atomic files, random state, logging helpers, notices, NVML."""
