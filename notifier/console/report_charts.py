"""Charts of the on-call health page, as inline SVG built on the server (no script, no CDN).

One chart shape serves them all: horizontal bars, one row per label, each bar a stack of segments
(value, CSS class, tooltip). The SVG is built as an element tree and serialized, so every label and
tooltip is escaped; the page inlines it as is. Colours come from the console's CSS classes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

from markupsafe import Markup

ROW_H, BAR_H, LABEL_W, BAR_W, VALUE_W = 22, 14, 110, 190, 130
MAX_LABEL = 16  # characters of a label shown (the whole one is in the tooltip)


@dataclass(frozen=True)
class Segment:
    value: float
    css: str  # a class of the console's CSS (`seg-ok`, `seg-bad` …)
    title: str  # the tooltip


@dataclass(frozen=True)
class Row:
    label: str
    segments: tuple[Segment, ...]
    note: str = ""  # printed after the bar (a total, a share)


def bar_chart(title: str, rows: list[Row]) -> Markup:
    """A horizontal stacked bar chart of `rows`, scaled to the largest total; an empty chart says so."""
    height = max(1, len(rows)) * ROW_H + 8
    svg = ET.Element("svg", {"xmlns": "http://www.w3.org/2000/svg", "class": "chart", "role": "img",
                             "viewBox": f"0 0 {LABEL_W + BAR_W + VALUE_W} {height}",
                             "width": str(LABEL_W + BAR_W + VALUE_W), "height": str(height)})
    ET.SubElement(svg, "title").text = title
    if not rows:
        ET.SubElement(svg, "text", {"x": "4", "y": "16", "class": "chart-empty"}).text = "nothing in this period"
        return Markup(ET.tostring(svg, encoding="unicode"))
    biggest = max(sum(s.value for s in row.segments) for row in rows) or 1
    for index, row in enumerate(rows):
        y = 4 + index * ROW_H
        label = row.label if len(row.label) <= MAX_LABEL else row.label[:MAX_LABEL - 1] + "…"
        text = ET.SubElement(svg, "text", {"x": str(LABEL_W - 6), "y": str(y + BAR_H - 3), "text-anchor": "end",
                                           "class": "chart-label"})
        text.text = label
        ET.SubElement(text, "title").text = row.label
        x = float(LABEL_W)
        for segment in row.segments:
            width = BAR_W * segment.value / biggest
            if width <= 0:
                continue
            rect = ET.SubElement(svg, "rect", {"x": f"{x:.1f}", "y": str(y), "width": f"{width:.1f}",
                                               "height": str(BAR_H), "class": segment.css})
            ET.SubElement(rect, "title").text = segment.title
            x += width
        if row.note:
            ET.SubElement(svg, "text", {"x": f"{x + 6:.1f}", "y": str(y + BAR_H - 3), "class": "chart-note"}).text = row.note
    return Markup(ET.tostring(svg, encoding="unicode"))


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def pages_chart(people: list[dict]) -> Markup:
    """Pages per person: inside working hours and outside them."""
    rows = []
    for p in people:
        inside, outside = p["pages"] - p["pages_outside_hours"], p["pages_outside_hours"]
        rows.append(Row(p["person"], (Segment(inside, "seg-ok", f"{p['person']}: {inside} pages in working hours"),
                                      Segment(outside, "seg-bad", f"{p['person']}: {outside} pages outside working hours")),
                        f"{p['pages']} ({outside} off-hours)"))
    return bar_chart("Pages per person, in and outside working hours", rows)


def noise_chart(alerts: list[dict]) -> Markup:
    """The noisiest alerts: pages, with the acted-on share."""
    rows = [Row(a["alertname"], (Segment(a["pages"], "seg-noise", f"{a['alertname']}: {a['pages']} pages, "
                                         f"{a['incidents']} incidents, acted on {_share(a['acted_on_share'])}"),),
                f"{a['pages']} · acted on {_share(a['acted_on_share'])}") for a in alerts]
    return bar_chart("Noisiest alerts by pages, with the share acted on", rows)


def response_chart(groups: list[dict], key: str) -> Markup:
    """MTTA and MTTR (minutes) of each team or priority, one bar each."""
    rows = []
    for g in groups:
        for name, field in (("MTTA", "mtta_seconds"), ("MTTR", "mttr_seconds")):
            minutes = (g[field] or 0) / 60
            rows.append(Row(f"{g[key]} {name}", (Segment(minutes, f"seg-{name.lower()}",
                                                         f"{g[key]}: {name} {minutes:.1f} min"),),
                            "-" if g[field] is None else f"{minutes:.1f} min"))
    return bar_chart("Mean time to acknowledge and to resolve, minutes", rows)
