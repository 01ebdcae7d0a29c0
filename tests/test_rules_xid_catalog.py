"""The XID catalogue (rules/xid_catalog.py): consistent with the exporter's classes, documented in the
runbook, and carried into the XID alerts' `action` label by the `xid_events` kind."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from vigil import rules
from vigil.exporters.xid import XID_CLASSES
from vigil.rules.xid_catalog import ACTIONS, INSPECT_HARDWARE, RESTART_JOB, XID_CATALOG, hardware_suspect_xids

RUNBOOKS = Path(__file__).parent.parent / "docs" / "runbooks.md"


def test_every_xid_the_exporter_classifies_has_an_action_that_fits_its_class():
    assert set(XID_CLASSES) <= set(XID_CATALOG)
    for xid, entry in XID_CATALOG.items():
        assert entry.action in ACTIONS and entry.action != INSPECT_HARDWARE, xid  # inspection comes on recurrence
        assert (XID_CLASSES.get(xid) == "application") == (entry.action == RESTART_JOB), xid
        if XID_CLASSES.get(xid) == "critical":
            assert entry.recurs_to_hardware, xid


def test_the_runbook_table_lists_the_catalogue():
    rows = re.findall(r"^\| (\d+) \| (\w+) \| (.+?) \| `(\w+)` \| (yes|no) \|$", RUNBOOKS.read_text(encoding="utf-8"), re.M)
    documented = {int(x): (cls, name, action, flag == "yes") for x, cls, name, action, flag in rows}
    assert documented == {x: (XID_CLASSES.get(x, "unknown"), e.name, e.action, e.recurs_to_hardware)
                          for x, e in XID_CATALOG.items()}


def test_xid_kinds_expand_to_an_action_label_and_recurring_occasions(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text('defaults: {labels: {team: gpu}, runbook_base: "https://wiki.example/runbooks"}\nalerts:\n'
                    + textwrap.indent(textwrap.dedent("""\
        Xid:
          kind: xid_events
          metric: vigil_gpu_xid_errors_total
          selector: {class: critical}
          window: 5m
          severity: critical
          summary: s
          description: "{{ $labels.action }}"
        Again:
          kind: xid_recurring
          metric: vigil_gpu_xid_errors_total
          window: 10m
          over: 1d
          occasions: 2
          severity: warning
          summary: s
          description: d
        """), "  "), encoding="utf-8")
    exprs = {r["alert"]: r["expr"] for r in rules.prometheus_rule_file(rules.load_specs([spec]))["groups"][0]["rules"]}
    assert 'label_replace(' in exprs["Xid"] and '"action", "reboot_node", "xid", "64|74|79|95|119|120|143|158"' in exprs["Xid"]
    # a counter that appeared within the window (new, or back after an exporter restart) counts whole
    # while its own last event lies within the window, as in `job_xid` (rules/kinds_xid.py)
    xids = 'vigil_gpu_xid_errors_total{class="critical"}'
    # (appeared since the last whole minute, or at a whole-minute step of the window)
    assert (f'(((({xids} unless {xids} offset 1m) or ({xids} and (count_over_time(({xids} unless {xids} offset 1m)'
            f'[5m:1m])))) and on (node, gpu, xid) (time() - vigil_gpu_xid_last_seen_timestamp_seconds < 300)) '
            f'or increase({xids}[5m])) > 0') in exprs["Xid"]
    suspects = "|".join(map(str, hardware_suspect_xids()))
    assert exprs["Again"].startswith("count_over_time((sum by (node, gpu, uuid) ((((vigil_gpu_xid_errors_total{xid=~"
                                     f'"{suspects}"}} unless ')
    assert "time() - vigil_gpu_xid_last_seen_timestamp_seconds < 600" in exprs["Again"]
    assert exprs["Again"].endswith(") > 0)[1d:10m]) >= 2")
