"""Rendering replays: decode what was written and find the ball and each team's cars where their states say."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from rocketrl.cli import main as rocketrl_main
from rocketrl.league.replay import ADDED_IN_V2, METADATA_KEY, ReplayRecorder, load_replay
from rocketrl.render.field import BALL, BLUE, GRASS, GRASS_DARK, ORANGE, layout, side_px, top_px
from rocketrl.render.frames import FrameRenderer

imageio = pytest.importorskip("imageio.v3", reason="rendering needs imageio: pip install -e .[render]")
pytest.importorskip("imageio_ffmpeg", reason="rendering needs imageio-ffmpeg: pip install -e .[render]")

STEPS = 45  # 3 s of game at tick skip 8


def scripted_replay(path, steps: int = STEPS):
    """A 1v1 replay with known positions: the ball rolls along +x and rises, the blue car drives along +y, the
    orange car faces -x and drives along -x. Step 20 has a touch by blue, step 30 a goal by orange."""
    recorder = ReplayRecorder(num_cars=2, blue_size=1, orange_size=1, tick_skip=8)
    for t in range(steps):
        pads = torch.ones(34, dtype=torch.bool)
        pads[t % 34] = False
        recorder.append(
            ball_pos=torch.tensor([-1000.0 + 40.0 * t, 500.0, 93.15 + 10.0 * t]),
            ball_vel=torch.tensor([600.0, 0.0, 150.0]),
            car_pos=torch.tensor([[-2000.0, -3000.0 + 30.0 * t, 17.0], [2500.0 - 25.0 * t, 2000.0, 17.0]]),
            car_forward=torch.tensor([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]),
            car_up=torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]),
            car_vel=torch.tensor([[0.0, 450.0, 0.0], [-375.0, 0.0, 0.0]]),
            car_boost=torch.tensor([100.0 - t, 33.0]),
            car_demolished=torch.tensor([False, False]),
            controls=torch.zeros(2, 8),
            blue_score=0,
            orange_score=int(t >= 30),
            goal=1 if t == 30 else -1,
            pad_active=pads,
            car_touch=torch.tensor([t == 20, False]),
            clock=60.0 - t * 8 / 120,
        )
    return recorder.save(path, blue_policy="bot", orange_policy="rule_policy")


def colour_distance(pixel: np.ndarray, colour: tuple[int, int, int]) -> float:
    return float(np.abs(pixel.astype(np.int32) - np.array(colour)).max())


def check_positions(frames: np.ndarray, replay, fps: float, view: str, tolerance: float) -> None:
    """At frames that fall on a recorded step, the pixel at the ball's and each car's projected centre has
    that object's colour (and not the grass's)."""
    lay = layout(view)
    step_seconds = replay.step_seconds
    checked = 0
    for i in range(0, len(frames), 6):
        t = i / fps
        k = int(round(t / step_seconds))
        if abs(k * step_seconds - t) > 1e-6 or k >= replay.num_steps:
            continue
        frame = frames[i]
        ball = replay.ball_pos[k].double().numpy()
        cars = replay.car_pos[k].double().numpy()
        spots = [(ball, BALL), (cars[0], BLUE), (cars[1], ORANGE)]
        for pos, colour in spots:
            if lay.top_origin is not None:
                col, row = top_px(lay, pos[0], pos[1])
                pixel = frame[int(round(float(row))), int(round(float(col)))]
                assert colour_distance(pixel, colour) <= tolerance, (i, pos, pixel, colour)
                assert colour_distance(pixel, GRASS) > 60 and colour_distance(pixel, GRASS_DARK) > 60
            if lay.side_origin is not None:
                col, row = side_px(lay, pos[1], pos[2])
                pixel = frame[int(round(float(row))), int(round(float(col)))]
                assert colour_distance(pixel, colour) <= tolerance, (i, "side", pos, pixel, colour)
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("suffix, tolerance", [(".mp4", 48), (".gif", 40)])
def test_rendered_video_has_the_frames_and_draws_ball_and_cars_where_they_are(tmp_path, suffix, tolerance) -> None:
    path = scripted_replay(tmp_path / "game.safetensors")
    out = tmp_path / f"game{suffix}"
    assert rocketrl_main(["render", str(path), "--out", str(out), "--fps", "30"]) == 0
    frames = np.stack(list(imageio.imiter(out)))
    if suffix == ".mp4":
        assert len(frames) == STEPS * 2  # 3 s of game at 30 fps
    else:  # GIF: identical consecutive frames are merged, their delays added; the duration stays 3 s
        from PIL import Image, ImageSequence

        with Image.open(out) as gif:
            delays = [frame.info["duration"] for frame in ImageSequence.Iterator(gif)]
        assert sum(delays) == 3000 and len(frames) >= STEPS * 2 - 4
        frames = frames[: STEPS * 2 - 4]  # frames before the merged tail keep their times
    assert frames.shape[1:3] == (layout("top").height, layout("top").width)
    check_positions(frames, load_replay(path), 30.0, "top", tolerance)


def test_png_frames_both_views_and_playback_speed(tmp_path) -> None:
    path = scripted_replay(tmp_path / "game.safetensors")
    args = ["render", str(path), "--out", f"{tmp_path}/frames/", "--fps", "15", "--speed", "0.5", "--view", "both"]
    assert rocketrl_main(args) == 0
    files = sorted((tmp_path / "frames").glob("frame_*.png"))
    assert len(files) == STEPS * 2  # half speed: 6 s of video at 15 fps
    frames = np.stack([imageio.imread(f) for f in files])
    check_positions(frames, load_replay(path), 30.0, "both", 0)  # 15 fps at half speed: 1/30 s of game a frame


def test_goal_touch_and_pads_show(tmp_path) -> None:
    replay = load_replay(scripted_replay(tmp_path / "game.safetensors"))
    renderer = FrameRenderer(replay, "top")
    lay = renderer.layout
    goal_frame = renderer.frame(30 * replay.step_seconds + 0.2)
    banner = goal_frame[(lay.top_origin or 0) + 14, lay.width // 2]
    assert colour_distance(banner, ORANGE) <= 10 or colour_distance(banner, (255, 255, 255)) <= 10
    quiet = renderer.frame(10 * replay.step_seconds)
    assert colour_distance(quiet[(lay.top_origin or 0) + 14, lay.width // 2], ORANGE) > 60
    # A touch ring around the ball right after blue's touch, none before.
    ring_frame, before = renderer.frame(20 * replay.step_seconds), renderer.frame(19 * replay.step_seconds)
    ball = replay.ball_pos[20].double().numpy()
    col, row = top_px(lay, ball[0], ball[1])
    ring = ring_frame[int(round(float(row))), int(round(float(col))) - 16]
    assert colour_distance(ring, BLUE) <= 10
    assert colour_distance(before[int(round(float(row))), int(round(float(col))) - 16], BLUE) > 60
    # The header counts the clock down and shows orange's goal.
    assert renderer.num_frames(30) == STEPS * 2


def test_version_1_replays_render_and_bad_input_is_a_clear_error(tmp_path, capsys) -> None:
    from safetensors.torch import save_file

    path = scripted_replay(tmp_path / "new.safetensors")
    replay = load_replay(path)
    tensors = {name: getattr(replay, name) for name in replay.__dataclass_fields__ if name != "meta"}
    old = {k: v.contiguous() for k, v in tensors.items() if k not in ADDED_IN_V2}
    meta = {k: v for k, v in replay.meta.items() if k != "clock"}
    meta["version"] = 1
    save_file(old, str(tmp_path / "old.safetensors"), metadata={METADATA_KEY: json.dumps(meta)})
    assert rocketrl_main(["render", str(tmp_path / "old.safetensors"), "--out", str(tmp_path / "old.gif")]) == 0
    (tmp_path / "junk.safetensors").write_bytes(b"not a replay")
    assert rocketrl_main(["render", str(tmp_path / "junk.safetensors"), "--out", str(tmp_path / "j.mp4")]) == 2
    assert "rocketrl render: error:" in (err := capsys.readouterr().err) and "not a safetensors file" in err
    assert rocketrl_main(["render", str(path), "--out", str(tmp_path / "game.avi")]) == 2
    assert ".mp4 or .gif" in capsys.readouterr().err
    assert not (tmp_path / "j.mp4").exists() and not list(tmp_path.glob(".*partial*"))
