"""Real `smartctl --json` captures of several vendors through `vigil exporter node`: decoded SMART values,
the undecoded raw values next to them, and NVMe wear and spare (tests/data/smart/README.md names sources).

A disk is stood in for by an executable `smartctl` that answers the scan with one device and the read
with a capture file, the way the real binary answers; the exporter runs it as a subprocess."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from vigil.cli.node_exporter import node

CAPTURES = Path(__file__).resolve().parent / "data" / "smart"
ATA = ["seagate_ST33000650NS.json", "wdc_WD5002ABYS.json", "hgst_HUS724020ALE640.json", "samsung_MZ7WD240HAFV.json"]
NVME = ["samsung_MZVL21T0HCLR_nvme.json", "intel_SSDPE2KX080T8_nvme.json"]


def smartctl_serving(tmp_path: Path, capture: str) -> Path:
    """An executable that answers `--scan-open --json` with the capture's device and any read with the capture."""
    doc = json.loads((CAPTURES / capture).read_text())
    scan = tmp_path / "scan.json"
    scan.write_text(json.dumps({"json_format_version": [1, 0], "smartctl": {"version": [7, 3], "exit_status": 0},
                                "devices": [doc["device"]]}))
    script = tmp_path / "smartctl"
    script.write_text(f"""#!/bin/sh
case "$*" in *--scan-open*) exec cat '{scan}';; esac
cat '{CAPTURES / capture}'
exit {doc["smartctl"].get("exit_status", 0)}
""")
    script.chmod(0o755)
    return script


def scrape(tmp_path: Path, capture: str) -> dict[tuple[str, frozenset], float]:
    smartctl = smartctl_serving(tmp_path, capture)
    result = CliRunner().invoke(node, ["--once", "--node", "n1", "--smartctl", str(smartctl),
                                       "--sysfs-root", str(tmp_path / "nosys")])
    assert result.exit_code == 0, result.output
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(result.stdout) for s in fam.samples}


def series(samples, metric: str) -> dict[str, float]:
    """attribute_id -> value of `metric` (one disk per scrape)."""
    return {dict(labels)["attribute_id"]: v for (name, labels), v in samples.items() if name == metric}


def one(samples, metric: str) -> float:
    found = [v for (name, _), v in samples.items() if name == metric]
    assert len(found) == 1, f"{metric}: {found}"
    return found[0]


def table(capture: str) -> dict[int, dict]:
    doc = json.loads((CAPTURES / capture).read_text())
    return {a["id"]: a for a in doc["ata_smart_attributes"]["table"]}


def test_the_seagate_capture_of_issue_13_publishes_true_values(tmp_path):
    samples = scrape(tmp_path, "seagate_ST33000650NS.json")
    decoded = series(samples, "vigil_disk_smart_attribute_raw")
    raw = series(samples, "vigil_disk_smart_attribute_raw_value")
    assert decoded["194"] == 36 and raw["194"] == 68_719_476_772  # raw.string "36 (0 16 0 0 0)"
    assert decoded["190"] == 36 and raw["190"] == 5_781_950_431_268  # "36 (Min/Max 26/55 #1346)"
    assert decoded["188"] == 292 and raw["188"] == 1_228_379_455_780  # 16-bit fields 286 287 292
    assert (decoded["5"], decoded["187"], decoded["197"], decoded["198"], decoded["9"]) == (3, 2, 1, 1, 20836)
    assert one(samples, "vigil_disk_temperature_celsius") == 36
    assert set(decoded) == {"5", "9", "187", "188", "190", "194", "197", "198"}  # rates 1, 7, 195 not published


@pytest.mark.parametrize("capture", ATA)
def test_every_vendor_decodes_to_smartctl_own_reading(tmp_path, capture):
    samples = scrape(tmp_path, capture)
    decoded = series(samples, "vigil_disk_smart_attribute_raw")
    raw = series(samples, "vigil_disk_smart_attribute_raw_value")
    attrs = table(capture)
    assert decoded and set(decoded) == set(raw)
    for attr_id, value in decoded.items():
        entry = attrs[int(attr_id)]
        assert raw[attr_id] == entry["raw"]["value"]  # the undecoded value, exactly
        if attr_id in ("190", "194"):  # the temperature equals the first number of smartctl's raw string
            assert value == int(re.match(r"\d+", entry["raw"]["string"]).group())
        elif attr_id == "188":
            assert value == entry["raw"]["value"] & 0xFFFF
        else:
            assert value == int(re.match(r"\d+", entry["raw"]["string"]).group())
    if "194" in decoded:
        assert decoded["194"] == one(samples, "vigil_disk_temperature_celsius")  # smartctl's temperature.current


def test_hgst_packs_min_and_max_into_194(tmp_path):
    samples = scrape(tmp_path, "hgst_HUS724020ALE640.json")
    assert series(samples, "vigil_disk_smart_attribute_raw")["194"] == 26  # "26 (Min/Max 13/41)"
    assert series(samples, "vigil_disk_smart_attribute_raw_value")["194"] == 176_094_511_130


@pytest.mark.parametrize("capture, used, spare", [("samsung_MZVL21T0HCLR_nvme.json", 0.16, 1.0),
                                                  ("intel_SSDPE2KX080T8_nvme.json", 0.0, 1.0)])
def test_nvme_wear_spare_warning_and_media_errors(tmp_path, capture, used, spare):
    samples = scrape(tmp_path, capture)
    log = json.loads((CAPTURES / capture).read_text())["nvme_smart_health_information_log"]
    assert one(samples, "vigil_disk_nvme_percentage_used_ratio") == pytest.approx(used)
    assert one(samples, "vigil_disk_nvme_available_spare_ratio") == pytest.approx(spare)
    assert one(samples, "vigil_disk_nvme_available_spare_threshold_ratio") == pytest.approx(0.10)
    assert one(samples, "vigil_disk_nvme_critical_warning") == log["critical_warning"]
    assert one(samples, "vigil_disk_nvme_media_errors_total") == log["media_errors"]
    assert one(samples, "vigil_disk_temperature_celsius") == log["temperature"]
    assert not series(samples, "vigil_disk_smart_attribute_raw")  # NVMe has no ATA attributes
