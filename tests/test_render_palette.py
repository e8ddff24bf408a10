"""The frame palette: colours at their luma's index, and YUV 4:2:0 planes equal to the BT.601 conversion."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PIL")

from PIL import Image  # noqa: E402

from rocketrl.render.field import COLOURS, PALETTE, ink, new_picture  # noqa: E402
from rocketrl.render.palette import build_palette, yuv, yuv420_bytes  # noqa: E402


def test_yuv_of_hand_computed_colours() -> None:
    assert yuv((0, 0, 0)) == (16, 128, 128)
    assert yuv((255, 255, 255)) == (235, 128, 128)
    # Pure red: Y = 16 + 65.481, U = 128 - 37.797, V = 128 + 112.
    assert yuv((255, 0, 0)) == (81, 90, 240)


def test_every_colour_sits_at_its_luma_and_clashes_are_named() -> None:
    for colour in COLOURS:
        assert ink(colour) == yuv(colour)[0]
        assert tuple(PALETTE[3 * ink(colour) : 3 * ink(colour) + 3]) == colour
    with pytest.raises(ValueError, match="share luma"):
        build_palette([(255, 0, 0), (254, 0, 0), (255, 1, 0)])
    with pytest.raises(KeyError, match="add it to field.COLOURS"):
        ink((1, 2, 3))


@pytest.mark.parametrize("own_palette", [True, False])
def test_yuv420_planes_equal_the_rgb_conversion(own_palette: bool) -> None:
    rng = np.random.default_rng(0)
    image = new_picture(32, 16)
    pixels = np.array([ink(c) for c in COLOURS], dtype=np.uint8)[rng.integers(0, len(COLOURS), (16, 32))]
    image = Image.frombytes("P", (32, 16), pixels.tobytes())
    image.putpalette(PALETTE if own_palette else bytes(reversed(PALETTE)), "RGB")
    rgb = np.asarray(image.convert("RGB"))
    planes = np.array([[yuv(p) for p in row] for row in rgb.tolist()], dtype=np.uint8)  # (16, 32, 3)
    data = np.frombuffer(yuv420_bytes(image), dtype=np.uint8)
    y, rest = data[: 16 * 32].reshape(16, 32), data[16 * 32 :]
    u, v = rest[: 8 * 16].reshape(8, 16), rest[8 * 16 :].reshape(8, 16)
    assert (y == planes[..., 0]).all()
    # Chroma: one pixel of each 2x2 block (Pillow's nearest-pixel halving takes the bottom-right one).
    assert (u == planes[1::2, 1::2, 1]).all() and (v == planes[1::2, 1::2, 2]).all()


def test_yuv420_needs_a_palette_image_of_even_size() -> None:
    with pytest.raises(ValueError, match="palette image"):
        yuv420_bytes(Image.new("RGB", (4, 4)))
    with pytest.raises(ValueError, match="even"):
        yuv420_bytes(Image.new("P", (5, 4)))
