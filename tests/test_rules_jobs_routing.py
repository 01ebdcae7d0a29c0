"""Job alerts reach the team that owns the job: the generated Alertmanager configuration (shipped specs and
routing file) in a real Alertmanager, posting to the real notifier whose on-call routes are the block
documented in docs/rules.md ("Routing job alerts to their owners").

Alert labels are the ones the generated rules produce (checked by rules/tests/jobs.yaml).
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest
import requests
import yaml

from test_notifier_alertmanager import Alertmanager, get
from test_notifier_support import TOKEN, NotifierServer, free_port, make_settings, wait_for
from vigil import rules
from vigil.rules.alertmanager import alertmanager_config, webhook_receiver
from vigil.rules.alertmanager_routing import ROUTING_FILE, load_routing

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not shutil.which("prometheus-alertmanager"),
                                                  reason="prometheus-alertmanager not installed")]
DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules.md"
PEOPLE = """
people:
  alice: {contacts: {phone: {inbox: true, kind: phone}}}
  lena: {contacts: {phone: {inbox: true, kind: phone}}}
  gabe: {contacts: {phone: {inbox: true, kind: phone}}}
policies:
  ml-research: {tiers: [{notify: [{person: alice}]}]}
  language: {tiers: [{notify: [{person: lena}]}]}
  gpu-infra: {tiers: [{notify: [{person: gabe}]}]}
"""


def documented_routes() -> str:
    """The YAML block of the docs section on routing job alerts."""
    section = DOCS.read_text(encoding="utf-8").split("### Routing job alerts to their owners", 1)[1]
    return re.search(r"```yaml\n(.*?)```", section, re.S).group(1)


def job_alert(name: str, job_id: str, tenant: str, user: str, severity: str, **labels: str) -> dict:
    return {"alertname": name, "severity": severity, "team": "jobs", "job_id": job_id, "tenant": tenant,
            "user": user, **labels}


def test_job_alerts_page_the_owning_team_one_incident_per_job(tmp_path):
    ruleset = rules.load_specs(rules.default_spec_paths())
    routing = dataclasses.replace(load_routing(ROUTING_FILE, ruleset),
                                  timings=(("group_wait", "1s"), ("group_interval", "1s"), ("repeat_interval", "4h")))
    port = free_port()
    (tmp_path / "token").write_text(TOKEN)
    webhook = webhook_receiver(f"http://127.0.0.1:{port}/api/v1/alerts/alertmanager", str(tmp_path / "token"))
    oncall = yaml.safe_load(PEOPLE) | yaml.safe_load(documented_routes())
    with NotifierServer(make_settings(tmp_path, port=port), yaml.safe_dump(oncall)) as server, \
            Alertmanager(tmp_path, port) as am:
        (tmp_path / "alertmanager.yml").write_text(rules.dump_yaml(alertmanager_config(ruleset, routing, webhook)))
        assert requests.post(f"{am.url}/-/reload", timeout=10).ok
        xid = dict(job="vigil-gpu", instance="node-9:9835", node="node-9", gpu="0", uuid="GPU-90", xid="79",
                   **{"class": "critical"}, action="reboot_node")
        for labels in [
            job_alert("JobHung", "4242", "ml-research", "alice", "critical"),
            job_alert("JobGpusIdle", "4242", "ml-research", "alice", "warning"),  # muted: the job hangs
            job_alert("JobHung", "77", "nlp", "lena", "critical"),
            job_alert("JobGpusIdle", "88", "vision", "vic", "warning"),  # no policy of its own
            {"alertname": "GpuNodeDown", "severity": "critical", "team": "gpu", "job": "vigil-gpu",
             "instance": "node-9:9835", "node": "node-9"},
            job_alert("JobGpuXid", "4242", "ml-research", "alice", "warning", **xid),  # muted: node-9 is down
        ]:
            am.post_alert(labels)

        incidents = wait_for(lambda: (found := get(server, "incidents")) and len(found) >= 4 and found, timeout=30)
        by_alert = {(i["labels"]["alertname"], i["labels"].get("job_id")): i for i in incidents}
        assert {key: (i["policy"], i["priority"], i["labels"].get("tenant")) for key, i in by_alert.items()} == {
            ("JobHung", "4242"): ("ml-research", "P1", "ml-research"),
            ("JobHung", "77"): ("language", "P1", "nlp"),
            ("JobGpusIdle", "88"): ("gpu-infra", "P4", "vision"),
            ("GpuNodeDown", None): ("gpu-infra", "P1", None),
        }
        alerts = requests.get(f"{am.url}/api/v2/alerts", timeout=5).json()
        assert {(a["labels"]["alertname"], a["labels"]["job_id"]) for a in alerts if a["status"]["inhibitedBy"]} == {
            ("JobGpusIdle", "4242"), ("JobGpuXid", "4242")}
        assert len(get(server, "incidents")) == 4  # the muted ones were never notified
