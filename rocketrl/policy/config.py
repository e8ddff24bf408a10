"""ModelConfig: the shape of the actor and critic networks (the policy package's config section)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from rocketrl.typecheck import at_least, check_field_types

Activation = Literal["elu", "relu", "tanh"]


@dataclass
class ModelConfig:
    """Shape of the actor and critic networks."""

    actor_hidden: list[int] = field(default_factory=lambda: [1024, 512, 256])
    """Hidden layer widths of the policy network, input side first."""
    critic_hidden: list[int] = field(default_factory=lambda: [1024, 512, 256])
    """Hidden layer widths of the value network, input side first."""
    activation: Activation = "elu"
    """Activation between hidden layers: elu, relu or tanh."""
    lstm: bool = False
    """Put an LSTM layer after the hidden layers (recurrent policy and value)."""
    lstm_hidden: int = 256
    """Hidden size of the LSTM layer."""
    sequence_length: int = 16
    """Truncated BPTT length in steps; must divide ppo.rollout_steps when lstm is on."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first setting out of range."""
        check_field_types(self, "model")
        for name in ("actor_hidden", "critic_hidden"):
            widths = getattr(self, name)
            if not widths:
                raise ValueError(f"model.{name}=[]: give at least one hidden layer width")
            if min(widths) < 1:
                raise ValueError(f"model.{name}={widths!r}: every width must be at least 1")
        at_least(self.lstm_hidden, 1, "model.lstm_hidden")
        at_least(self.sequence_length, 1, "model.sequence_length")
