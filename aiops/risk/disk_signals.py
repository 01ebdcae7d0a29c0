"""Read the node exporter's SMART series from Prometheus as a daily history the disk model can score."""

from __future__ import annotations

import pandas as pd

from vigil.aiops.disk.features import COUNTER_ATTRIBUTES, TEMPERATURE_ATTRIBUTE, add_features
from vigil.aiops.disk.model import DiskModel
from vigil.common.prometheus_api import PrometheusClient

DAY_S = 86400.0
_ATTRIBUTES = "|".join(str(a) for a in COUNTER_ATTRIBUTES + (TEMPERATURE_ATTRIBUTE,))
# the daily maximum of each attribute: the model was trained on one reading per disk per day. The exporter
# publishes decoded values (exporters/smart_raw.py: 194 is Celsius, 188 its lowest counter), used as they are.
SMART_DAILY_QUERY = f'max_over_time(vigil_disk_smart_attribute_raw{{attribute_id=~"{_ATTRIBUTES}"}}[1d])'
# smartctl's current temperature (`temperature.current`), preferred to attribute 194 where a disk has both
TEMPERATURE_DAILY_QUERY = "max_over_time(vigil_disk_temperature_celsius[1d])"


def read_smart_history(reader: PrometheusClient, now: float, days: int = 15) -> pd.DataFrame:
    """A table `disk, node, device, day, smart_<id>...` with one row per ATA disk per day seen.

    Disks without any SMART attribute series (NVMe) are left out: the model knows ATA attributes only.
    """
    start = now - (days - 1) * DAY_S
    records: dict[tuple[str, str, int], dict] = {}
    temperature: dict[tuple[str, str, int], float] = {}
    for labels, points in reader.query_range(SMART_DAILY_QUERY, start=start, end=now, step=DAY_S):
        node, device, attr = labels.get("node"), labels.get("device"), labels.get("attribute_id")
        if node is None or device is None or attr is None:
            continue
        for t, value in points:
            day = int(round((t - now) / DAY_S))  # 0 = today, -1 = yesterday, ...
            row = records.setdefault((node, device, day), {"node": node, "device": device, "day": day})
            row[f"smart_{attr}"] = value
    for labels, points in reader.query_range(TEMPERATURE_DAILY_QUERY, start=start, end=now, step=DAY_S):
        for t, value in points:
            temperature[(labels.get("node"), labels.get("device"), int(round((t - now) / DAY_S)))] = value
    for key, row in records.items():
        if key in temperature:
            row[f"smart_{TEMPERATURE_ATTRIBUTE}"] = temperature[key]
    columns = ["disk", "node", "device", "day"] + [f"smart_{a}" for a in COUNTER_ATTRIBUTES + (TEMPERATURE_ATTRIBUTE,)]
    if not records:
        return pd.DataFrame(columns=columns)
    df = pd.DataFrame(list(records.values()))
    df["disk"] = df["node"] + "/" + df["device"]
    for col in columns:
        if col not in df.columns:
            df[col] = 0.0  # an attribute the disk does not report counts as zero
    # a missing day of one attribute: carry the last reading forward (counters never shrink)
    df = df[columns].sort_values(["disk", "day"])
    df[columns[4:]] = df.groupby("disk")[columns[4:]].ffill().fillna(0.0)
    return df.reset_index(drop=True)


def score_disks(model: DiskModel, history: pd.DataFrame) -> list[tuple[str, str, float, str]]:
    """`(node, device, risk, reason)` for each disk, scored on its latest day. The reason is the
    counter attribute that grew most over 7 days, or "none"."""
    if history.empty:
        return []
    featured = add_features(history)
    latest = featured.groupby("disk", sort=True).tail(1)
    risks = model.score(latest)
    out = []
    for (_, row), risk in zip(latest.iterrows(), risks):
        growth = {f"smart_{a}": row[f"smart_{a}_d7"] for a in COUNTER_ATTRIBUTES}
        top, value = max(growth.items(), key=lambda item: (item[1], item[0]))
        out.append((row["node"], row["device"], float(risk), top if value > 0 else "none"))
    return out
