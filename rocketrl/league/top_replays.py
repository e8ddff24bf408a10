"""Replays of the top-return training episodes (league.replay_top), saved as they happen.

Each step the trainer hands over the state every arena acted from and the controls applied, as
batched tensors; when an episode ends with a learner return among the best `keep` so far, its
steps are written as a replay (see rocketrl.league.replay) to <run>/replays/top/, and the file of
the episode it pushed out is removed. <run>/replays/top/index.json lists the kept ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from rocketrl.infra.atomic_json import write_json_atomic
from rocketrl.league.replay import ReplayRecorder
from rocketrl.sim.state import BatchState


class TopEpisodeReplays:
    """Keeps the `keep` highest-return episodes of a run as replay files."""

    def __init__(self, keep: int, directory: Path, blue_size: int, orange_size: int, tick_skip: int) -> None:
        self.keep = keep
        self.directory = Path(directory)
        self.blue_size, self.orange_size, self.tick_skip = blue_size, orange_size, tick_skip
        self.frames: list[tuple[BatchState, torch.Tensor]] = []
        self.first_frame = 0
        """Global index of frames[0]."""
        self.episode_start: torch.Tensor | None = None
        """(A,) global frame index at which each arena's current episode began."""
        self.kept: list[dict] = self._read_index()

    def _read_index(self) -> list[dict]:
        index = self.directory / "index.json"
        return json.loads(index.read_text()) if index.is_file() else []

    def record(self, state: BatchState, controls: torch.Tensor) -> None:
        """The state (A arenas) the step started from and the controls (A, C, 8) applied from it."""
        if self.episode_start is None:
            self.episode_start = torch.full((state.num_arenas,), self.first_frame + len(self.frames))
        self.frames.append((state, controls.detach().clone()))

    def episodes_ended(
        self, arenas: torch.Tensor, returns: torch.Tensor, step: int, final_state: BatchState | None = None
    ) -> None:
        """Arenas (K,) whose episode ended with the step just recorded, and their learner returns (K,).
        `final_state` is the state that step ended in, before the reset (its goal and touches); a saved
        replay ends with it."""
        if self.episode_start is None:
            return
        end = self.first_frame + len(self.frames)  # one past the last frame
        for arena, value in zip(arenas.tolist(), returns.tolist()):
            start = int(self.episode_start[arena])
            worst = min((k["return"] for k in self.kept), default=float("-inf"))
            if start >= self.first_frame and (len(self.kept) < self.keep or value > worst):
                self._save(arena, start, end, value, step, final_state)
            self.episode_start[arena] = end
        # Frames before every arena's current episode are no longer needed.
        oldest = int(self.episode_start.min())
        if oldest > self.first_frame:
            del self.frames[: oldest - self.first_frame]
            self.first_frame = oldest

    def _save(self, arena: int, start: int, end: int, value: float, step: int, final_state: BatchState | None) -> None:
        recorder = ReplayRecorder(self.blue_size + self.orange_size, self.blue_size, self.orange_size, self.tick_skip)
        for state, controls in self.frames[start - self.first_frame : end - self.first_frame]:
            recorder.append_from_state(state, arena, controls[arena])
        if final_state is not None:
            recorder.append_final_from_state(final_state, arena)
        name = f"step_{step:012d}_arena_{arena:03d}.safetensors"
        recorder.save(self.directory / name, episode_return=value, blue_policy="learner", orange_policy="learner")
        self.kept.append({"file": name, "return": value, "step": step, "arena": arena, "steps": end - start})
        self.kept.sort(key=lambda k: -k["return"])
        while len(self.kept) > self.keep:
            dropped = self.kept.pop()
            (self.directory / dropped["file"]).unlink(missing_ok=True)
        write_json_atomic(self.directory / "index.json", self.kept)

    def restart(self) -> None:
        """Forget partial episodes (every arena was reset, e.g. at a checkpoint or a stage change)."""
        self.frames.clear()
        self.episode_start = None
        self.first_frame = 0
