"""A small PNG bar chart of 2GAD per period, for uploads beside a report or digest."""

from __future__ import annotations

import io
from collections.abc import Sequence

WIDTH_PX, HEIGHT_PX, DPI = 800, 300, 100
MAX_LABELS = 12
BAR_COLOUR = "#4A6FA5"


def trend_png(rows: Sequence[tuple[str, int]], title: str) -> bytes:
    """An 800x300 PNG bar chart of (period label, 2GAD) rows, labels thinned to stay readable."""
    # imported here so `import bot.render` stays cheap for faces that never draw
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    labels = [str(label) for label, _ in rows]
    values = [max(0, int(value)) for _, value in rows]
    figure = Figure(figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI)
    FigureCanvasAgg(figure)  # a canvas per figure: no pyplot, no global state, thread-safe
    axes = figure.add_subplot()
    clean_title = " ".join(title.split())
    if len(clean_title) > 90:
        clean_title = clean_title[:89] + "…"
    axes.set_title(clean_title, fontsize=11, loc="left", parse_math=False)
    if values:
        positions = range(len(values))
        axes.bar(positions, values, color=BAR_COLOUR, width=0.8)
        step = max(1, -(-len(labels) // MAX_LABELS))
        ticks = list(positions)[::step]
        axes.set_xticks(ticks, [labels[i][:12] for i in ticks], fontsize=8,
                        rotation=30 if len(ticks) > 6 else 0, ha="right" if len(ticks) > 6 else "center")
        axes.set_xlim(-0.6, len(values) - 0.4)
    else:
        axes.set_xticks([])
        axes.text(0.5, 0.5, "no activity in this period", transform=axes.transAxes,
                  ha="center", va="center", fontsize=10, color="#666666", parse_math=False)
    axes.set_ylabel("2GAD (person-days)", fontsize=8)
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylim(bottom=0, top=max(values or [0]) * 1.1 or 1)
    axes.tick_params(axis="y", labelsize=8)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
    return out.getvalue()
