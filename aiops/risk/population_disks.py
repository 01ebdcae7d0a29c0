"""Seeded populations of simulated SATA and NVMe disk histories, for calibrating the disk alarms.

The precursors are the simulated fleet's own SMART model (`exporters.sim.smart`): a failing disk with
a precursor runs one of the simulator's `DiskFault` kinds from its onset to its failure, and its daily
readings are the simulator's `smartctl --json` documents. Healthy (and failing) SATA disks carry the
benign SMART background of the disk model's training simulator (`aiops.disk.simulate`), the false-alarm
bait real fleets have. Every number is in `SATA_PARAMS` / `NVME_PARAMS` with its source.

Failures are over-sampled (`failure_fraction` per period, far above a field fleet's ~0.4 % a quarter)
so that a few thousand disks give enough failures; detection rate (per failing disk) and false-alarm
rate (per healthy disk-day) do not depend on that prevalence, and the fitted NVMe intercept is
corrected back to the field rate (`field_afr`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from vigil.aiops.disk.simulate import _healthy_background
from vigil.aiops.risk.population import Param
from vigil.exporters.sim.smart import DAY_S, DiskFault, SimDisk, smart_document

PINHEIRO = "Pinheiro et al., Failure Trends in a Large Disk Drive Population, FAST 2007 (field notes §11)"
SATA_PARAMS: dict[str, Param] = {
    "field_afr": Param(0.017, "Backblaze Drive Stats 2023: annualized failure rate about 1.7 %"),
    "failure_fraction": Param(0.05, "assumption: over-sampled failures per period (see module docs)"),
    "no_warning_share": Param(0.56, f"{PINHEIRO}: 56 % of failed drives showed no strong SMART warning"),
    "lead_days_max": Param(30, "assumption: SMART precursors start 1-30 days (uniform) before the failure"),
    "rate_per_day_min": Param(0.5, "assumption: simulator's DiskFault rate, log-uniform between min and max"),
    "rate_per_day_max": Param(20.0, "assumption: (the simulator's own default is 4 per day)"),
    "healthy_background": Param(1, "assumption: aiops/disk/simulate.py's benign counts (stable 5 on 10 %, transient 197 on 4 %, slow 5 on 2 %, 188 on 5 %, 187 on 3 %)"),
}
SATA_KINDS = ("reallocation", "pending_burst", "uncorrectable", "timeout")  # equal shares: assumption
NVME_PARAMS: dict[str, Param] = {
    "field_afr": Param(0.01, "assumption: SSDs fail at about 1 % a year or less (Backblaze SSD stats)"),
    "failure_fraction": Param(0.05, "assumption: over-sampled failures per period"),
    "no_warning_share": Param(0.56, "assumption: as for hard disks (no NVMe figure found)"),
    "wear_out_share": Param(0.2, "assumption: failures of worn-out disks (percentage used 100-150 %, spare falling)"),
    "lead_days_max": Param(30, "assumption: precursors start 1-30 days before the failure"),
    "rate_per_day_min": Param(0.5, "assumption: simulator's nvme_media_errors rate, log-uniform"),
    "rate_per_day_max": Param(20.0, "assumption"),
    "healthy_media_errors_share": Param(0.02, "assumption: healthy disks with a few (1-5) stable media errors"),
    "healthy_used_max": Param(0.8, "assumption: healthy disks' percentage used uniform in 0-80 %"),
}
NVME_COLUMNS = ("critical_warning", "media_errors", "percentage_used", "available_spare", "available_spare_threshold")


def _failures(rng, n: int, d: int, p: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per disk: fails?, failure day, warned (has a precursor)?, lead days."""
    failed = rng.random(n) < p["failure_fraction"]
    fail_day = np.where(failed, rng.integers(1, d, size=n), d + 10**6)
    warned = failed & (rng.random(n) >= p["no_warning_share"])
    lead = rng.integers(1, int(p["lead_days_max"]) + 1, size=n)
    return failed, fail_day, warned, lead


def _frame(failed, fail_day, d: int, pattern: np.ndarray) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Rows of every disk up to its failure day: disk, day, failure, pattern, days_to_failure."""
    observed = np.arange(d)[None, :] <= fail_day[:, None]
    rows, cols = np.nonzero(observed)
    dtf = (fail_day[rows] - cols).astype(float)
    dtf[~failed[rows]] = np.nan
    frame = pd.DataFrame({"disk": np.char.add("disk-", rows.astype(str)), "day": cols,
                          "failure": (dtf == 0).astype(int), "pattern": pattern[rows], "days_to_failure": dtf})
    return frame, rows, cols


def _fault_days(rng, i: int, fail: int, lead: int, kind: str, p: dict, nvme: bool):
    """The simulator's SMART documents of disk `i` on each day of its fault, keyed by day."""
    rate = float(np.exp(rng.uniform(np.log(p["rate_per_day_min"]), np.log(p["rate_per_day_max"]))))
    fault = DiskFault(kind, start=(fail - lead) * DAY_S, rate=rate)
    disk = SimDisk(f"calibration-{i}", 1 if nvme else 0)
    return {day: smart_document(disk, day * DAY_S, fault) for day in range(max(0, fail - lead), fail + 1)}


def simulate_sata(disks: int = 6000, days: int = 90, seed: int = 0) -> pd.DataFrame:
    """Daily SATA rows in the disk model's history format (`smart_5` ... `smart_194`) plus `days_to_failure`."""
    p = {k: v.value for k, v in SATA_PARAMS.items()}
    rng = np.random.default_rng(seed)
    n, d = disks, days
    failed, fail_day, warned, lead = _failures(rng, n, d, p)
    counters = {attr: np.zeros((n, d)) for attr in (5, 187, 188, 197, 198)}
    _healthy_background(rng, counters, n, d)
    kind = np.array(SATA_KINDS)[rng.integers(0, len(SATA_KINDS), size=n)]
    pattern = np.where(warned, kind, np.where(failed, "sudden", "healthy"))
    for i in np.flatnonzero(warned):
        for day, doc in _fault_days(rng, i, int(fail_day[i]), int(lead[i]), kind[i], p, nvme=False).items():
            raw = {a["id"]: a["raw"]["value"] for a in doc["ata_smart_attributes"]["table"]}
            for attr, values in counters.items():
                values[i, day] += raw[attr]
    temperature = 30 + rng.uniform(0, 10, size=(n, 1)) + rng.uniform(0, 3, size=(n, d))
    frame, rows, cols = _frame(failed, fail_day, d, pattern)
    for attr, values in counters.items():
        frame[f"smart_{attr}"] = values[rows, cols].round()
    frame["smart_194"] = temperature[rows, cols].round()
    return frame


def simulate_nvme(disks: int = 6000, days: int = 90, seed: int = 0) -> pd.DataFrame:
    """Daily NVMe rows: disk, day, failure, pattern, days_to_failure and the health log's `NVME_COLUMNS`
    as the exporter publishes them (ratios for percentage used and spare)."""
    p = {k: v.value for k, v in NVME_PARAMS.items()}
    rng = np.random.default_rng(seed + 1)
    n, d = disks, days
    failed, fail_day, warned, lead = _failures(rng, n, d, p)
    wear = warned & (rng.random(n) < p["wear_out_share"] / (1 - p["no_warning_share"]))
    pattern = np.where(wear, "wear_out", np.where(warned, "media_errors", np.where(failed, "sudden", "healthy")))
    used = rng.uniform(0, p["healthy_used_max"], size=(n, 1)) + np.arange(d)[None, :] * rng.uniform(0, 2e-4, size=(n, 1))
    spare = np.ones((n, d))
    media = np.zeros((n, d))
    few = rng.random(n) < p["healthy_media_errors_share"]
    media[few] += rng.integers(1, 6, size=(few.sum(), 1))
    warning = np.zeros((n, d))
    to_fail = fail_day[:, None] - np.arange(d)[None, :]
    progress = np.clip(1.0 - to_fail / lead[:, None], 0.0, 1.0)
    used[wear] = rng.uniform(1.0, 1.5, size=(wear.sum(), 1))  # worn out for the whole period
    floor = rng.uniform(0.0, 0.15, size=(n, 1))
    spare = np.where(wear[:, None] & (to_fail >= 0), 1.0 - (1.0 - floor) * progress, spare)
    for i in np.flatnonzero(warned & ~wear):
        for day, doc in _fault_days(rng, i, int(fail_day[i]), int(lead[i]), "nvme_media_errors", p, nvme=True).items():
            log = doc["nvme_smart_health_information_log"]
            media[i, day] += log["media_errors"]
            spare[i, day] = min(spare[i, day], log["available_spare"] / 100)
            warning[i, day] = log["critical_warning"]
    warning = np.where(spare < 0.1, np.maximum(warning, 1), warning)  # bit 0: spare below threshold
    frame, rows, cols = _frame(failed, fail_day, d, pattern)
    frame["critical_warning"] = warning[rows, cols]
    frame["media_errors"] = media[rows, cols]
    frame["percentage_used"] = np.round(used[rows, cols], 2)
    frame["available_spare"] = np.round(spare[rows, cols], 2)
    frame["available_spare_threshold"] = 0.1
    return frame
