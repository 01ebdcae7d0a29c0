"""Render snapshot rows as Prometheus text exposition (format 0.0.4) directly from the MetricSpecs.

prometheus_client's `generate_latest` builds a family object and a sample tuple per value, which took
10-20 ms for the ~900 samples of an 8-GPU node; a fleet of 1,250 nodes renders that 80 times a second.
This renderer writes the same text from the rows in a few milliseconds; numbers are formatted with
prometheus_client's own `floatToGoString`, and label names come in sorted order, as it does. A test
checks that both produce the same samples.
"""

from __future__ import annotations

from typing import Iterable

from prometheus_client.utils import floatToGoString

from vigil.exporters.spec import MetricSpec

Rows = dict[str, list[tuple[tuple[str, ...], float]]]


def _escape_label(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    return value


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def render(specs: Iterable[MetricSpec], rows: Rows) -> bytes:
    """Exposition text of every spec that has samples in `rows` (specs without samples are left out)."""
    lines: list[str] = []
    for spec in specs:
        samples = rows.get(spec.name)
        if not samples:
            continue
        lines.append(f"# HELP {spec.name} {_escape_help(spec.help)}")
        lines.append(f"# TYPE {spec.name} {'gauge' if spec.type == 'info' else spec.type}")
        order = sorted(range(len(spec.labels)), key=spec.labels.__getitem__)
        names = [f'{spec.labels[i]}="' for i in order]
        for values, value in samples:
            inner = ",".join(name + _escape_label(values[i]) + '"' for name, i in zip(names, order))
            lines.append(f"{spec.name}{{{inner}}} {floatToGoString(value)}")
    lines.append("")
    return "\n".join(lines).encode()
