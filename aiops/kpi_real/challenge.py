"""The AIOps Challenge 2018 KPI files and the challenge's scoring.

A file is a gzipped (or plain) CSV `timestamp,value,label`: UNIX seconds, the KPI's value, 1 where the
organisers' operators marked the point anomalous.

Scoring, as the data's README states it (`challenge_counts`): a labelled stretch counts as found in full
when one of its first `DELAY` (7) points is flagged, and not at all otherwise; flags outside stretches
are false positives; counts add up over series before precision, recall and F1 (`aiops.kpi_synth.scoring`
does the arithmetic). `script_counts` is the rule as the organisers' published evaluation script applies
it: on the series' regular grid (a missing point is an unlabelled, unflagged point) and with the onset plus
the `DELAY` points after it, one more than the README's; published figures (FluxEV, SR-CNN, Donut) were
measured with that script.
"""

from __future__ import annotations

import csv
import gzip
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from vigil.aiops.kpi_synth.scoring import DELAY, Counts, point_adjusted_counts


class KpiFileError(ValueError):
    """A KPI file that cannot be read; the message names the file."""


@dataclass(frozen=True)
class KpiFile:
    name: str  # the file name without .csv / .csv.gz: the KPI's id
    timestamps: np.ndarray  # int64 UNIX seconds
    values: np.ndarray
    labels: np.ndarray  # bool

    def __len__(self) -> int:
        return int(self.timestamps.size)

    def write_series(self, path: Path) -> Path:
        """`timestamp,value` with ISO 8601 UTC times: the input of `vigil aiops detect`."""
        with path.open("w", encoding="utf-8", newline="") as handle:
            handle.write("timestamp,value\n")
            for stamp, value in zip(self.timestamps.tolist(), self.values.tolist()):
                when = datetime.fromtimestamp(stamp, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
                handle.write(f"{when},{value!r}\n")
        return path


def read_kpi(path: Path) -> KpiFile:
    name = path.name.removesuffix(".gz").removesuffix(".csv")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise KpiFileError(f"{path}: cannot read: {exc}") from None
    if not rows or [c.strip().lower() for c in rows[0][:3]] != ["timestamp", "value", "label"]:
        raise KpiFileError(f"{path}: header must start 'timestamp,value,label'")
    try:
        data = np.array([[float(c) for c in row[:3]] for row in rows[1:] if row], dtype=float).reshape(-1, 3)
    except ValueError as exc:
        raise KpiFileError(f"{path}: {exc}") from None
    order = np.argsort(data[:, 0], kind="stable")
    data = data[order]
    return KpiFile(name, data[:, 0].astype(np.int64), data[:, 1], data[:, 2] > 0)


def read_dir(folder: Path) -> list[KpiFile]:
    """Every `*.csv.gz` / `*.csv` of `folder`, sorted by file name."""
    paths = sorted(p for p in Path(folder).iterdir() if p.name.endswith((".csv", ".csv.gz")))
    if not paths:
        raise KpiFileError(f"{folder}: no KPI files (*.csv.gz, *.csv with timestamp,value,label)")
    return [read_kpi(p) for p in paths]


def halves(names: list[str]) -> tuple[list[str], list[str]]:
    """Two fixed halves of the files: sorted by name, alternating (1st, 3rd, ... and 2nd, 4th, ...)."""
    ordered = sorted(names)
    return ordered[0::2], ordered[1::2]


def challenge_counts(flags: np.ndarray, labels: np.ndarray) -> Counts:
    """The README's rule on the rows as given: a stretch is found when one of its first 7 points is flagged."""
    return point_adjusted_counts(flags, labels, DELAY)


def script_counts(flags: np.ndarray, labels: np.ndarray, timestamps: np.ndarray) -> Counts:
    """The organisers' script: rows placed on the regular grid (the smallest interval), missing points
    unlabelled and unflagged, and a stretch found when its onset or one of the 7 points after it is flagged."""
    stamps = np.asarray(timestamps, dtype=np.int64)
    interval = int(np.min(np.diff(stamps))) if stamps.size > 1 else 1
    slots = (stamps - stamps[0]) // max(interval, 1)
    grid_flags = np.zeros(int(slots[-1]) + 1, dtype=bool)
    grid_labels = np.zeros_like(grid_flags)
    grid_flags[slots] = np.asarray(flags, dtype=bool)
    grid_labels[slots] = np.asarray(labels, dtype=bool)
    return point_adjusted_counts(grid_flags, grid_labels, DELAY + 1)
