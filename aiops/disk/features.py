"""Features of a disk on a day, from its daily SMART history.

Input: a long table with one row per disk per day, columns `disk`, `day` and `smart_<id>` raw values
(5, 187, 188, 197, 198 and 194 = temperature). Output: the same rows with the feature columns below.
Power-on hours (attribute 9) and the day index are deliberately *not* features: in a small fleet they
separate failing from healthy disks by accident (see docs/aiops-failure-prediction.md, "Leakage").
"""

from __future__ import annotations

import pandas as pd

COUNTER_ATTRIBUTES = (5, 187, 188, 197, 198)
TEMPERATURE_ATTRIBUTE = 194
WINDOWS_DAYS = (1, 3, 7, 14)
REQUIRED_COLUMNS = ("disk", "day") + tuple(f"smart_{a}" for a in COUNTER_ATTRIBUTES + (TEMPERATURE_ATTRIBUTE,))


def feature_names() -> list[str]:
    """The model's input columns, in order."""
    names = []
    for attr in COUNTER_ATTRIBUTES:
        names.append(f"smart_{attr}")
        names += [f"smart_{attr}_d{w}" for w in WINDOWS_DAYS]
        names.append(f"smart_{attr}_up_days14")
    names += ["temperature", "temperature_mean7", "temperature_d7"]
    names += ["counters_d7", "counters_d14"]
    return names


def add_features(history: pd.DataFrame) -> pd.DataFrame:
    """Return `history` sorted by (disk, day) with the feature columns added.

    A delta over w days is `level(day) - level(day - w)`; before a disk's w-th day it is the growth
    since its first observed day (so a short history, e.g. a fresh Prometheus, still gives deltas).
    Rows are assumed to be consecutive days per disk.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in history.columns]
    if missing:
        raise ValueError(f"SMART history lacks columns: {', '.join(missing)}")
    df = history.sort_values(["disk", "day"], kind="stable").reset_index(drop=True)
    groups = df.groupby("disk", sort=False)
    new: dict[str, pd.Series] = {}
    for attr in COUNTER_ATTRIBUTES:
        col = f"smart_{attr}"
        level = df[col].astype(float)
        first = groups[col].transform("first").astype(float)
        new[col] = level
        for w in WINDOWS_DAYS:
            new[f"{col}_d{w}"] = level - groups[col].shift(w).astype(float).fillna(first)
        increased = (new[f"{col}_d1"] > 0).astype(float)
        new[f"{col}_up_days14"] = _rolling_sum(increased, df["disk"], 14)
    temp = df[f"smart_{TEMPERATURE_ATTRIBUTE}"].astype(float)
    new["temperature"] = temp
    ones = pd.Series(1.0, index=df.index)
    new["temperature_mean7"] = _rolling_sum(temp, df["disk"], 7) / _rolling_sum(ones, df["disk"], 7)
    first_temp = groups[f"smart_{TEMPERATURE_ATTRIBUTE}"].transform("first").astype(float)
    new["temperature_d7"] = temp - groups[f"smart_{TEMPERATURE_ATTRIBUTE}"].shift(7).astype(float).fillna(first_temp)
    new["counters_d7"] = sum(new[f"smart_{a}_d7"] for a in COUNTER_ATTRIBUTES)
    new["counters_d14"] = sum(new[f"smart_{a}_d14"] for a in COUNTER_ATTRIBUTES)
    features = pd.DataFrame(new, index=df.index)
    rest = df.drop(columns=[c for c in features.columns if c in df.columns])
    return pd.concat([rest, features], axis=1)


def _rolling_sum(values: pd.Series, disk: pd.Series, window: int) -> pd.Series:
    """Sum of the last `window` rows of each disk (fewer at its start), without a Python-level loop."""
    cumulative = values.groupby(disk, sort=False).cumsum()
    earlier = cumulative.groupby(disk, sort=False).shift(window).fillna(0.0)
    return cumulative - earlier
