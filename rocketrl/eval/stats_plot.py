"""A picture of `rocketrl stats`: how each policy played, side by side, one panel per figure.

Each column of the stats table (a policy in a set of replays, e.g. gauntlet_v1 and a new bot each against the same
opponents) becomes one bar in every panel. Needs matplotlib (the `plot` extra).
"""

from __future__ import annotations

import math
from pathlib import Path

from rocketrl.infra.atomic_file import write_atomic

PANELS: tuple[tuple[str, str], ...] = (
    ("goals_per_game", "goals per game"),
    ("shots_per_minute", "shots per car-minute"),
    ("shot_conversion", "goals per shot"),
    ("saves_per_minute", "saves per car-minute"),
    ("touches_per_minute", "touches per car-minute"),
    ("aerial_touch_share", "aerial share of touches"),
    ("boost_used_per_minute", "boost used per car-minute"),
    ("boost_taken_per_minute", "boost taken from pads per car-minute"),
    ("boost_held", "boost held (mean, 0-100)"),
    ("possession_share", "possession (share of last touches)"),
    ("kickoff_first_touch_share", "kickoffs touched first"),
    ("kickoff_goal_share", "kickoffs scored from (within 6 s)"),
    ("goal_side_share", "time goal-side of the ball"),
    ("ball_goal_alignment", "lined up ball to goal (mean, -1 to 1)"),
    ("conceded_goal_side_share", "goals against with a defender goal-side"),
    ("supersonic_share", "time supersonic"),
)
"""(figure key, panel title) in the order drawn; keys from PolicyStats.summary, TeamStats.summary and
`derived_figures`."""


def derived_figures(figures: dict[str, float]) -> dict[str, float]:
    """The per-game and per-kickoff rates the panels show beside a policy's summary figures."""
    games, kickoffs = figures.get("games", 0), figures.get("kickoffs", 0)
    nan = float("nan")
    return {
        "goals_per_game": figures["goals"] / games if games else nan,
        "kickoff_goal_share": figures["kickoff_goals"] / kickoffs if kickoffs else nan,
    }


def require_matplotlib() -> None:
    """Fail early, naming the fix, when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise SystemExit('rocketrl stats --plot needs matplotlib: pip install "rocketrl[plot]"') from exc


def plot_stats(columns: dict[str, dict[str, float]], path: str | Path) -> Path:
    """Draw `columns` ({label: figures}) as a grid of bar charts into the image `path` (PNG, written atomically)."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(columns)
    figures = {label: {**columns[label], **derived_figures(columns[label])} for label in labels}
    ncols = 4
    nrows = math.ceil(len(PANELS) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.0 * nrows), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (key, title) in zip(axes.flat, PANELS):
        values = [figures[label].get(key, float("nan")) for label in labels]
        shown = [0.0 if v is None or math.isnan(v) else v for v in values]
        bars = ax.bar(range(len(labels)), shown, color=[colours[i % len(colours)] for i in range(len(labels))])
        for bar, value in zip(bars, values):
            text = "-" if value is None or math.isnan(value) else f"{value:.3g}"
            ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom")
        ax.set_title(title, fontsize=10)
        ax.set_xticks([])
        ax.margins(y=0.2)
    for ax in list(axes.flat)[len(PANELS) :]:
        ax.axis("off")
    fig.legend(
        [plt.Rectangle((0, 0), 1, 1, color=colours[i % len(colours)]) for i in range(len(labels))],
        labels,
        loc="lower center",
        ncol=min(len(labels), 3),
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0.06 + 0.02 * math.ceil(len(labels) / 3), 1, 1))
    out = write_atomic(path, lambda tmp: fig.savefig(tmp, format="png", dpi=100))
    plt.close(fig)
    return out
