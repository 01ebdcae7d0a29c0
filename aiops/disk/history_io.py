"""Read and write labelled SMART histories as CSV.

Accepted columns: `disk` (or Backblaze's `serial_number`), `day` (an integer) or `date`
(YYYY-MM-DD, turned into days since the first date), `failure` (1 on the failure day), and SMART raw
values as `smart_<id>` or Backblaze's `smart_<id>_raw`. Missing SMART values count as 0.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from vigil.aiops.disk.features import REQUIRED_COLUMNS


class HistoryError(ValueError):
    """The history file cannot be used; the message says why."""


def read_history(path: Path) -> pd.DataFrame:
    try:
        raw = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise HistoryError(f"cannot read {path}: {exc}") from exc
    df = raw.rename(columns={c: c[: -len("_raw")] for c in raw.columns if c.startswith("smart_") and c.endswith("_raw")})
    if "disk" not in df.columns and "serial_number" in df.columns:
        df = df.rename(columns={"serial_number": "disk"})
    if "day" not in df.columns and "date" in df.columns:
        try:
            dates = pd.to_datetime(df["date"], format="%Y-%m-%d")
        except ValueError as exc:
            raise HistoryError(f"{path}: `date` must be YYYY-MM-DD: {exc}") from exc
        df["day"] = (dates - dates.min()).dt.days
    missing = [c for c in ("disk", "day", "failure") if c not in df.columns]
    if missing:
        raise HistoryError(f"{path}: missing column(s) {', '.join(missing)} (see docs/aiops-failure-prediction.md)")
    for column in REQUIRED_COLUMNS[2:]:
        if column not in df.columns:
            df[column] = 0.0
        df[column] = pd.to_numeric(df[column], errors="coerce").fillna(0.0)
    df["disk"] = df["disk"].astype(str)
    try:
        df["day"] = df["day"].astype(int)
        df["failure"] = df["failure"].fillna(0).astype(int)
    except (TypeError, ValueError) as exc:
        raise HistoryError(f"{path}: `day` and `failure` must be integers: {exc}") from exc
    if df["failure"].sum() == 0:
        raise HistoryError(f"{path}: no row has failure=1; a model cannot learn failures it never saw")
    return df


def write_history(history: pd.DataFrame, path: Path) -> None:
    history.to_csv(path, index=False)
