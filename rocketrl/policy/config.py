"""ModelConfig: the shape of the actor and critic networks (the policy package's config section)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from rocketrl.typecheck import at_least, check_field_types

Activation = Literal["elu", "relu", "tanh"]
ModelKind = Literal["mlp", "attention"]
LSTM_UNSUPPORTED = "model.lstm=true is not supported with model.kind=attention; set model.lstm=false or model.kind=mlp"


@dataclass
class ModelConfig:
    """Shape of the actor and critic networks."""

    kind: ModelKind = "mlp"
    """mlp: actor and critic MLPs over the whole observation; attention: entity attention networks over the ball,
    this car and the other cars as sets (rocketrl.policy.attention), with MLP heads of actor_hidden / critic_hidden."""
    actor_hidden: list[int] = field(default_factory=lambda: [256, 256])
    """Hidden layer widths of the policy network, input side first. Small, so that the update keeps pace with the
    simulation on a CPU; on a GPU wider networks (e.g. [1024, 512, 256]) cost little."""
    critic_hidden: list[int] = field(default_factory=lambda: [256, 256])
    """Hidden layer widths of the value network, input side first."""
    activation: Activation = "elu"
    """Activation between hidden layers: elu, relu or tanh."""
    lstm: bool = False
    """Put an LSTM layer after the hidden layers (recurrent policy and value)."""
    lstm_hidden: int = 256
    """Hidden size of the LSTM layer."""
    sequence_length: int = 16
    """Truncated BPTT length in steps; must divide ppo.rollout_steps when lstm is on."""
    embed_size: int = 64
    """kind=attention: width of each entity embedding and of the attention."""
    attention_heads: int = 4
    """kind=attention: attention heads; must divide embed_size."""
    attention_layers: int = 1
    """kind=attention: attention blocks (attention from this car over the other cars, then feed-forward)."""

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
        at_least(self.embed_size, 1, "model.embed_size")
        at_least(self.attention_heads, 1, "model.attention_heads")
        at_least(self.attention_layers, 1, "model.attention_layers")
        if self.kind == "attention":
            if self.lstm:
                raise ValueError(LSTM_UNSUPPORTED)
            if self.embed_size % self.attention_heads:
                raise ValueError(
                    f"model.embed_size={self.embed_size} is not a multiple of model.attention_heads="
                    f"{self.attention_heads}; choose an embed_size that the number of heads divides (e.g. 64 with 4)"
                )
