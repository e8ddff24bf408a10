"""rocketrl: train Rocket League bots with reinforcement learning, fast.

Everything after physics is batched tensors on the training device:
engine -> BatchState -> observations, rewards, done conditions -> policy -> action parser -> engine.
"""

__version__ = "0.1.0"
