"""The NVML exporter's output on a real H100 (tests/data/nvml) against our specs and shipped rules.

The simulator is the only GPU the tests otherwise see; these captures keep us honest about what the
real driver answers: every sample must be one our specs declare, with the declared labels, and every
GPU metric a shipped rule reads must be on a real GPU, or absent for a reason written down here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from vigil.exporters import gpu_specs, jobs
from vigil.rules.query import read_query

DATA = Path(__file__).parent / "data" / "nvml"
CAPTURES = ("h100-sxm-idle.prom", "h100-sxm-load.prom")
RULES = Path(__file__).parent / "golden" / "rules" / "vigil-rules.yml"
# GPU metrics read by shipped rules that the captured machine cannot show, and why
ABSENT_ON_THIS_MACHINE = {
    "vigil_gpu_nvlink_errors_total": "one GPU passed through to a VM: no active NVLink",
    "vigil_gpu_xid_errors_total": "exported from the first XID event on; none happened",
    "vigil_gpu_xid_last_seen_timestamp_seconds": "exported beside each XID counter from its first event on; none happened",
    "vigil_gpu_job": "the load ran outside any Slurm job or job cgroup (counted kind=\"external\")",
    "vigil_job_info": "the load ran outside any Slurm job or job cgroup",
}
SPECS = {spec.name: spec for spec in (*gpu_specs.SPECS, *jobs.SPECS)}


def samples(name: str) -> list:
    return [sample for family in text_string_to_metric_families((DATA / name).read_text())
            for sample in family.samples]


@pytest.mark.parametrize("capture", CAPTURES)
def test_every_real_sample_is_declared_with_its_labels(capture: str) -> None:
    problems = []
    for sample in samples(capture):
        spec = SPECS.get(sample.name)
        if spec is None:
            problems.append(f"{sample.name}: no spec")
        elif spec.type != "info" and set(sample.labels) != set(spec.labels):
            problems.append(f"{sample.name}: labels {sorted(sample.labels)}, spec {sorted(spec.labels)}")
        elif spec.type == "info" and not set(spec.labels) <= set(sample.labels):
            problems.append(f"{sample.name}: labels {sorted(sample.labels)} lack some of {sorted(spec.labels)}")
    assert not problems, problems


@pytest.mark.parametrize("capture", CAPTURES)
def test_promtool_finds_nothing_to_lint_in_a_real_capture(capture: str) -> None:
    check = subprocess.run(["promtool", "check", "metrics"], input=(DATA / capture).read_text(),
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and not check.stdout.strip() and not check.stderr.strip(), check.stdout + check.stderr


def test_the_gpu_metrics_shipped_rules_read_are_exported_by_a_real_gpu() -> None:
    exported = {sample.name for capture in CAPTURES for sample in samples(capture)}
    read: set[str] = set()
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            read |= {s.name for s in read_query(rule["expr"], lambda _metric: None).selectors if s.name}
    gpu_metrics = {name for name in read if name in SPECS}
    assert gpu_metrics, "no rule reads a GPU exporter metric: the rule file or the specs moved"
    missing = gpu_metrics - exported - set(ABSENT_ON_THIS_MACHINE)
    assert not missing, f"rules read GPU metrics a real H100 did not export: {sorted(missing)}"
    assert set(ABSENT_ON_THIS_MACHINE) <= gpu_metrics - exported, "an absence listed here is no longer true"

