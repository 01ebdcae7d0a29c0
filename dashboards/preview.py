"""What an SRE would see, without Grafana: each dashboard drawn to PNG with matplotlib (Agg backend), every
panel at its place on the 24-column grid, filled from the same queries (variables resolved as in
`live`) against a live Prometheus: time series as lines, stats as big numbers, tables as rows, the heat
map as a 2-D histogram of the series' values over time."""

from __future__ import annotations

import io
import re
import time
from datetime import datetime, timezone

from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable

from .check import expand
from .panels import panels
from .live import LIVE_BUILTINS, variable_values

ROW_INCH, COLUMN_INCH = 0.42, 0.8  # one grid unit
_LEGEND = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def _plain(value: float) -> str:
    """Three significant digits without scientific notation: 0.00123, 123, 1.23 (never 1.23e-03)."""
    if value == 0 or abs(value) >= 1:
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    digits = max(0, 2 - int(f"{abs(value):e}".split("e")[1]))  # 3 significant digits after the leading zeros
    return f"{value:.{digits}f}".rstrip("0").rstrip(".")


def format_value(value: float, unit: str) -> str:
    """`value` the way Grafana shows `unit` (the units vigil's panels use): large values with an SI prefix
    (22 kW, not 2.2e+04 W), small ones in plain digits."""
    if value != value:  # NaN
        return "NaN"
    if unit == "percentunit":
        return f"{_plain(value * 100)}%"
    if unit == "bytes":
        return f"{value / 2**30:.1f} GiB" if abs(value) >= 2**30 else f"{value / 2**20:.0f} MiB"
    suffix = {"watt": "W", "celsius": "°C", "s": "s", "hertz": "Hz", "ops": "/s"}.get(unit, "")
    if unit.startswith("suffix:"):
        suffix = unit.split(":", 1)[1].strip()
    scalable = unit not in ("celsius", "s") and not unit.startswith("suffix:")
    for size, prefix in _SI if scalable else ():
        if abs(value) >= size:
            return f"{_plain(value / size)} {prefix}{suffix}".rstrip()
    return f"{_plain(value)} {suffix}".rstrip() if suffix not in ("/s",) else f"{_plain(value)}/s"


def table_text(samples: list[tuple[dict[str, str], str]], rows: int = 10) -> str:
    """A table panel as Grafana shows it: a column per label (the series' identity), then the value."""
    columns = sorted({k for labels, _ in samples for k in labels} - {"__name__", "job", "instance", "uuid"})
    cells = [columns + ["Value"]] + [[labels.get(c, "") for c in columns] + [value] for labels, value in samples[:rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells)


def _legend(target: dict, labels: dict[str, str]) -> str:
    text = target.get("legendFormat") or ""
    if text:
        return _LEGEND.sub(lambda m: labels.get(m.group(1), ""), text)
    shown = {k: v for k, v in labels.items() if k not in ("job", "instance", "uuid", "__name__")}
    return ", ".join(f"{k}={v}" for k, v in sorted(shown.items())) or "value"


def _draw_panel(axes, panel: dict, queries: list[tuple[dict, str]], client: PrometheusClient, now: float,
                window_s: float, step_s: float) -> bool:
    """Draw one panel; True when any of its queries had data."""
    from matplotlib import dates

    unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "short")
    kind, any_data = panel.get("type"), False
    axes.set_title(panel.get("title", ""), fontsize=8, loc="left")
    axes.tick_params(labelsize=6)
    if kind in ("timeseries", "heatmap"):
        points = []
        for target, query in queries:
            for series in client.query_range(query, now - window_s, now, step_s):
                any_data = True
                times = [datetime.fromtimestamp(t, tz=timezone.utc) for t, _ in series.points]
                if kind == "timeseries":
                    axes.plot(times, [v for _, v in series.points], linewidth=0.9, label=_legend(target, series.labels))
                points += series.points
        if kind == "heatmap" and points:
            axes.hist2d([dates.date2num(datetime.fromtimestamp(t, tz=timezone.utc)) for t, _ in points],
                        [v for _, v in points], bins=(30, 12), cmap="inferno")
            axes.xaxis_date()
        axes.xaxis.set_major_formatter(dates.DateFormatter("%H:%M:%S", tz=timezone.utc))
        axes.yaxis.set_major_formatter(lambda v, _: format_value(v, unit))
        if kind == "timeseries" and any_data and len(axes.lines) <= 8:
            axes.legend(fontsize=5, loc="upper left", frameon=False)
        axes.grid(alpha=0.3)
    else:
        lines, samples = [], []
        for target, query in queries:
            for sample in client.query(query):
                any_data = True
                lines.append((_legend(target, sample.labels), format_value(sample.value, unit)))
                samples.append((sample.labels, format_value(sample.value, unit)))
        axes.set_axis_off()
        if kind == "stat":
            text = "\n".join(value if len(lines) == 1 else f"{name}: {value}" for name, value in lines[:4])
            axes.text(0.5, 0.45, text, ha="center", va="center", fontsize=14 if len(lines) == 1 else 8,
                      transform=axes.transAxes, weight="bold")
        else:
            axes.text(0.01, 0.95, table_text(samples), ha="left", va="top", fontsize=6, family="monospace",
                      transform=axes.transAxes)
    if not any_data:
        axes.text(0.5, 0.5, "No data", ha="center", va="center", fontsize=8, color="grey", transform=axes.transAxes)
    return any_data


def render_png(model: dict, client: PrometheusClient, now: float | None = None, window_s: float = 600,
               step_s: float = 5, chosen: dict[str, str] | None = None) -> tuple[bytes, int, int, dict[str, str]]:
    """(PNG of the dashboard, panels drawn, panels with data, the variables' values it was drawn with);
    `chosen`: variable values to show (the others take their first value)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    now = time.time() if now is None else now
    values = variable_values(model, client, chosen)
    everything = panels(model)
    rows = max((p["gridPos"]["y"] + p["gridPos"]["h"] for p in everything), default=1)
    figure = Figure(figsize=(24 * COLUMN_INCH, rows * ROW_INCH + 0.6), dpi=80)
    chosen = ", ".join(f"{k}={v}" for k, v in values.items())
    figure.suptitle(f"{model.get('title', '')}{'  (' + chosen + ')' if chosen else ''}", fontsize=12, x=0.01,
                    ha="left")
    top = rows * ROW_INCH / (rows * ROW_INCH + 0.6)
    drawn = with_data = 0
    for panel in everything:
        grid = panel["gridPos"]
        left, bottom = grid["x"] / 24, top * (1 - (grid["y"] + grid["h"]) / rows)
        width, height = grid["w"] / 24, top * grid["h"] / rows
        if panel.get("type") == "row":
            figure.text(left + 0.005, bottom + height / 2, expand(panel.get("title", ""), values, LIVE_BUILTINS)[0],
                        fontsize=10, weight="bold", va="center")
            continue
        axes = figure.add_axes((left + 0.03 * width + 0.004, bottom + 0.12 * height, width * 0.94 - 0.008,
                                height * 0.72))
        queries = [(t, expand(t.get("expr", ""), values, LIVE_BUILTINS)[0]) for t in panel.get("targets") or []]
        try:
            with_data += _draw_panel(axes, panel, queries, client, now, window_s, step_s)
        except PrometheusUnavailable as exc:
            axes.text(0.5, 0.5, f"query error: {exc}"[:80], ha="center", fontsize=6, color="red",
                      transform=axes.transAxes)
        drawn += 1
    out = io.BytesIO()
    figure.savefig(out, format="png")
    return out.getvalue(), drawn, with_data, values
