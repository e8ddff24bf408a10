"""Writing frames: MP4 (H.264 through imageio-ffmpeg's own ffmpeg), GIF (Pillow) or a folder of PNGs.

Frames are Pillow images or (H, W, 3) uint8 RGB arrays. MP4 is encoded on one thread with x264's fastest
preset at a constant quantiser, so rendering stays on about one core; palette frames (frames.py) go to ffmpeg
as YUV 4:2:0 already (palette.py), sparing it the colour conversion. A GIF holds every frame in memory and is
large: use it for clips, MP4 for whole games. The output is written to a temporary file and renamed into
place, so a failed render never leaves a half file under the target name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Union

import numpy as np

if TYPE_CHECKING:
    from PIL import Image

Frame = Union["Image.Image", np.ndarray]
"""A Pillow image, or an (H, W, 3) uint8 RGB array."""

INSTALL_HINT = "rocketrl render and watch need imageio, imageio-ffmpeg and pillow: pip install 'rocketrl[render]'"


class RenderDependencyError(ImportError):
    """imageio, imageio-ffmpeg or Pillow is missing."""


def check_dependencies() -> None:
    """Raise RenderDependencyError naming what to install when a rendering library is missing."""
    missing = []
    for module in ("imageio", "imageio_ffmpeg", "PIL"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise RenderDependencyError(f"{INSTALL_HINT} (missing: {', '.join(missing)})")


def output_kind(out: str | os.PathLike[str]) -> str:
    """'mp4', 'gif' or 'frames' (a path ending in '/' or an existing folder); ValueError otherwise."""
    text = str(out)
    if text.endswith(("/", os.sep)) or Path(text).is_dir():
        return "frames"
    suffix = Path(text).suffix.lower()
    if suffix in (".mp4", ".gif"):
        return suffix[1:]
    raise ValueError(f"--out {text!r}: give a .mp4 or .gif file, or a folder ending in '/' for PNG frames")


X264 = ["-preset", "ultrafast", "-threads", "1", "-qp", "20"]
"""x264 settings: its fastest preset on one thread, at a constant quantiser of 20: visually clean for
flat-coloured pictures (luma PSNR ~56 dB), and faster than a rate factor, which spends bits on the still field."""


def write_frames(frames: Iterable[Frame], out: str | os.PathLike[str], fps: float) -> tuple[Path, int]:
    """Write frames to `out` (kind from `output_kind`); returns the path and the frame count."""
    kind = output_kind(out)
    check_dependencies()
    if kind == "frames":
        return _write_pngs(frames, Path(out))
    count = 0

    def write(tmp: Path) -> None:
        nonlocal count
        if kind == "gif":
            count = _write_gif(frames, tmp, fps)
            return
        import imageio_ffmpeg

        from rocketrl.render.palette import yuv420_bytes

        writer = None
        yuv = False
        try:
            for frame in frames:
                if writer is None:
                    yuv = _is_palette(frame)
                    width, height = _size(frame)
                    writer = imageio_ffmpeg.write_frames(
                        str(tmp),
                        (width, height),
                        fps=fps,
                        codec="libx264",
                        quality=None,
                        macro_block_size=16,
                        pix_fmt_in="yuv420p" if yuv else "rgb24",
                        pix_fmt_out="yuv420p",
                        ffmpeg_log_level="error",
                        output_params=[*X264, "-f", "mp4"],
                    )
                    writer.send(None)
                writer.send(yuv420_bytes(frame) if yuv else _rgb(frame).tobytes())
                count += 1
        finally:
            if writer is not None:
                writer.close()
        if writer is None:
            raise ValueError("no frames to write")

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # The encoders choose their format by the file's extension, so the temporary file keeps it.
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.partial{out.suffix}")
    try:
        write(tmp)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out, count


def _write_gif(frames: Iterable[np.ndarray], path: Path, fps: float) -> int:
    """A looping GIF through Pillow. GIF delays are whole hundredths of a second, so frame i lasts
    round((i + 1) * 100 / fps) - round(i * 100 / fps) hundredths: 30 fps alternates 3 and 4, keeping the
    total duration exact. (Pillow merges identical consecutive frames, adding their delays.)"""
    from PIL import Image

    images = [frame if isinstance(frame, Image.Image) else Image.fromarray(frame) for frame in frames]
    if not images:
        raise ValueError("no frames to write")
    delays = [10 * (round((i + 1) * 100 / fps) - round(i * 100 / fps)) for i in range(len(images))]
    images[0].save(path, save_all=True, append_images=images[1:], duration=delays, loop=0, format="GIF")
    return len(images)


def _write_pngs(frames: Iterable[Frame], folder: Path) -> tuple[Path, int]:
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for count, frame in enumerate(frames, start=1):
        Image.fromarray(_rgb(frame)).save(folder / f"frame_{count - 1:06d}.png", compress_level=1)
    return folder, count


def _is_palette(frame: Frame) -> bool:
    return not isinstance(frame, np.ndarray) and frame.mode == "P"


def _size(frame: Frame) -> tuple[int, int]:
    """(width, height) in pixels."""
    return (frame.shape[1], frame.shape[0]) if isinstance(frame, np.ndarray) else frame.size


def _rgb(frame: Frame) -> np.ndarray:
    """The frame as a contiguous (H, W, 3) uint8 RGB array."""
    if isinstance(frame, np.ndarray):
        return np.ascontiguousarray(frame, dtype=np.uint8)
    return np.asarray(frame.convert("RGB"))
