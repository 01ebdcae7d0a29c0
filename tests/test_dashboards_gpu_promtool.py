"""The GPU dashboard's "Last XID" computed by the real Prometheus engine (`promtool test rules`): the same
panel names the XID from the NVML exporter's per-XID times and from DCGM's last XID code."""

from __future__ import annotations

import subprocess

import pytest

from test_dashboards_jobs_promtool import _query
from vigil.rules import dump_yaml
from vigil.rules.promtool import PromtoolMissing, find_promtool


def test_last_xid_names_the_newest_xid_from_either_backend(tmp_path):
    try:
        promtool = find_promtool()
    except PromtoolMissing as exc:
        pytest.skip(str(exc))
    nvml = 'node="n1", gpu="0", uuid="GPU-a", instance="n1:9835", job="vigil-gpu"'
    dcgm = 'node="n2", gpu="0", uuid="GPU-b", instance="n2:9400", job="dcgm"'
    both = 'node="n4", gpu="0", uuid="GPU-d", instance="n4:9400"'
    series = [  # on n1 XID 62, then XID 79 later; n2 is read through DCGM, whose last code is 48
        {"series": f'vigil_gpu_xid_last_seen_timestamp_seconds{{{nvml}, xid="62", class="critical"}}', "values": "100x10"},
        {"series": f'vigil_gpu_xid_last_seen_timestamp_seconds{{{nvml}, xid="79", class="critical"}}', "values": "200x10"},
        {"series": f"vigil_gpu_last_xid_code{{{dcgm}}}", "values": "48x10"},
        {"series": 'vigil_gpu_last_xid_code{node="n3", gpu="0", uuid="GPU-c", instance="n3:9400", job="dcgm"}',
         "values": "0x10"},  # DCGM's 0: none
        # n4 is read by both (DCGM beside the NVML exporter): one answer, the per-XID time's
        {"series": f'vigil_gpu_xid_last_seen_timestamp_seconds{{{both}, xid="62", class="critical"}}', "values": "300x10"},
        {"series": f'vigil_gpu_last_xid_code{{{both}, job="dcgm"}}', "values": "79x10"},
    ]
    expected = [
        (_query("vigil-gpu", "Last XID", node="n1", gpu="0"),
         [{"labels": "{__name__=\"vigil_gpu_xid_last_seen_timestamp_seconds\", " + nvml + ', xid="79", class="critical"}',
           "value": 200}]),
        (_query("vigil-gpu", "Last XID", node="n2", gpu="0"), [{"labels": '{xid="48"}', "value": 1}]),
        (_query("vigil-gpu", "Last XID", node="n3", gpu="0"), []),
        (_query("vigil-gpu", "Last XID", node="n4", gpu="0"),
         [{"labels": "{__name__=\"vigil_gpu_xid_last_seen_timestamp_seconds\", " + both + ', xid="62", class="critical"}',
           "value": 300}]),
    ]
    tests = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{"expr": expr, "eval_time": "5m", "exp_samples": samples} for expr, samples in expected]}]}
    (tmp_path / "last_xid_test.yml").write_text(dump_yaml(tests))
    proc = subprocess.run([promtool, "test", "rules", "last_xid_test.yml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
