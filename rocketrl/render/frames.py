"""Frames of a replay: at game time t, the cars, ball, boost pads, score, clock and event marks drawn on the field.

Replays hold one state per step (tick_skip / 120 s, 1/15 s by default); a frame at time t shows positions
interpolated linearly between the two states around t (orientations interpolated and renormalised) and the
discrete things (scores, pads, boost, demolished cars) of the state at or before t. Nothing is interpolated
across a reset (after a goal, at a kickoff): the later state is held until its own time. Marks stay on screen
for a while of game time after their event: GOAL banner in the scorer's colour, a ring where a car touched
the ball, a cross where a car was demolished.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from rocketrl.league.replay import Replay
from rocketrl.render.field import (
    BALL,
    BAR,
    DEMO,
    EDGE,
    LINE,
    PAD_OFF,
    PAD_ON,
    SCALE,
    SHADOW,
    TEAM_COLOURS,
    TEXT,
    WHITE,
    Layout,
    draw_background,
    ink,
    layout,
    pad_pixels,
    side_px,
    top_px,
)
from rocketrl.sim.arena import BALL_RADIUS, CEILING_Z

CAR_LENGTH, CAR_WIDTH, CAR_HEIGHT = 118.01, 84.20, 36.16
"""Octane hitbox, uu."""
CAR_DRAWN = 1.8
"""Cars are drawn this many times their hitbox's size, so they stay visible on a whole-field picture."""
BALL_DRAWN = 1.3
"""The ball is drawn this many times its size."""
GOAL_MARK_SECONDS = 2.0
TOUCH_MARK_SECONDS = 0.5
DEMO_MARK_SECONDS = 1.5
RESET_JUMP_UU = 800.0
"""A ball moving farther than this between two recorded states was reset (faster than any ball can fly)."""


def _font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType sizes
        return ImageFont.load_default()


class FrameRenderer:
    """Draws frames of one replay in one view ('top', 'side' or 'both')."""

    def __init__(self, replay: Replay, view: str = "top") -> None:
        self.replay = replay
        self.layout: Layout = layout(view)
        self.background = draw_background(self.layout)
        self.step_seconds = replay.step_seconds
        self.teams = list(replay.meta["car_teams"])
        self.ball_pos = replay.ball_pos.double().numpy()
        self.car_pos = replay.car_pos.double().numpy()
        self.car_forward = replay.car_forward.double().numpy()
        self.car_up = replay.car_up.double().numpy()
        self.car_boost = replay.car_boost.float().numpy()
        self.demolished = replay.car_demolished.numpy()
        self.pads = replay.pad_active.numpy()
        self.touch = replay.car_touch.numpy()
        self.goal = replay.goal.numpy().astype(np.int64)
        self.clock = replay.clock.numpy()
        self.game_clock = replay.meta.get("clock") == "game"
        # Scores of this recording (arenas count goals since they were built, across games).
        self.blue = (replay.blue_score - replay.blue_score[:1]).numpy()
        self.orange = (replay.orange_score - replay.orange_score[:1]).numpy()
        jump = np.linalg.norm(np.diff(self.ball_pos, axis=0), axis=-1) > RESET_JUMP_UU
        self.cut = np.append(jump | (self.goal[:-1] >= 0), True)  # cut[k]: no interpolation from k to k + 1
        self.pad_col, self.pad_row, self.pad_radius = pad_pixels(self.layout) if self.layout.top_origin else (None,) * 3
        self.font = _font(20)
        self.small = _font(12)
        self.pads_known = "pad_active" not in replay.meta.get("missing", [])
        self.demo_steps = np.argwhere(np.diff(self.demolished.astype(np.int8), axis=0, prepend=0) > 0)
        self._base_key: tuple | None = None
        self._base = self.background

    @property
    def duration(self) -> float:
        """Game seconds the replay covers."""
        return self.replay.num_steps * self.step_seconds

    def num_frames(self, fps: float, speed: float = 1.0) -> int:
        """Frames a video of the whole replay holds at fps frames per second and playback speed `speed`."""
        return max(1, int(np.floor(self.duration / speed * fps + 1e-9)))

    def state_at(self, t: float) -> dict[str, np.ndarray | int | float]:
        """The interpolated state at game time t (s): positions, orientations, and the state index k."""
        last = self.replay.num_steps - 1
        s = min(max(t / self.step_seconds, 0.0), float(last))
        k = int(np.floor(s))
        a = 0.0 if k >= last or self.cut[k] else s - k
        k1 = min(k + 1, last)

        def lerp(x: np.ndarray) -> np.ndarray:
            return x[k] * (1 - a) + x[k1] * a

        forward, up = lerp(self.car_forward), lerp(self.car_up)
        forward /= np.linalg.norm(forward, axis=-1, keepdims=True).clip(1e-6)
        up /= np.linalg.norm(up, axis=-1, keepdims=True).clip(1e-6)
        left = np.cross(up, forward)
        cars = lerp(self.car_pos)
        return {"k": k, "ball": lerp(self.ball_pos), "cars": cars, "forward": forward, "up": up, "left": left}

    def frame(self, t: float) -> np.ndarray:
        """The picture (H, W, 3) uint8 RGB at game time t seconds."""
        return np.asarray(self.image(t).convert("RGB"))

    def image(self, t: float) -> Image.Image:
        """The picture at game time t seconds, a palette image (see palette.py)."""
        state = self.state_at(t)
        k = int(state["k"])
        image = self._base_for(k).copy()
        draw = ImageDraw.Draw(image)
        lay = self.layout
        order = np.argsort(state["cars"][:, 2])  # lower cars first
        if lay.side_origin is not None:
            self._draw_side(draw, state, order, k)
        if lay.top_origin is not None:
            self._draw_top(draw, state, order, k)
        self._draw_marks(draw, t, k)
        return image

    def _base_for(self, k: int) -> Image.Image:
        """The field with the pads, score and clock of state k; redrawn only when one of them changes."""
        key = (int(self.blue[k]), int(self.orange[k]), int(np.floor(abs(float(self.clock[k])))), self.pads[k].tobytes())
        if key != self._base_key:
            base = self.background.copy()
            draw = ImageDraw.Draw(base)
            if self.layout.top_origin is not None:
                self._draw_pads(draw, k)
            self._draw_header(draw, k)
            self._base, self._base_key = base, key
        return self._base

    # ----------------------------------------------------------------------------------- parts
    def _draw_pads(self, draw: ImageDraw.ImageDraw, k: int) -> None:
        active = self.pads[k]
        for p in range(len(active)):
            c, r, rad = self.pad_col[p], self.pad_row[p], self.pad_radius[p]
            box = [c - rad, r - rad, c + rad, r + rad]
            if active[p] or not self.pads_known:
                draw.ellipse(box, fill=ink(PAD_ON if self.pads_known else PAD_OFF))
            else:
                draw.ellipse(box, outline=ink(PAD_ON), width=1)

    @staticmethod
    def _hitbox_corners(pos: np.ndarray, forward: np.ndarray, left: np.ndarray) -> np.ndarray:
        """The 4 corners (4, 3) of the hitbox's top-down rectangle, in uu."""
        half_l, half_w = CAR_DRAWN * CAR_LENGTH / 2, CAR_DRAWN * CAR_WIDTH / 2
        signs = np.array([[1, 1], [1, -1], [-1, -1], [-1, 1]], dtype=np.float64)
        return pos + signs[:, :1] * half_l * forward + signs[:, 1:] * half_w * left

    def _draw_top(self, draw: ImageDraw.ImageDraw, state: dict, order: np.ndarray, k: int) -> None:
        lay = self.layout
        ball = state["ball"]
        col, row = top_px(lay, ball[0], ball[1])
        shadow = BALL_DRAWN * BALL_RADIUS * SCALE
        draw.ellipse([col - shadow, row - shadow, col + shadow, row + shadow], fill=ink(SHADOW))
        for c in order:
            if self.demolished[k, c]:
                continue
            team = ink(TEAM_COLOURS[self.teams[c]])
            corners = self._hitbox_corners(state["cars"][c], state["forward"][c], state["left"][c])
            cx, cy = top_px(lay, corners[:, 0], corners[:, 1])
            draw.polygon(list(zip(cx.tolist(), cy.tolist())), fill=team, outline=ink(WHITE))
            # A white nose marks the front (the centre keeps the team colour).
            front = [state["cars"][c] + state["forward"][c] * CAR_DRAWN * CAR_LENGTH * f for f in (0.3, 0.5)]
            (fx0, fx1), (fy0, fy1) = top_px(
                lay, np.array([front[0][0], front[1][0]]), np.array([front[0][1], front[1][1]])
            )
            draw.line([(float(fx0), float(fy0)), (float(fx1), float(fy1))], fill=ink(WHITE), width=2)
            px, py = top_px(lay, state["cars"][c][0], state["cars"][c][1])
            self._boost_bar(draw, float(px), float(py) - 14, self.car_boost[k, c])
        # The ball above the cars, larger the higher it is (its height also written when in the air).
        radius = BALL_DRAWN * BALL_RADIUS * SCALE * (1.0 + 1.2 * max(ball[2] - BALL_RADIUS, 0.0) / CEILING_Z)
        draw.ellipse([col - radius, row - radius, col + radius, row + radius], fill=ink(BALL), outline=ink(EDGE))
        if ball[2] > 300.0:
            draw.text((col + radius + 3, row - 7), f"{ball[2]:.0f}", fill=ink(TEXT), font=self.small)

    def _draw_side(self, draw: ImageDraw.ImageDraw, state: dict, order: np.ndarray, k: int) -> None:
        lay = self.layout
        half = CAR_DRAWN * np.array([CAR_LENGTH, CAR_WIDTH, CAR_HEIGHT]) / 2
        signs = np.array([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)], dtype=np.float64)
        for c in order:
            if self.demolished[k, c]:
                continue
            pos = state["cars"][c]
            axes = np.stack([state["forward"][c], state["left"][c], state["up"][c]])  # (3, 3): the hitbox's axes
            corners = pos + (signs * half) @ axes  # (8, 3)
            cx, cy = side_px(lay, corners[:, 1], corners[:, 2])
            hull = _convex_hull(np.stack([cx, cy], axis=-1))
            draw.polygon([tuple(p) for p in hull.tolist()], fill=ink(TEAM_COLOURS[self.teams[c]]))
        ball = state["ball"]
        col, row = side_px(lay, ball[1], ball[2])
        r = BALL_DRAWN * BALL_RADIUS * SCALE
        draw.ellipse([col - r, row - r, col + r, row + r], fill=ink(BALL), outline=ink(EDGE))

    @staticmethod
    def _boost_bar(draw: ImageDraw.ImageDraw, x: float, y: float, boost: float) -> None:
        width = 18.0
        draw.rectangle([x - width / 2, y - 2, x + width / 2, y + 1], fill=ink(BAR))
        draw.rectangle([x - width / 2, y - 2, x - width / 2 + width * float(boost) / 100.0, y + 1], fill=ink(PAD_ON))

    def _recent(self, k: int, seconds: float) -> range:
        """Recorded steps whose events still show at step k."""
        return range(max(0, k - int(round(seconds / self.step_seconds))), k + 1)

    def _draw_marks(self, draw: ImageDraw.ImageDraw, t: float, k: int) -> None:
        lay = self.layout
        if lay.top_origin is not None:
            for j in self._recent(k, TOUCH_MARK_SECONDS):
                for c in np.flatnonzero(self.touch[j]):
                    col, row = top_px(lay, self.ball_pos[j, 0], self.ball_pos[j, 1])
                    r = 16.0 - 6.0 * (k - j) * self.step_seconds / TOUCH_MARK_SECONDS
                    ring = ink(TEAM_COLOURS[self.teams[c]])
                    draw.ellipse([col - r, row - r, col + r, row + r], outline=ring, width=2)
            for j, c in self.demo_steps:
                if 0 <= k - j <= DEMO_MARK_SECONDS / self.step_seconds:
                    col, row = top_px(lay, self.car_pos[j - 1 if j else j, c, 0], self.car_pos[j - 1 if j else j, c, 1])
                    d = 10.0
                    draw.line([(col - d, row - d), (col + d, row + d)], fill=ink(DEMO), width=3)
                    draw.line([(col - d, row + d), (col + d, row - d)], fill=ink(DEMO), width=3)
        for j in self._recent(k, GOAL_MARK_SECONDS):
            if self.goal[j] >= 0:
                colour = ink(TEAM_COLOURS[int(self.goal[j])])
                text = f"GOAL {'BLUE' if self.goal[j] == 0 else 'ORANGE'}!"
                w = draw.textlength(text, font=self.font)
                y = (lay.top_origin or lay.side_origin or 0) + 12
                draw.rectangle([lay.width / 2 - w / 2 - 10, y - 4, lay.width / 2 + w / 2 + 10, y + 28], fill=colour)
                draw.text((lay.width / 2 - w / 2, y), text, fill=ink(WHITE), font=self.font)
                break

    def _draw_header(self, draw: ImageDraw.ImageDraw, k: int) -> None:
        lay = self.layout
        blue, orange = int(self.blue[k]), int(self.orange[k])
        clock = float(self.clock[k])
        if self.game_clock:
            seconds = abs(clock)
            clock_text = f"{'+' if clock < 0 else ''}{int(seconds // 60)}:{int(seconds % 60):02d}"
        else:
            clock_text = f"{int(clock // 60)}:{int(clock % 60):02d}"
        mid = lay.width / 2
        draw.text((mid - 70, 10), f"{blue}", fill=ink(TEAM_COLOURS[0]), font=self.font, anchor="ra")
        draw.text((mid, 10), clock_text, fill=ink(TEXT), font=self.font, anchor="ma")
        draw.text((mid + 70, 10), f"{orange}", fill=ink(TEAM_COLOURS[1]), font=self.font, anchor="la")
        names = (self.replay.meta.get("blue_policy") or "blue", self.replay.meta.get("orange_policy") or "orange")
        draw.text((10, 8), str(names[0]), fill=ink(TEAM_COLOURS[0]), font=self.small)
        draw.text((lay.width - 10, 8), str(names[1]), fill=ink(TEAM_COLOURS[1]), font=self.small, anchor="ra")
        if not self.pads_known:
            draw.text((10, 24), "boost pads not recorded", fill=ink(LINE), font=self.small)


def _convex_hull(points: np.ndarray) -> np.ndarray:
    """The convex hull (M, 2) of points (N, 2), counter-clockwise (Andrew's monotone chain)."""
    pts = sorted(set(map(tuple, np.round(points, 3).tolist())))
    if len(pts) <= 2:
        return np.array(pts)

    def cross(o, a, b) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list = []
    upper: list = []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


def render_frames(replay: Replay, view: str = "top", fps: float = 30.0, speed: float = 1.0) -> Iterator[Image.Image]:
    """Yield every frame of a replay, as palette images (`FrameRenderer.image`), at `fps` frames per second of
    video and `speed` x real time."""
    renderer = FrameRenderer(replay, view)
    for i in range(renderer.num_frames(fps, speed)):
        yield renderer.image(i * speed / fps)
