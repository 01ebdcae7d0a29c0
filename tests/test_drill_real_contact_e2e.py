"""`vigil drill` against a stack whose on-call file pages a real contact (an apprise URL), not the local
inbox: the drill sees the page delivered through the outbox, whatever the channel."""

from __future__ import annotations

import json

from stack_support import start_stack
from test_notifier_support import RecordingEndpoint

ONCALL = """\
timezone: UTC
priorities:
  P1: {{ack_within: 5m}}
severities: {{critical: P1}}
people:
  dri: {{contacts: {{phone: {{url: "json://127.0.0.1:{port}/phone"}}}}}}
policies:
  gpu:
    tiers:
      - {{name: DRI, notify: [{{person: dri}}], escalate_after: 5m}}
default_policy: gpu
"""


def test_a_drill_whose_page_goes_to_a_real_contact_passes(tmp_path):
    with RecordingEndpoint() as phone:
        oncall = tmp_path / "oncall.yaml"
        oncall.write_text(ONCALL.format(port=phone.port))
        stack = start_stack(tmp_path, nodes=1, gpus=2, settings={"oncall_config": oncall})
        try:
            result = stack.cli("drill", "xid79", "--node", "node-1", "--gpu", "0", "--timeout", "60", "--json",
                               timeout=600)
        finally:
            stack.cli("down", timeout=120)
        report = json.loads(result.stdout)
        assert result.returncode == 0 and report["ok"], report
        stages = {stage["name"]: stage["detail"] for stage in report["stages"]}
        assert stages["page delivered"].endswith("to dri via other (tier 1)"), stages
        assert stages["acknowledged"].endswith("by dri")
        assert [body["title"].split("]")[0] for body in phone.received] == ["[FIRING:1", "[RESOLVED"]
