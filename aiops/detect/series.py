"""Reading `timestamp,value` CSV files, the input format of `vigil aiops detect` and of the NAB corpus.

Bad input is reported with the file and the 1-based line number, never as a traceback: the caller
catches `SeriesFormatError` and shows its message.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np


class SeriesFormatError(ValueError):
    """A `timestamp,value` file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Series:
    """One time series: timestamps exactly as written in the file, and float values."""

    path: str
    timestamps: list[str]
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.timestamps)


def _parse_row(path: Path, lineno: int, row: list[str]) -> tuple[str, float]:
    if len(row) != 2:
        raise SeriesFormatError(f"{path}:{lineno}: expected 2 columns 'timestamp,value', got {len(row)}")
    stamp, raw = row[0].strip(), row[1].strip()
    try:
        datetime.fromisoformat(stamp)
    except ValueError:
        raise SeriesFormatError(f"{path}:{lineno}: bad timestamp {stamp!r} (want ISO 8601, e.g. 2024-01-31 12:00:00)") from None
    try:
        value = float(raw)
    except ValueError:
        raise SeriesFormatError(f"{path}:{lineno}: bad value {raw!r} (want a number)") from None
    if not math.isfinite(value):
        raise SeriesFormatError(f"{path}:{lineno}: value {raw!r} is not finite")
    return stamp, value


def read_series(path: str | Path) -> Series:
    """Read a `timestamp,value` CSV (with that header line) into a `Series`.

    Raises `SeriesFormatError` for a missing or empty file, a wrong header or a malformed row. Rows are
    kept in file order even where a timestamp steps back (real exports do that, e.g. NAB's
    machine_temperature_system_failure.csv): detectors see points in the order they arrived.
    """
    path = Path(path)
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise SeriesFormatError(f"{path}: cannot open: {exc.strerror or exc}") from None
    stamps: list[str] = []
    values: list[float] = []
    with handle:
        reader = csv.reader(handle)
        try:
            header = next(reader, None)
            if header is None:
                raise SeriesFormatError(f"{path}: file is empty (want a 'timestamp,value' header and rows)")
            if [h.strip().lower() for h in header] != ["timestamp", "value"]:
                raise SeriesFormatError(f"{path}:1: header must be 'timestamp,value', got {','.join(header)!r}")
            for row in reader:
                lineno = reader.line_num
                if not row or all(not cell.strip() for cell in row):
                    continue
                stamp, value = _parse_row(path, lineno, row)
                stamps.append(stamp)
                values.append(value)
        except UnicodeDecodeError:
            raise SeriesFormatError(f"{path}: not a UTF-8 text file") from None
        except csv.Error as exc:
            raise SeriesFormatError(f"{path}:{reader.line_num}: {exc}") from None
    if not stamps:
        raise SeriesFormatError(f"{path}: no data rows after the header")
    return Series(str(path), stamps, np.asarray(values, dtype=float))
