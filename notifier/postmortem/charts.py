"""Charts of the metrics around an incident as PNG (matplotlib, Agg backend: no display needed).

Each chart draws the alert's series, its threshold (a dashed line) or the AIOps baseline band (shaded),
and marks when the fault first showed, when the incident opened, was acknowledged and was resolved. A
long title wraps (never cut), counts get whole-number ticks, and no axis is in scientific notation.
"""

from __future__ import annotations

import io
import textwrap
from datetime import datetime, timezone

from .evidence import Chart


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def draw(chart: Chart, marks: list[tuple[str, float | None, str]]) -> bytes:
    """`chart` as PNG bytes; `marks`: (label, time or None, colour) drawn as vertical lines."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import dates
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 3.8), dpi=100)
    axes = figure.add_subplot()
    if chart.band:
        lower, upper = chart.band
        upper_at = dict(upper)
        both = [(t, low, upper_at[t]) for t, low in lower if t in upper_at]
        axes.fill_between([_utc(t) for t, _, _ in both], [low for _, low, _ in both], [up for _, _, up in both],
                          color="tab:green", alpha=0.15, label="AIOps baseline band")
    for line in chart.lines:
        axes.plot([_utc(t) for t, _ in line.points], [v for _, v in line.points], linewidth=1.4, label=line.label)
    if chart.threshold:
        op, value = chart.threshold
        axes.axhline(value, color="tab:red", linestyle="--", linewidth=1.2, label=f"threshold {op} {value:g}")
    for label, at, colour in marks:
        if at is not None:
            axes.axvline(_utc(at), color=colour, linestyle=":", linewidth=1.2, label=label)
    if not chart.lines:
        axes.text(0.5, 0.5, "no samples in this window", transform=axes.transAxes, ha="center", va="center")
    axes.set_title("\n".join(textwrap.wrap(chart.title, 100, max_lines=3, placeholder=" …")), fontsize=9)
    values = [v for line in chart.lines for _, v in line.points]
    if values and all(float(v).is_integer() for v in values):  # a count: 0, 1, 2, never 0.5
        from matplotlib.ticker import MaxNLocator

        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.ticklabel_format(axis="y", style="plain", useOffset=False)
    axes.xaxis.set_major_formatter(dates.DateFormatter("%H:%M:%S", tz=timezone.utc))
    axes.set_xlabel("UTC", fontsize=8)
    axes.tick_params(labelsize=7)
    axes.grid(alpha=0.3)
    # the legend under the plot, never over the lines
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png")
    return out.getvalue()
