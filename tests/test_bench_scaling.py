"""The scaling bench's pure parts: the capacity arithmetic on figures worked out by hand, and which rules a
hashmod shard can evaluate alone (on the shipped catalog and on small expressions)."""

import subprocess
from pathlib import Path

import pytest
import yaml

from bench_support import load_bench
from vigil.deploy.k8s.aiops_memory import aiops_memory_mib
from vigil.rules import shard_split as split

capacity = load_bench("scaling/capacity.py")


MEASURED = capacity.Measured(gpus_per_shard=8_000, series_per_gpu=50.0, rss_mib_per_series=0.01,
                             samples_per_gpu_s=4.0, vm_bytes_per_sample=1.0, largest_measured_gpus=16_000)


def test_capacity_rows_by_hand():
    rows = {r.gpus: r for r in capacity.capacity_rows(MEASURED, (8_000, 10_000, 100_000))}
    # 100,000 / 8,000 = 12.5 -> 13 shards; 50 series x 0.01 MiB x 100,000 / 13 = 3,846.15 MiB per shard
    assert rows[100_000].shards == 13
    assert rows[100_000].memory_mib_per_shard == pytest.approx(50 * 0.01 * 100_000 / 13)
    # 1 byte x 4 samples/s x 100,000 GPUs x 86,400 s = 34,560,000,000 bytes = 32.19 GiB a day
    assert rows[100_000].vm_gib_per_day == pytest.approx(34_560_000_000 / 2**30)
    assert rows[10_000].shards == 2 and rows[8_000].shards == 1
    assert rows[8_000].memory_mib_per_shard == pytest.approx(4_000)
    assert [r.extrapolated for r in rows.values()] == [False, False, True]


def test_capacity_counts_each_nodes_own_series_the_aiops_service_and_victoria_metrics_memory():
    measured = capacity.Measured(gpus_per_shard=8_000, series_per_gpu=50.0, rss_mib_per_series=0.01,
                                 samples_per_gpu_s=4.0, vm_bytes_per_sample=1.0, largest_measured_gpus=16_000,
                                 node_series=600.0, gpus_per_node=8, scrape_s=15.0, vm_rss_mib_per_series=0.002)
    [row] = capacity.capacity_rows(measured, (16_000,))
    # 50 + 600 / 8 = 125 series per GPU: 0.01 MiB x 125 x 16,000 / 2 shards = 10,000 MiB per shard
    assert measured.all_series_per_gpu == 125.0 and row.memory_mib_per_shard == pytest.approx(10_000)
    # 4 + 75 / 15 = 9 samples/s per GPU: 1 byte x 9 x 16,000 x 86,400 = 12,441,600,000 bytes a day
    assert row.vm_gib_per_day == pytest.approx(12_441_600_000 / 2**30)
    assert row.vm_memory_mib == pytest.approx(0.002 * 125 * 16_000)  # 4,000 MiB
    assert row.aiops_mib_per_shard == pytest.approx(aiops_memory_mib(8_000))  # one series per GPU of a shard
    table = capacity.capacity_table(measured, (16_000,))
    assert table[-1] == (f"| 16,000 | 2 | 10,000 MiB | {aiops_memory_mib(8_000):,.0f} MiB | 4,000 MiB | "
                         f"{12_441_600_000 / 2**30:,.1f} GiB | measured range |")


def test_capacity_table_labels_extrapolation_and_refuses_no_capacity():
    table = capacity.capacity_table(MEASURED, (10_000, 100_000))
    assert table[-1].startswith("| 100,000 | 13 |") and table[-1].endswith("| extrapolation |")
    assert table[-2].endswith("| measured range |")
    with pytest.raises(ValueError, match="no fleet size passed"):
        capacity.capacity_rows(capacity.Measured(0, 1, 1, 1, 1, 1))


@pytest.mark.parametrize("expr, local", [
    ("vigil_gpu_temperature_celsius > 85", True),
    ("max by (node, gpu) (vigil_gpu_clock_event_active == 1)", True),
    ("sum without (gpu) (vigil_gpu_up)", True),
    ("x unless on (instance) y", True),
    ("sum without (node) (vigil_gpu_up)", False),
    ("avg by (job_id) (vigil_gpu_utilization_ratio)", False),
    ("count(vigil_gpu_up)", False),
    ("absent(up{job=\"vigil-gpu\"})", False),
    ("x < on (job_id) group_left () y", False),
    ("vector(1)", False),
])
def test_one_rule_split(expr, local):
    assert ("A" not in split.global_reasons([{"alert": "A", "expr": expr}])) is local


def test_a_rule_reading_a_global_record_is_global():
    rules = [{"record": "job:u:avg", "expr": "avg by (job_id) (u)"},
             {"record": "node:u:max", "expr": "max by (node) (u)"},
             {"alert": "Low", "expr": "job:u:avg < 0.1"}, {"alert": "NodeLow", "expr": "node:u:max < 0.1"}]
    assert sorted(split.global_reasons(rules)) == ["Low", "job:u:avg"]


def test_a_rule_reading_a_metric_named_global_is_global_and_so_are_its_readers():
    rules = [{"record": "node:band:max", "expr": "max by (node) (vigil_baseline_upper)"},
             {"alert": "Above", "expr": "vigil_gpu_temperature_celsius > on (node) node:band:max"},
             {"alert": "Hot", "expr": "vigil_gpu_temperature_celsius > 90"}]
    assert split.global_reasons(rules) == {}
    # exact names, not prefixes: naming another metric of the same stem changes nothing
    assert split.global_reasons(rules, ("vigil_baseline_upper_bound", "vigil_baseline")) == {}
    found = split.global_reasons(rules, ("vigil_baseline_upper",))
    assert sorted(found) == ["Above", "node:band:max"] and "vigil_baseline_upper" in found["node:band:max"]


def test_the_catalog_splits_into_shard_and_global_files():
    doc = yaml.safe_load((Path(__file__).parent / "golden" / "rules" / "vigil-rules.yml").read_text())
    shard, glob, reasons = split.split_rule_file(doc)
    names = lambda d: [r.get("record") or r["alert"] for g in d["groups"] for r in g["rules"]]  # noqa: E731
    assert sorted(names(shard) + names(glob)) == sorted(names(doc))
    assert set(names(glob)) == set(reasons)
    assert {"GpuExporterAbsent", "Watchdog", "job:vigil_gpu_utilization:avg", "JobHung",
            "GpuAvailabilityErrorBudgetBurnFast"} <= set(reasons)
    assert {"GpuFallenOffBus", "GpuOverheating", "job_gpu:vigil_gpu_utilization:ratio", "NodeDown"} <= set(names(shard))
    intervals = {g["name"]: g.get("interval") for g in doc["groups"]}
    assert all(g.get("interval") == intervals[g["name"]] for g in shard["groups"] + glob["groups"])


def test_each_shard_config_passes_promtool_and_hashes_the_node(tmp_path):
    measure = load_bench("scaling/measure.py")  # it imports its siblings
    (tmp_path / "rules.yml").write_text("groups: []\n")
    base = measure.stack.prometheus_config(9999, 6, tmp_path / "rules.yml", 9000, 15)
    for shard in range(2):
        doc = measure.shard_config(base, 2, shard, 9000 + shard, "http://127.0.0.1:8428")
        path = tmp_path / f"shard-{shard}.yml"
        path.write_text(yaml.safe_dump(doc))
        result = subprocess.run(["promtool", "check", "config", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
        jobs = {job["job_name"]: job for job in doc["scrape_configs"]}
        assert jobs["prometheus"]["static_configs"][0]["targets"] == [f"127.0.0.1:{9000 + shard}"]
        assert jobs["vigil-gpu"]["relabel_configs"][-2]["source_labels"] == ["instance"]
        assert doc["remote_write"] == [{"url": "http://127.0.0.1:8428/api/v1/write"}]


def test_the_gpu_availability_slo_reads_every_gpu_on_the_shards_and_only_per_node_counts_globally():
    # vmalert's vigil-slo group read every GPU's vigil_gpu_up of the fleet (454 ms at 6,000 GPUs): the count
    # per value is now kept per node, a shard-local record; the global tier sums those
    doc = yaml.safe_load((Path(__file__).parent / "golden" / "rules" / "vigil-rules.yml").read_text())
    shard, glob, reasons = split.split_rule_file(doc)
    local = {r.get("record") or r["alert"]: r["expr"] for g in shard["groups"] for r in g["rules"]}
    assert "vigil_gpu_up" in local["slo:gpu_availability_up:by_value"]
    for rule in (r for g in glob["groups"] for r in g["rules"] if r.get("record", "").startswith("slo:gpu_availability")):
        assert "vigil_gpu_up" not in rule["expr"], rule
