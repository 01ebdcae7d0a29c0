"""Reading series from CSV or Parquet files.

Two layouts are understood, in either format:

- long: a `timestamp` column, a `value` column, optionally a `metric` (or `__name__`) column, and any
  other column is a label, e.g. `timestamp,value,node,gpu`. Rows with the same metric and labels form
  one series. Without a `metric` column the metric name is the file's stem.
- wide: a `timestamp` column and one column per series; a column header may be a plain metric name or
  a selector such as `vigil_gpu_utilization_ratio{node="n1",gpu="0"}`.

Timestamps are Unix seconds (or milliseconds, recognised by size) or date-time text (UTC unless it
says otherwise). Empty values are gaps. Errors name the file and the line (CSV) or row (Parquet).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from vigil.aiops.history.series import HistoryError, Series, looks_like_counter

_SELECTOR = re.compile(r'^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{(.*)\})?\s*$')
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')
_NAME_COLUMNS = ("metric", "__name__")
# Unix timestamps beyond this are taken to be milliseconds (1e11 s is in the year 5138).
_MILLIS_THRESHOLD = 1e11


def read_series_file(path: str | Path) -> list[Series]:
    """Read every series in a `.csv` or `.parquet` file; raise HistoryError naming file and line."""
    path = Path(path)
    if not path.is_file():
        raise HistoryError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        frame, first_line = _read_csv(path), 2  # line 1 is the header
        where = "line"
    elif suffix in (".parquet", ".pq"):
        frame, first_line, where = _read_parquet(path), 1, "row"
    else:
        raise HistoryError(f"{path}: unknown file type {suffix!r} (use .csv or .parquet)")
    return _frame_to_series(frame, path, first_line, where)


def _read_parquet(path: Path) -> pd.DataFrame:
    try:  # an optional extra: the core install reads CSV only
        import pyarrow.parquet
    except ImportError:
        raise HistoryError(f"{path}: reading Parquet needs pyarrow, which is not installed; "
                           "install it with: pip install 'vigil[parquet]' (or convert the file to CSV)") from None
    try:
        return pyarrow.parquet.read_table(path).to_pandas()
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise HistoryError(f"{path}: not a readable Parquet file: {exc}") from None


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise HistoryError(f"{path}: empty file (expected a header such as timestamp,value)") from None
    except pd.errors.ParserError as exc:
        raise HistoryError(f"{path}: malformed CSV: {exc}") from None
    except UnicodeDecodeError as exc:
        raise HistoryError(f"{path}: not UTF-8 text: {exc}") from None


def _frame_to_series(frame: pd.DataFrame, path: Path, first_line: int, where: str) -> list[Series]:
    columns = {str(c).strip().lower(): c for c in frame.columns}
    if "timestamp" not in columns:
        raise HistoryError(f"{path}: no 'timestamp' column (columns: {', '.join(map(str, frame.columns))})")
    if frame.empty:
        raise HistoryError(f"{path}: no data rows")
    stamps = _parse_timestamps(frame[columns["timestamp"]], path, first_line, where)
    if "value" in columns:
        return _long_series(frame, columns, stamps, path, first_line, where)
    return _wide_series(frame, columns, stamps, path, first_line, where)


def _parse_timestamps(raw: pd.Series, path: Path, first_line: int, where: str) -> np.ndarray:
    text = raw.astype(str).str.strip()
    numeric = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    seconds = np.where(numeric > _MILLIS_THRESHOLD, numeric / 1000.0, numeric)
    textual = np.isnan(numeric)
    if textual.any():
        parsed = pd.to_datetime(text[textual], errors="coerce", utc=True, format="mixed")
        seconds[textual] = (parsed - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy(dtype=np.float64)
    bad = np.isnan(seconds)
    if bad.any():
        i = int(np.argmax(bad))
        raise HistoryError(f"{path}: {where} {i + first_line}: timestamp {raw.iloc[i]!r} is neither Unix seconds nor a date-time")
    return seconds


def _parse_values(raw: pd.Series, column: str, path: Path, first_line: int, where: str) -> np.ndarray:
    if raw.dtype.kind in "fiu":
        return raw.to_numpy(dtype=np.float64)
    text = raw.astype(str).str.strip()
    values = pd.to_numeric(text, errors="coerce")
    blank = text.isin(["", "nan", "NaN", "None", "null"])
    bad = (values.isna() & ~blank).to_numpy()
    if bad.any():
        i = int(np.argmax(bad))
        raise HistoryError(f"{path}: {where} {i + first_line}: {column} {raw.iloc[i]!r} is not a number")
    return values.to_numpy(dtype=np.float64)


def _long_series(frame, columns, stamps, path, first_line, where) -> list[Series]:
    values = _parse_values(frame[columns["value"]], "value", path, first_line, where)
    name_col = next((columns[c] for c in _NAME_COLUMNS if c in columns), None)
    label_cols = [c for c in frame.columns if c not in (columns["timestamp"], columns["value"], name_col)]
    keys = pd.DataFrame(
        index=frame.index,
        data={
            "__name__": frame[name_col].astype(str) if name_col is not None else _stem_name(path),
            **{str(c): frame[c].astype(str) for c in label_cols},
        }
    )
    result = []
    for key, index in keys.groupby(list(keys.columns), sort=True).indices.items():
        key = key if isinstance(key, tuple) else (key,)
        name, label_values = key[0], key[1:]
        labels = {str(c): v for c, v in zip(label_cols, label_values) if v != ""}
        result.append(Series(name, labels, stamps[index], values[index], is_counter=looks_like_counter(name)))
    return result


def _wide_series(frame, columns, stamps, path, first_line, where) -> list[Series]:
    result = []
    for column in frame.columns:
        if column == columns["timestamp"]:
            continue
        name, labels = parse_selector(str(column), path)
        values = _parse_values(frame[column], str(column), path, first_line, where)
        result.append(Series(name, labels, stamps, values, is_counter=looks_like_counter(name)))
    return result


def parse_selector(text: str, path: Path | str = "") -> tuple[str, dict[str, str]]:
    """`name{a="b",c="d"}` → (name, labels); raise HistoryError for anything else."""
    match = _SELECTOR.match(text)
    if not match:
        raise HistoryError(f"{path}: column {text!r} is not a metric name or name{{label=\"value\",…}}")
    name, inner = match.group(1), match.group(2) or ""
    labels, pos = {}, 0
    while pos < len(inner.strip()):
        label = _LABEL.match(inner, pos)
        if not label:
            raise HistoryError(f"{path}: column {text!r}: cannot parse labels at {inner[pos:]!r}")
        labels[label.group(1)] = label.group(2).replace('\\"', '"').replace("\\\\", "\\")
        pos = label.end()
    return name, labels


def _stem_name(path: Path) -> str:
    name = re.sub(r"[^a-zA-Z0-9_:]", "_", path.stem)
    return name if re.match(r"[a-zA-Z_:]", name) else f"series_{name}"
