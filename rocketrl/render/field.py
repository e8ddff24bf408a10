"""The soccar field to scale, and how world points (uu) project onto the picture's pixels.

Views: "top" looks down on the field with y along the picture's width (blue's goal, -y, on the left) and x
down its height (-x at the top); "side" looks from -x with y along the width and z up; "both" stacks top over
side. A header band above the field holds the score and the clock. Every size is a multiple of 16 so video
encoders take the frames as they are. Pictures are palette images of the colours below (see palette.py):
draw with `ink(colour)`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from rocketrl.render.palette import RGB, build_palette
from rocketrl.sim.arena import (
    BACK_WALL_Y,
    BOOST_PADS,
    CEILING_Z,
    GOAL_DEPTH,
    GOAL_HALF_WIDTH,
    GOAL_HEIGHT,
    SIDE_WALL_X,
)

SCALE = 0.06
"""Pixels per uu (the field is 752 px wide). Cars and the ball are drawn larger, see frames.py."""
HEADER = 40
"""Pixels of the score band above the field."""
MARGIN_UU = 200.0
CORNER_CUT = 1152.0
"""The soccar field's corners are cut at 45 degrees, this far (uu) from the corner along each wall."""
CENTER_CIRCLE = 1000.0

GRASS = (34, 96, 48)
GRASS_DARK = (28, 80, 40)
LINE = (225, 235, 225)
WALL = (150, 160, 150)
BACKGROUND = (18, 22, 26)
BLUE = (40, 110, 255)
ORANGE = (255, 140, 20)
TEAM_COLOURS = (BLUE, ORANGE)
BALL = (245, 245, 245)
PAD_ON = (255, 215, 0)
PAD_OFF = (90, 90, 70)
TEXT = (240, 240, 240)
WHITE = (255, 255, 255)
EDGE = (20, 20, 20)
"""The ball's outline."""
SHADOW = (12, 40, 20)
"""The ball's shadow on the grass."""
DEMO = (255, 40, 40)
BAR = (40, 40, 40)
"""The empty part of a boost bar."""
SIDE_FIELD = (26, 40, 34)
SIDE_MID = (60, 80, 70)
GOAL_FILLS = ((14, 38, 89), (89, 49, 7))
"""The inside of each team's goal (its colour at 35%)."""

COLOURS: tuple[RGB, ...] = (
    GRASS, GRASS_DARK, LINE, WALL, BACKGROUND, BLUE, ORANGE, BALL, PAD_ON, PAD_OFF, TEXT, WHITE, EDGE, SHADOW,
    DEMO, BAR, SIDE_FIELD, SIDE_MID, *GOAL_FILLS,
)  # fmt: skip
"""Every colour a picture holds (each needs its own luma, see palette.py)."""
PALETTE, _INDEX = build_palette(COLOURS)


def ink(colour: RGB) -> int:
    """The palette index to draw `colour` with (a colour of COLOURS, or a grey)."""
    try:
        return _INDEX[tuple(colour)]  # type: ignore[index]
    except KeyError:
        raise KeyError(f"colour {colour} is not in the palette: add it to field.COLOURS") from None


def new_picture(width: int, height: int, colour: RGB = BACKGROUND) -> Image.Image:
    """A palette picture of one colour."""
    image = Image.new("P", (width, height), ink(colour))
    image.putpalette(PALETTE, "RGB")
    return image


def _round16(x: float) -> int:
    return int(np.ceil(x / 16.0) * 16)


@dataclass(frozen=True)
class Layout:
    """Where each view sits in the picture (pixels) and its size."""

    view: str
    width: int
    height: int
    top_origin: int | None
    """Row of the top view's first pixel, or None without a top view."""
    side_origin: int | None
    """Row of the side view's first pixel, or None without a side view."""


def layout(view: str) -> Layout:
    """The picture's layout for view 'top', 'side' or 'both'."""
    if view not in ("top", "side", "both"):
        raise ValueError(f"--view {view!r}: choose top, side or both")
    width = _round16(2 * (BACK_WALL_Y + GOAL_DEPTH + MARGIN_UU) * SCALE)
    top_h = _round16(2 * (SIDE_WALL_X + MARGIN_UU) * SCALE)
    side_h = _round16((CEILING_Z + 2 * MARGIN_UU) * SCALE)
    row = HEADER
    top_origin = side_origin = None
    if view in ("top", "both"):
        top_origin, row = row, row + top_h
    if view in ("side", "both"):
        side_origin, row = row, row + side_h
    return Layout(view, width, _round16(row), top_origin, side_origin)


def top_px(lay: Layout, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top-view pixel columns and rows (float) of world points x, y (uu)."""
    assert lay.top_origin is not None
    col = lay.width / 2 + np.asarray(y) * SCALE
    row = lay.top_origin + (SIDE_WALL_X + MARGIN_UU + np.asarray(x)) * SCALE
    return col, row


def side_px(lay: Layout, y: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Side-view pixel columns and rows (float) of world points y, z (uu)."""
    assert lay.side_origin is not None
    col = lay.width / 2 + np.asarray(y) * SCALE
    row = lay.side_origin + (CEILING_Z + MARGIN_UU - np.asarray(z)) * SCALE
    return col, row


def field_outline() -> list[tuple[float, float]]:
    """The field's walls in plan (x, y uu), an octagon with the corners cut, goals left out."""
    x, y, c = SIDE_WALL_X, BACK_WALL_Y, CORNER_CUT
    return [(-x, -y + c), (-x + c, -y), (x - c, -y), (x, -y + c), (x, y - c), (x - c, y), (-x + c, y), (-x, y - c)]


def draw_background(lay: Layout) -> Image.Image:
    """The static picture: field, lines, goals, walls (boost pads and everything that moves come later)."""
    image = new_picture(lay.width, lay.height)
    draw = ImageDraw.Draw(image)
    if lay.top_origin is not None:
        _draw_top(draw, lay)
    if lay.side_origin is not None:
        _draw_side(draw, lay)
    return image


def _draw_top(draw: ImageDraw.ImageDraw, lay: Layout) -> None:
    def px(points):
        xs, ys = np.array(points, dtype=np.float64).T
        col, row = top_px(lay, xs, ys)
        return list(zip(col.tolist(), row.tolist()))

    outline = field_outline()
    draw.polygon(px(outline), fill=ink(GRASS))
    # Stripes across the field, then the walls on top.
    for k in range(-5, 5, 2):
        stripe = [(-SIDE_WALL_X, k * 1024.0), (SIDE_WALL_X, k * 1024.0), (SIDE_WALL_X, (k + 1) * 1024.0)]
        stripe.append((-SIDE_WALL_X, (k + 1) * 1024.0))
        draw.polygon(px(stripe), fill=ink(GRASS_DARK))
    for team, sign in ((0, -1.0), (1, 1.0)):
        goal = [
            (-GOAL_HALF_WIDTH, sign * BACK_WALL_Y),
            (GOAL_HALF_WIDTH, sign * BACK_WALL_Y),
            (GOAL_HALF_WIDTH, sign * (BACK_WALL_Y + GOAL_DEPTH)),
            (-GOAL_HALF_WIDTH, sign * (BACK_WALL_Y + GOAL_DEPTH)),
        ]
        draw.polygon(px(goal), fill=ink(GOAL_FILLS[team]), outline=ink(TEAM_COLOURS[team]))
    # The stripes ran past the cut corners: clear the four triangles outside the walls.
    x, y, c = SIDE_WALL_X, BACK_WALL_Y, CORNER_CUT
    for sx in (-1.0, 1.0):
        for sy in (-1.0, 1.0):
            corner = [(sx * x, sy * y), (sx * x, sy * (y - c)), (sx * (x - c), sy * y)]
            draw.polygon(px(corner), fill=ink(BACKGROUND))
    draw.line(px([*outline, outline[0]]), fill=ink(WALL), width=2)
    draw.line(px([(-SIDE_WALL_X, 0.0), (SIDE_WALL_X, 0.0)]), fill=ink(LINE), width=1)
    col, row = top_px(lay, np.array([0.0]), np.array([0.0]))
    r = CENTER_CIRCLE * SCALE
    draw.ellipse([col[0] - r, row[0] - r, col[0] + r, row[0] + r], outline=ink(LINE), width=1)
    for sign in (-1.0, 1.0):  # goal lines
        draw.line(
            px([(-GOAL_HALF_WIDTH, sign * BACK_WALL_Y), (GOAL_HALF_WIDTH, sign * BACK_WALL_Y)]), fill=ink(LINE), width=2
        )


def _draw_side(draw: ImageDraw.ImageDraw, lay: Layout) -> None:
    def px(points):
        ys, zs = np.array(points, dtype=np.float64).T
        col, row = side_px(lay, ys, zs)
        return list(zip(col.tolist(), row.tolist()))

    y = BACK_WALL_Y
    draw.polygon(px([(-y, 0.0), (y, 0.0), (y, CEILING_Z), (-y, CEILING_Z)]), fill=ink(SIDE_FIELD))
    draw.line(px([(-y - GOAL_DEPTH, 0.0), (y + GOAL_DEPTH, 0.0)]), fill=ink(GRASS), width=3)
    draw.line(px([(-y, CEILING_Z), (y, CEILING_Z)]), fill=ink(WALL), width=1)
    for team, sign in ((0, -1.0), (1, 1.0)):
        draw.line(px([(sign * y, GOAL_HEIGHT), (sign * y, CEILING_Z)]), fill=ink(WALL), width=2)
        box = [
            (sign * y, 0.0),
            (sign * (y + GOAL_DEPTH), 0.0),
            (sign * (y + GOAL_DEPTH), GOAL_HEIGHT),
            (sign * y, GOAL_HEIGHT),
        ]
        draw.polygon(px(box), fill=ink(GOAL_FILLS[team]), outline=ink(TEAM_COLOURS[team]))
    draw.line(px([(0.0, 0.0), (0.0, CEILING_Z)]), fill=ink(SIDE_MID), width=1)


def pad_pixels(lay: Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-view pixel columns, rows and radii (P,) of the 34 boost pads in RocketSim's order."""
    pads = np.array(BOOST_PADS, dtype=np.float64)
    col, row = top_px(lay, pads[:, 0], pads[:, 1])
    radius = np.where(pads[:, 3] > 0.5, 5.0, 2.5)
    return col, row, radius
