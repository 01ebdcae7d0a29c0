"""`vigil drill` takes its faults from the simulator and their alerts from the rule specs (`drill: FAULT`)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from cli_support import command
from vigil import rules
from vigil.cli import main
from vigil.stack.drill import fault_expectations, shipped_fault_expectations
from vigil.exporters.sim.faults import FAULTS as SIMULATOR_FAULTS
from vigil.exporters.sim.faults import DISK_FAULTS, NODE_FAULTS

ALERT = """\
  {name}:
    expr: vigil_gpu_up == 0
    drill: {fault}
    severity: critical
    summary: s
    description: d
"""


def spec(tmp_path, *alerts: tuple[str, str]):
    path = tmp_path / "spec.yaml"
    path.write_text("alerts:\n" + "".join(ALERT.format(name=name, fault=fault) for name, fault in alerts)
                    + "defaults: {labels: {team: gpu}, runbook_base: 'https://runbooks.example.org/vigil'}\n")
    return path


def test_the_shipped_drills_come_from_the_specs_and_the_simulator():
    ruleset = rules.load_specs(rules.default_spec_paths())
    expected = {alert.drill: alert for alert in ruleset.alerts if alert.drill}
    drills = shipped_fault_expectations()
    assert set(drills) == set(expected) == {"xid79", "ecc-dbe", "overheat", "node-down", "load-anomaly",
                                                 "disk-failing", "job-hang"}
    assert set(drills) <= set(SIMULATOR_FAULTS)
    for fault, expect in drills.items():
        assert (expect.alertname, expect.expr) == (expected[fault].name, expected[fault].expr)
        assert expect.per_gpu == (fault not in NODE_FAULTS and fault not in DISK_FAULTS)
    assert drills["node-down"].alertname == "GpuNodeDown" and not drills["node-down"].per_gpu
    assert drills["xid79"].alertname == "GpuFallenOffBus" and drills["xid79"].per_gpu
    assert drills["disk-failing"].alertname == "DiskSmartUncorrectableSectors" and not drills["disk-failing"].per_gpu
    # a job fault names a GPU to find its job; the drill then waits for the alert of that job (job_id)
    assert drills["job-hang"].alertname == "JobHung" and drills["job-hang"].per_job
    assert [fault for fault, expect in drills.items() if expect.per_job] == ["job-hang"]


def test_the_drill_command_offers_exactly_the_linked_faults():
    choices = next(p for p in command(("drill",)).params if p.name == "fault").type.choices
    assert sorted(choices) == sorted(shipped_fault_expectations())
    result = CliRunner().invoke(main, ["drill", "nvml-hang", "--node", "node-1"])
    assert result.exit_code == 2 and "Invalid value for 'FAULT': 'nvml-hang' is not one of" in result.output


def test_a_ticket_drill_refuses_no_ack_before_it_touches_the_stack(tmp_path):
    """A ticket is never escalated: waiting for the next tier would time out, so the flag is refused."""
    assert shipped_fault_expectations()["disk-failing"].ticket
    result = CliRunner().invoke(main, ["drill", "disk-failing", "--node", "node-1", "--no-ack",
                                       "--run-dir", str(tmp_path / "no-stack")])
    assert result.exit_code == 2 and "files a ticket" in result.output and "--no-ack" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)  # no traceback


def test_a_spec_can_link_another_simulator_fault(tmp_path):
    drills = fault_expectations(rules.load_specs([spec(tmp_path, ("RemapBroken", "row-remap-failure"))]))
    assert list(drills) == ["row-remap-failure"] and drills["row-remap-failure"].alertname == "RemapBroken"


def test_an_unknown_fault_is_refused_with_its_line(tmp_path):
    path = spec(tmp_path, ("A", "meteor-strike"))
    with pytest.raises(rules.SpecError) as caught:
        rules.load_specs([path])
    assert caught.value.errors == [f"{path}:4: alert A: 'drill' is 'meteor-strike'; expected one of "
                                   + ", ".join(SIMULATOR_FAULTS)]


def test_one_fault_drills_one_alert(tmp_path):
    path = spec(tmp_path, ("A", "xid79"), ("B", "xid79"))
    with pytest.raises(rules.SpecError) as caught:
        rules.load_specs([path])
    assert caught.value.errors == [f"{path}:8: alert B: fault 'xid79' already drills alert A ({path}:2); "
                                   "a drill expects one alert"]
