"""The `job_xid` kind: an XID counter's events joined to the job holding the GPU and to the job's owner."""

from __future__ import annotations

import textwrap

import pytest

from vigil import rules

ALERT = """\
defaults: {labels: {team: jobs}, runbook_base: "https://wiki.example/runbooks"}
alerts:
  AppXidInJob:
    kind: job_xid
    metric: vigil_gpu_xid_errors_total
    selector: {class: application}
%s
    severity: warning
    summary: "XID {{ $labels.xid }} during job {{ $labels.job_id }} of {{ $labels.tenant }}"
    description: d
"""


def load(tmp_path, keys: str):
    spec = tmp_path / "jobs.yaml"
    spec.write_text(ALERT % textwrap.indent(keys, "    "))
    return rules.load_specs([spec])


def test_job_xid_joins_the_sole_job_of_the_gpu_and_its_owner(tmp_path):
    [alert] = load(tmp_path, "window: 5m\nabove: 2").alerts
    xids = 'vigil_gpu_xid_errors_total{class="application"}'
    events = (f'(((({xids} unless {xids} offset 1m) or ({xids} and (count_over_time(({xids} unless {xids} offset 1m)'
              '[5m:1m])))) and on (node, gpu, xid) (time() - vigil_gpu_xid_last_seen_timestamp_seconds < 300)) '
              f'or increase({xids}[5m])) > 2')
    assert alert.expr.startswith('label_replace(label_replace(label_replace(label_replace(' + events + ', "action", ')
    # the GPU's current sole job, else the sole job it held within the window and the 5-minute lookback
    assert alert.expr.endswith(
        ' * on (node, gpu) group_left (job_id) ((vigil_gpu_job unless on (node, gpu) (count by (node, gpu) (vigil_gpu_job) > 1))'
        ' or on (node, gpu) (last_over_time(vigil_gpu_job[10m]) unless on (node, gpu)'
        ' (count by (node, gpu) (last_over_time(vigil_gpu_job[10m])) > 1)))'
        ' * on (job_id) group_left (tenant, user) topk by (job_id) (1, last_over_time(vigil_job_info[10m]))')


def test_job_xid_reports_a_missing_window_and_an_unknown_key_with_their_lines(tmp_path):
    with pytest.raises(rules.SpecError) as caught:
        load(tmp_path, "owner: tenant")
    errors = caught.value.errors
    assert any(e.startswith(f"{tmp_path / 'jobs.yaml'}:3:") and "'window'" in e for e in errors), errors
    assert any(e.startswith(f"{tmp_path / 'jobs.yaml'}:7:") and "owner" in e for e in errors), errors
