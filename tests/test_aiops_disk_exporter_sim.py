"""Cross-check: the disk model, trained on aiops' simulated fleet, flags the degrading disks of the
exporter's *independent* smartctl simulator (exporters/sim/smart.py), read through the exporter's own
smartctl JSON parser, and leaves its healthy disks alone."""

from __future__ import annotations

import pandas as pd
import pytest

from sim_clock import SIM_NOW
from vigil.aiops.disk.model import train_disk_model
from vigil.aiops.disk.simulate import FleetSpec, simulate_fleet
from vigil.aiops.risk.disk_signals import score_disks
from vigil.exporters.sim.smart import DiskFault, SimDisk, smart_document
from vigil.exporters.smart import parse_disk

NOW = SIM_NOW
DAY_S = 86_400.0


@pytest.fixture(scope="module")
def model():
    trained, _ = train_disk_model(simulate_fleet(FleetSpec(disks=1500, days=60, seed=11)))
    return trained


def _history(disk: SimDisk, fault: DiskFault | None, days: int = 15) -> list[dict]:
    rows = []
    for k in range(days):
        t = NOW - (days - 1 - k) * DAY_S
        health = parse_disk(smart_document(disk, t, fault), disk.device)
        row = {"node": disk.node, "device": disk.device, "disk": f"{disk.node}/{disk.device}", "day": k - days + 1,
               "smart_194": health.temperature_celsius}
        for attr in (5, 187, 188, 197, 198):
            row[f"smart_{attr}"] = float(health.attributes[attr][1])
        rows.append(row)
    return rows


@pytest.mark.parametrize("kind", ["reallocation", "pending_burst", "uncorrectable", "timeout"])
def test_exporter_simulator_faults_are_flagged_and_healthy_disks_are_not(model, kind):
    faulty = SimDisk("sim-node", 0)
    rows = _history(faulty, DiskFault(kind, start=NOW - 8 * DAY_S))
    for index in (2, 4, 6):  # healthy ATA disks on the same node
        rows += _history(SimDisk("sim-node", index), None)
    risks = {device: (risk, reason) for _, device, risk, reason in score_disks(model, pd.DataFrame(rows))}
    assert risks["/dev/sda"][0] > model.threshold, (kind, risks)
    assert risks["/dev/sda"][1] != "none"
    assert all(risks[d][0] < model.threshold and risks[d][1] == "none" for d in ("/dev/sdb", "/dev/sdc", "/dev/sdd"))


def test_a_fault_that_has_not_started_scores_like_a_healthy_disk(model):
    disk = SimDisk("sim-node", 0)
    rows = _history(disk, DiskFault("reallocation", start=NOW + 5 * DAY_S))
    ((_, _, risk, reason),) = score_disks(model, pd.DataFrame(rows))
    assert risk < model.threshold and reason == "none"
