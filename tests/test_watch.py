"""`rocketrl watch`: one command plays a bot in a game and writes the video."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
from export_helpers import make_checkpoint

from rocketrl.cli import main as rocketrl_main
from rocketrl.league.replay import load_replay

imageio = pytest.importorskip("imageio.v3", reason="rendering needs imageio: pip install -e .[render]")


def test_watch_plays_a_game_and_writes_a_video_of_it(tmp_path, capsys) -> None:
    checkpoint = make_checkpoint(tmp_path)
    out = tmp_path / "game.mp4"
    args = ["watch", "--checkpoint", str(checkpoint), "--opponent", "rule_policy", "--seconds", "4", "--seed", "1"]
    args += ["--no-overtime"]
    args += ["--out", str(out), "--keep-replays", str(tmp_path / "replays")]
    assert rocketrl_main(args) == 0
    printed = capsys.readouterr().out
    assert "vs rule_policy" in printed and str(out) in printed
    replay = load_replay(tmp_path / "replays" / "game_0000.safetensors")
    assert replay.meta["blue_policy"] == "run/tiny_discrete" and replay.meta["orange_policy"] == "rule_policy"
    assert replay.meta["clock"] == "game" and float(replay.clock[0]) == pytest.approx(4.0)
    frames = np.stack(list(imageio.imiter(out)))
    assert len(frames) == math.floor(replay.duration_seconds * 30 + 1e-9)
    assert frames.std() > 0  # something was drawn


def test_watch_two_games_writes_one_video_each(tmp_path) -> None:
    checkpoint = make_checkpoint(tmp_path)
    args = ["watch", "--checkpoint", str(checkpoint), "--opponent", "random", "--seconds", "2", "--games", "2"]
    args += ["--no-overtime"]
    args += ["--out", str(tmp_path / "clip.gif"), "--fps", "10"]
    assert rocketrl_main(args) == 0
    assert sorted(p.name for p in tmp_path.glob("clip_*.gif")) == ["clip_0000.gif", "clip_0001.gif"]


@pytest.mark.skipif(importlib.util.find_spec("rlviser_py") is not None, reason="rlviser-py is installed here")
def test_live_without_rlviser_says_what_to_install(tmp_path, capsys) -> None:
    assert rocketrl_main(["watch", "--checkpoint", "pretrained", "--live"]) == 2
    assert "pip install rlviser-py" in capsys.readouterr().err


def test_watch_bad_inputs_are_clear_errors(tmp_path, capsys) -> None:
    assert rocketrl_main(["watch", "--checkpoint", str(tmp_path / "missing.safetensors"), "--out", "x.mp4"]) == 2
    assert "rocketrl watch: error:" in (err := capsys.readouterr().err) and "nor an existing checkpoint file" in err
    assert rocketrl_main(["watch", "--checkpoint", "pretrained", "--out", str(tmp_path / "x.webm")]) == 2
    assert ".mp4 or .gif" in capsys.readouterr().err
