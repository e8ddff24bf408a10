"""The frames' palette, chosen so that a frame turns into H.264's YUV 4:2:0 planes almost for free.

Frames are palette ("P") images of a few flat colours. Each colour sits at the palette index equal to its
luma, Y = 16 + 219 * (0.299 R + 0.587 G + 0.114 B) / 255 (BT.601, limited range: what ffmpeg assumes for
untagged yuv420p video, and what it would compute from RGB itself). So a frame's bytes are its Y plane as
they stand, and its chroma planes are two 256-entry table look-ups on the frame sampled at half size (nearest
pixel of each 2x2 block). This skips ffmpeg's RGB -> YUV conversion, the largest cost after x264 itself.

Draw with `ink(colour)` (an index), never with an RGB tuple: Pillow could file a new tuple in any free slot.
Colours with the same luma cannot share the palette; `build_palette` says which ones clash.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

RGB = tuple[int, int, int]


def yuv(colour: Sequence[int]) -> tuple[int, int, int]:
    """BT.601 limited-range (Y, U, V) of an RGB colour, each rounded to an integer in [0, 255]."""
    r, g, b = (c / 255.0 for c in colour[:3])
    y = 16.0 + 65.481 * r + 128.553 * g + 24.966 * b
    u = 128.0 - 37.797 * r - 74.203 * g + 112.0 * b
    v = 128.0 + 112.0 * r - 93.786 * g - 18.214 * b
    return tuple(int(min(max(round(c), 0), 255)) for c in (y, u, v))  # type: ignore[return-value]


def build_palette(colours: Sequence[RGB]) -> tuple[bytes, dict[RGB, int]]:
    """A 256-colour palette (768 bytes) with each colour at the index of its luma, and colour -> index.

    Free slots hold greys of that exact luma where one exists (so greys can be drawn too); the rest
    (luma below 16 or above 235, which no colour has) hold black. Raises ValueError when two colours share
    a luma.
    """
    slots: list[RGB | None] = [None] * 256
    for colour in colours:
        y = yuv(colour)[0]
        if slots[y] is not None and slots[y] != tuple(colour):
            raise ValueError(f"colours {slots[y]} and {tuple(colour)} share luma {y}; change one by a shade")
        slots[y] = tuple(colour)  # type: ignore[assignment]
    for g in range(256):
        y = yuv((g, g, g))[0]
        if slots[y] is None:
            slots[y] = (g, g, g)
    index = {colour: i for i, colour in enumerate(slots) if colour is not None and yuv(colour)[0] == i}
    data = bytes(c for colour in slots for c in (colour or (0, 0, 0)))
    return data, index


_LUT_CACHE: dict[bytes, tuple[list[int], list[int], list[int], bool]] = {}


def _luts(palette: bytes) -> tuple[list[int], list[int], list[int], bool]:
    """Y, U and V look-up tables (256 each) of a palette, and whether it is laid out as `build_palette` lays
    it out: every slot from 16 to 235 holds a colour of that luma, the slots outside that range black filler."""
    cached = _LUT_CACHE.get(palette)
    if cached is None:
        entries = np.frombuffer(palette.ljust(768, b"\0")[:768], dtype=np.uint8).reshape(256, 3)
        planes = np.array([yuv(c) for c in entries.tolist()], dtype=np.int64)  # (256, 3)
        inside = np.arange(16, 236)
        filler = np.r_[0:16, 236:256]
        identity = bool((planes[inside, 0] == inside).all() and not entries[filler].any())
        cached = (planes[:, 0].tolist(), planes[:, 1].tolist(), planes[:, 2].tolist(), identity)
        if len(_LUT_CACHE) > 64:
            _LUT_CACHE.clear()
        _LUT_CACHE[palette] = cached
    return cached


def yuv420_bytes(image: Image.Image) -> bytes:
    """The planar YUV 4:2:0 bytes (Y: H*W, then U and V: H/2*W/2 each) of a "P" image with even sides.

    With a `build_palette` palette the Y plane is the image's own bytes; any other palette goes through a
    table look-up (slower, same result).
    """
    if image.mode != "P":
        raise ValueError(f"yuv420_bytes needs a palette image, got mode {image.mode}")
    width, height = image.size
    if width % 2 or height % 2:
        raise ValueError(f"frame size {width}x{height}: both sides must be even")
    lut_y, lut_u, lut_v, identity = _luts(bytes(image.getpalette("RGB") or []))
    data = image.tobytes()
    index = Image.frombuffer("L", (width, height), data, "raw", "L", 0, 1)
    luma = data if identity else index.point(lut_y).tobytes()
    half = index.resize((width // 2, height // 2), Image.Resampling.NEAREST)
    return b"".join((luma, half.point(lut_u).tobytes(), half.point(lut_v).tobytes()))
