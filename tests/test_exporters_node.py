"""Node health exporter: SMART through a fake smartctl binary, InfiniBand from a fake sysfs tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sim_clock import SIM_NOW
from vigil.common.ports import free_port
from vigil.exporters.node_health import SPECS, NodeHealthCollector
from vigil.exporters.sim.smart import DAY_S, DiskFault, SimDisk, SimulatedSmartctl, smart_document
from vigil.exporters.smart import SmartReader
from vigil.cli.node_exporter import node

T0 = SIM_NOW
REPO = Path(__file__).resolve().parents[1]


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def value(text: str, metric: str, **labels) -> float:
    found = [v for (n, ls), v in samples(text).items() if n == metric and set(labels.items()) <= ls]
    assert len(found) == 1, f"{metric}{labels}: {len(found)} matches in\n{text}"
    return found[0]


def scrape(collector) -> str:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode()


def fake_smartctl(tmp_path: Path, *sim_args: str, scan_disks: int | None = None) -> Path:
    """An executable that answers like smartctl with simulator JSON (`scan_disks` lists extra devices)."""
    script = tmp_path / "smartctl"
    scan = f"--disks {scan_disks} " if scan_disks is not None else ""
    script.write_text(f"""#!/bin/sh
cd {REPO}
case "$*" in *--scan-open*) exec {sys.executable} -m exporters.sim.smart {' '.join(sim_args)} {scan}"$@";; esac
exec {sys.executable} -m exporters.sim.smart {' '.join(sim_args)} "$@"
""")
    script.chmod(0o755)
    return script


def ib_port(root: Path, device: str, port: str, state: str, phys: str, **counters: int) -> None:
    port_dir = root / "class" / "infiniband" / device / "ports" / port
    (port_dir / "counters").mkdir(parents=True)
    (port_dir / "state").write_text(state + "\n")
    (port_dir / "phys_state").write_text(phys + "\n")
    (port_dir / "rate").write_text("400 Gb/sec (4X NDR)\n")
    for name, count in counters.items():
        (port_dir / "counters" / name).write_text(f"{count}\n")


def test_cli_reads_disks_through_a_smartctl_binary(tmp_path):
    fault_start = T0 - 10 * DAY_S
    smartctl = fake_smartctl(tmp_path, "--node n1", "--disks 4", f"--time {T0}", f"--fault 0:reallocation:{fault_start}")
    result = CliRunner().invoke(node, ["--once", "--node", "n1", "--smartctl", str(smartctl),
                                       "--sysfs-root", str(tmp_path / "nosys")])
    assert result.exit_code == 0, result.output
    text = result.stdout
    expected = DiskFault("reallocation", fault_start).amount(T0)
    assert expected > 0
    assert value(text, "vigil_smart_up", node="n1") == 1
    assert value(text, "vigil_disk_smart_attribute_raw", device="/dev/sda", attribute_id="5") == expected
    assert value(text, "vigil_disk_smart_attribute_raw", device="/dev/sdb", attribute_id="5") == 0
    sda = smart_document(SimDisk("n1", 0), T0)
    assert value(text, "vigil_disk_power_on_seconds", device="/dev/sda") == sda["power_on_time"]["hours"] * 3600
    assert value(text, "vigil_disk_nvme_media_errors_total", device="/dev/nvme1") == 0
    assert value(text, "vigil_disk_smart_healthy", device="/dev/nvme0", serial=SimDisk("n1", 1).serial) == 1
    assert value(text, "vigil_node_heartbeat_timestamp_seconds", node="n1") == pytest.approx(time.time(), abs=60)


def test_a_device_that_cannot_be_read_does_not_hide_the_others(tmp_path):
    smartctl = fake_smartctl(tmp_path, "--disks 2", f"--time {T0}", scan_disks=3)  # /dev/sdb is listed, unreadable
    result = CliRunner().invoke(node, ["--once", "--node", "n1", "--smartctl", str(smartctl)])
    assert result.exit_code == 0, result.output
    assert value(result.stdout, "vigil_disk_smart_read_ok", device="/dev/sdb") == 0
    assert value(result.stdout, "vigil_disk_smart_read_ok", device="/dev/sda") == 1
    assert value(result.stdout, "vigil_disk_smart_read_ok", device="/dev/nvme0") == 1


def test_degradation_over_time_fails_smart_health():
    now = [T0]
    faults = {0: DiskFault("reallocation", T0), 1: DiskFault("nvme_media_errors", T0)}
    collector = NodeHealthCollector("n1", SmartReader(SimulatedSmartctl("n1", 2, faults, clock=lambda: now[0])),
                                    sysfs_root="/nonexistent", interval=0.0)
    first = scrape(collector)
    assert value(first, "vigil_disk_smart_healthy", device="/dev/sda") == 1
    assert value(first, "vigil_disk_nvme_critical_warning", device="/dev/nvme0") == 0
    now[0] = T0 + 60 * DAY_S
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        later = scrape(collector)
        if value(later, "vigil_disk_smart_healthy", device="/dev/sda") == 0:
            break
        time.sleep(0.05)
    assert value(later, "vigil_disk_smart_healthy", device="/dev/sda") == 0
    assert int(value(later, "vigil_disk_nvme_critical_warning", device="/dev/nvme0")) & 0x4
    assert value(later, "vigil_disk_nvme_media_errors_total", device="/dev/nvme0") >= 100


def test_smart_history_is_a_pure_function_of_disk_time_and_fault():
    disk, fault = SimDisk("n9", 4), DiskFault("timeout", T0)
    history = [smart_document(disk, T0 + d * DAY_S, fault) for d in range(0, 30, 5)]
    assert history == [smart_document(disk, T0 + d * DAY_S, fault) for d in range(0, 30, 5)]
    timeouts = [next(a["raw"]["value"] for a in doc["ata_smart_attributes"]["table"] if a["id"] == 188)
                for doc in history]
    assert timeouts[0] == 0 and timeouts == sorted(timeouts) and timeouts[-1] > timeouts[1]
    with pytest.raises(ValueError, match="fault kind"):
        DiskFault("melting", T0)


def test_infiniband_ports_from_a_fake_sysfs_tree(tmp_path):
    ib_port(tmp_path, "mlx5_0", "1", "4: ACTIVE", "5: LinkUp", symbol_error=3, link_downed=1, port_rcv_errors=0)
    ib_port(tmp_path, "mlx5_1", "1", "1: DOWN", "3: Disabled", link_downed=7)
    text = scrape(NodeHealthCollector("n1", None, sysfs_root=str(tmp_path)))
    assert value(text, "vigil_infiniband_port_up", device="mlx5_0", port="1") == 1
    assert value(text, "vigil_infiniband_port_up", device="mlx5_1", port="1") == 0
    assert value(text, "vigil_infiniband_port_errors_total", device="mlx5_0", counter="symbol_error") == 3
    assert value(text, "vigil_infiniband_port_errors_total", device="mlx5_1", counter="link_downed") == 7
    # a counter the HCA does not have is absent, not a made-up zero
    assert not [k for k in samples(text) if dict(k[1]).get("device") == "mlx5_1" and dict(k[1]).get("counter") == "symbol_error"]
    assert "vigil_smart_up" not in text  # SMART off


def test_missing_smartctl_serves_smart_up_0_and_the_heartbeat(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}
    result = CliRunner(env=env).invoke(node, ["--once", "--node", "n1"])
    assert result.exit_code == 0, result.output
    assert "not found" in result.stderr
    assert value(result.stdout, "vigil_smart_up", node="n1") == 0
    assert value(result.stdout, "vigil_node_heartbeat_timestamp_seconds", node="n1") > 0


@pytest.mark.parametrize("args,message", [
    (["--listen", "nowhere"], "HOST:PORT"),
    (["--smartctl", "/no/such/smartctl"], "not an executable"),
    (["--simulate", "--sim-disks", "2", "--sim-fault", "5:reallocation"], "INDEX:KIND"),
    (["--sim-fault", "0:reallocation"], "only with --simulate"),
])
def test_bad_input_is_a_clear_error(args, message):
    result = CliRunner().invoke(node, ["--once", *args])
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output


def test_simulate_is_loud_and_published_names_match_specs(tmp_path):
    ib_port(tmp_path, "mlx5_0", "1", "4: ACTIVE", "5: LinkUp", symbol_error=0)
    result = CliRunner().invoke(node, ["--once", "--simulate", "--sim-disks", "4", "--sim-fault", "2:pending_burst",
                                       "--sysfs-root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "SIMULATED" in result.stderr
    fams = list(text_string_to_metric_families(result.stdout))
    by_name = {s.name: s for s in SPECS}
    for fam in fams:
        spec = by_name[fam.name + ("_total" if fam.type == "counter" else "")]
        assert all(set(s.labels) == set(spec.labels) for s in fam.samples)
    assert value(result.stdout, "vigil_disk_smart_attribute_raw", device="/dev/sdb", attribute_id="197") > 0
    if shutil.which("promtool"):
        check = subprocess.run(["promtool", "check", "metrics"], input=result.stdout, capture_output=True, text=True)
        assert check.returncode == 0 and check.stdout + check.stderr == "", check.stdout + check.stderr


def test_serves_metrics_over_http(tmp_path):
    port = free_port()
    proc = subprocess.Popen([str(REPO / ".venv/bin/vigil"), "exporter", "node", "--listen", f"127.0.0.1:{port}",
                             "--simulate", "--sim-disks", "2", "--node", "n-http", "--sysfs-root", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline, text = time.monotonic() + 20, ""
        while time.monotonic() < deadline:
            try:
                text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
                if "vigil_disk_smart_healthy" in text:
                    break
            except requests.ConnectionError:
                pass
            time.sleep(0.2)
        assert value(text, "vigil_disk_smart_healthy", node="n-http", device="/dev/sda") == 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)
