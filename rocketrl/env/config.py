"""EnvConfig: every setting of a BatchedEnv, typed, with a one-line doc per field."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args

from rocketrl.env.setters import MAX_KICKOFF_JITTER, STATE_SETTERS, kickoff_jitter_in_range
from rocketrl.sim.arena import DEFAULT_TICK_SKIP
from rocketrl.sim.modes import EngineName, SteppingSetting
from rocketrl.typecheck import at_least, field_types

ActionKind = Literal["discrete", "continuous"]


def default_rewards_path() -> Path:
    """configs/rewards.yaml shipped inside the package."""
    return Path(str(resources.files("rocketrl") / "configs" / "rewards.yaml"))


def no_rewards_path() -> Path:
    """configs/rewards_none.yaml shipped inside the package: no reward terms (every reward 0), for games."""
    return Path(str(resources.files("rocketrl") / "configs" / "rewards_none.yaml"))


@dataclass
class EnvConfig:
    """Settings of a BatchedEnv."""

    num_arenas: int = 32
    """Arenas simulated side by side."""
    blue_size: int = 1
    """Cars on the blue team, 1 to 3."""
    orange_size: int = 1
    """Cars on the orange team, 0 to 3 (asymmetric sizes allowed)."""
    tick_skip: int = DEFAULT_TICK_SKIP
    """Physics ticks per step (120 ticks per second); actions repeat for this many ticks."""
    engine: EngineName = "rocketsim"
    """Physics engine: 'rocketsim' (RocketSim on CPU threads/processes) or 'warp' (batched Warp kernels on the
    training device; see rocketrl/sim/warp)."""
    stepping: SteppingSetting = "processes"
    """How RocketSim arenas are stepped: processes, threads, multi_step or serial; or auto, where a probe of
    about ten seconds (cached per machine) times them on this machine for these arenas and picks one."""
    num_workers: int | None = None
    """Worker processes or threads for stepping; None uses every CPU core (with stepping auto: the probe picks
    the count)."""
    action: ActionKind = "discrete"
    """'discrete' (90-entry lookup table) or 'continuous' (Box(8))."""
    state_setter: dict[str, float] = field(default_factory=lambda: {"kickoff": 0.5, "random": 0.5})
    """Mix of reset states by weight: kickoff, random (ball and cars anywhere) and dodge_shot (one car airborne
    with its flip unused, driving at a ball in reach on the way to its goal: a dodge now shoots)."""
    kickoff_jitter: float = 0.0
    """Move each car's kickoff spawn by up to this many uu in x and in y (uniform, per car, 0 to 100). With 0
    the spawns are exact, and two greedy policies replay the same few kickoffs every time."""
    episode_seconds: float = 45.0
    """Truncate an episode after this much game time (0 disables)."""
    no_touch_seconds: float = 15.0
    """Truncate an episode when nobody touched the ball for this long (0 disables)."""
    rewards: str | None = None
    """Path of a rewards YAML file; None uses the packaged configs/rewards.yaml."""
    compile: bool = False
    """torch.compile observations and rewards into fused kernels (about 5x faster on CPU; the first
    step compiles for up to a minute, later runs reuse the cache). Falls back to eager on failure. The one
    switch of the env layer's compilation (speed.compile covers the networks)."""
    pin_memory: bool = True
    """On CUDA, copy each step's state through pinned host memory without blocking (no effect on CPU)."""
    validate_actions: bool = True
    """Check every action batch (shape, NaN, range) before it reaches the engine."""
    seed: int = 0
    """Seed of resets and of the engine's first kickoffs."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first setting out of range (types are checked by the loader)."""
        if self.num_arenas < 1:
            raise ValueError(f"env.num_arenas={self.num_arenas}: must be at least 1")
        if not 1 <= self.blue_size <= 3:
            raise ValueError(f"env.blue_size={self.blue_size}: must be 1 to 3")
        if not 0 <= self.orange_size <= 3:
            raise ValueError(f"env.orange_size={self.orange_size}: must be 0 to 3")
        at_least(self.tick_skip, 1, "env.tick_skip")
        if self.num_workers is not None:
            at_least(self.num_workers, 1, "env.num_workers")
        unknown = sorted(set(self.state_setter) - set(STATE_SETTERS))
        if unknown:
            allowed = ", ".join(STATE_SETTERS)
            raise ValueError(f"env.state_setter.{unknown[0]} is not a state setter; allowed: {allowed}")
        at_least(self.episode_seconds, 0.0, "env.episode_seconds")
        at_least(self.no_touch_seconds, 0.0, "env.no_touch_seconds")
        hints = field_types(type(self))
        for name in ("engine", "stepping", "action"):
            allowed, value = get_args(hints[name]), getattr(self, name)
            if value not in allowed:
                raise ValueError(f"env.{name}={value!r}: choose one of {', '.join(map(repr, allowed))}")
        if not kickoff_jitter_in_range(self.kickoff_jitter):
            raise ValueError(
                f"env.kickoff_jitter={self.kickoff_jitter!r}: must lie in [0, {MAX_KICKOFF_JITTER:g}] uu "
                "(a few uu vary the kickoffs; 0 keeps the exact spawns)"
            )

    @classmethod
    def default(cls, name: str) -> Any:
        """The default value of field `name` (a fresh copy for a mapping)."""
        return getattr(cls(), name)

    @classmethod
    def from_dict(cls, data: dict) -> EnvConfig:
        allowed = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise ValueError(f"env.{unknown[0]} is not an env setting; allowed: {', '.join(sorted(allowed))}")
        return cls(**data)
