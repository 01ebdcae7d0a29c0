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


def _parse_row(path: Path, lineno: int, row: list[str]) -> tuple[str, datetime, float]:
    if len(row) != 2:
        raise SeriesFormatError(f"{path}:{lineno}: expected 2 columns 'timestamp,value', got {len(row)}")
    stamp, raw = row[0].strip(), row[1].strip()
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        raise SeriesFormatError(f"{path}:{lineno}: bad timestamp {stamp!r} (want ISO 8601, e.g. 2024-01-31 12:00:00)") from None
    try:
        value = float(raw)
    except ValueError:
        raise SeriesFormatError(f"{path}:{lineno}: bad value {raw!r} (want a number)") from None
    if not math.isfinite(value):
        raise SeriesFormatError(f"{path}:{lineno}: value {raw!r} is not finite")
    return stamp, when, value


def _header_error(path: Path, header: list[str]) -> SeriesFormatError:
    text = ",".join(header)
    hint = ""
    if header and _is_timestamp(header[0]):
        hint = " (the first line holds data: add the header line 'timestamp,value')"
    else:
        missing = [c for c in ("timestamp", "value") if c not in (h.strip().lower() for h in header)]
        if missing:
            hint = f" (no column {' or '.join(repr(c) for c in missing)})"
    return SeriesFormatError(f"{path}:1: header must be 'timestamp,value', got {text!r}{hint}")


def _is_timestamp(text: str) -> bool:
    try:
        datetime.fromisoformat(text.strip())
    except ValueError:
        return False
    return True


def _check_order(path: Path, lineno: int, when: datetime, previous: tuple[int, datetime, str] | None, stamp: str):
    if previous is None:
        return
    before_line, before, before_stamp = previous
    try:
        back = when < before
    except TypeError:  # one with a UTC offset, one without
        raise SeriesFormatError(f"{path}:{lineno}: timestamp {stamp!r} and {before_stamp!r} on line {before_line} "
                                "mix a UTC offset with none") from None
    if back:
        raise SeriesFormatError(f"{path}:{lineno}: timestamp {stamp!r} is earlier than {before_stamp!r} on line "
                                f"{before_line}: rows must be in time order (sort the file, or pass --allow-unsorted)")


def read_series(path: str | Path, ordered: bool = False) -> Series:
    """Read a `timestamp,value` CSV (with that header line) into a `Series`.

    Raises `SeriesFormatError` for a missing or empty file, a wrong header or a malformed row, and with
    `ordered` for a timestamp earlier than the row before it. Without `ordered`, rows are kept in file
    order even where a timestamp steps back (real exports do that, e.g. NAB's
    machine_temperature_system_failure.csv): detectors see points in the order they arrived.
    """
    path = Path(path)
    try:
        handle = path.open(newline="", encoding="utf-8-sig")  # a byte-order mark (Excel's CSV) is dropped
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
                raise _header_error(path, header)
            previous = None
            for row in reader:
                lineno = reader.line_num
                if not row or all(not cell.strip() for cell in row):
                    continue
                stamp, when, value = _parse_row(path, lineno, row)
                if ordered:
                    _check_order(path, lineno, when, previous, stamp)
                    previous = (lineno, when, stamp)
                stamps.append(stamp)
                values.append(value)
        except UnicodeDecodeError:
            raise SeriesFormatError(f"{path}: not a UTF-8 text file") from None
        except csv.Error as exc:
            raise SeriesFormatError(f"{path}:{reader.line_num}: {exc}") from None
    if not stamps:
        raise SeriesFormatError(f"{path}: no data rows after the header")
    return Series(str(path), stamps, np.asarray(values, dtype=float))
