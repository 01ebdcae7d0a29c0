"""Writing series as an OpenMetrics text file for `promtool tsdb create-blocks-from openmetrics`.

promtool wants: one `# HELP`/`# TYPE` pair per family, all samples of a family contiguous, timestamps
in seconds, and a final `# EOF`. Counter families are named without `_total`, samples with it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

SeriesTuple = tuple[str, dict, Sequence[float], Sequence[float]]


def format_value(x: float) -> str:
    """Shortest text that reads back as the same float (Python's repr), OpenMetrics spellings for specials."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(float(x))


def _escape(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _label_text(labels: dict) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items())) + "}"


def write_openmetrics(
    path: str | Path,
    series: Iterable[SeriesTuple],
    types: dict[str, str] | None = None,
    helps: dict[str, str] | None = None,
) -> int:
    """Write `series` — `(metric_name, labels, timestamps, values)` tuples — to `path`; return samples written.

    Families are grouped so each is contiguous even when the input interleaves them; samples of each
    series are written in time order; NaN values (gaps) are skipped. `types` maps a metric name to
    "gauge" (default) or "counter"; `helps` gives HELP texts.
    """
    types = types or {}
    helps = helps or {}
    families: dict[str, list[tuple[dict, Sequence[float], Sequence[float]]]] = {}
    for name, labels, timestamps, values in series:
        if len(timestamps) != len(values):
            raise ValueError(f"{name}: {len(timestamps)} timestamps but {len(values)} values")
        families.setdefault(name, []).append((labels, timestamps, values))
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        for name, members in families.items():
            kind = types.get(name, "gauge")
            family = name[: -len("_total")] if kind == "counter" and name.endswith("_total") else name
            out.write(f"# HELP {family} {_escape(helps.get(name, name))}\n")
            out.write(f"# TYPE {family} {kind}\n")
            for labels, timestamps, values in members:
                prefix = name + _label_text(labels)
                for ts, value in sorted(zip(timestamps, values)):
                    if math.isnan(value):
                        continue
                    out.write(f"{prefix} {format_value(value)} {format_value(ts)}\n")
                    written += 1
        out.write("# EOF\n")
    return written
