"""A firing page says what to do: its priority, what broke (node, GPU, UUID), the repair action the XID
catalogue attaches (the alert's `action` label), the alert's description, the training job it stops
and the job's owner, and the runbook. Through a real notifier, as the person on call reads it."""

from __future__ import annotations

import requests

from vigil.notifier.core.page_text import compose_incident_page
from vigil.notifier.core.models import WebhookPayload
from vigil.rules.xid_catalog import ACTION_TEXT, ACTIONS, REBOOT_NODE
from test_notifier_support import AUTH, NotifierServer, alert, free_port, make_settings, payload, wait_for

ONCALL = """
priorities:
  P1: {ack_within: 5m}
severities: {critical: P1}
people:
  ana: {contacts: {phone: {inbox: true, kind: phone}}}
policies:
  main:
    tiers:
      - {notify: [{person: ana}], escalate_after: 5m}
default_policy: main
"""


def xid_alert(status: str = "firing") -> dict:
    """A hardware XID on a GPU that a training job holds, as the generated rules label and annotate it."""
    raised = alert("fp-xid", status=status, alertname="GpuXidHardware", uuid="GPU-2f1c", xid="79",
                   action=REBOOT_NODE, job_id="job-42", user="bob")
    raised["annotations"] |= {"description": "XID 79 on GPU 0 of node-1: the GPU fell off the bus.",
                              "runbook_url": "https://runbooks.example/gpu#xid-79"}
    return raised


def lines_of(page) -> list[str]:
    return page.body.splitlines()


def test_a_firing_page_says_the_priority_the_action_the_job_and_where_to_read():
    page = compose_incident_page(WebhookPayload.model_validate(payload(xid_alert())), "firing", 7, "t", priority="P1")
    lines = lines_of(page)
    assert lines[0] == "incident #7 · P1"
    assert "node=node-1 gpu=0 uuid=GPU-2f1c" in lines[1]
    assert f"action: {ACTION_TEXT[REBOOT_NODE]}" in lines
    assert "about: XID 79 on GPU 0 of node-1: the GPU fell off the bus." in lines
    assert "job: job-42 (owner bob)" in lines
    assert "runbook: https://runbooks.example/gpu#xid-79" in lines


def test_every_catalogued_action_reads_as_words():
    assert set(ACTION_TEXT) == set(ACTIONS) and all(" " in text for text in ACTION_TEXT.values())


def test_what_is_not_known_is_left_out_and_a_resolved_page_says_no_action():
    bare = compose_incident_page(WebhookPayload.model_validate(payload(alert("a"))), "firing", 3, "t")
    assert lines_of(bare)[0] == "incident #3"
    assert not [line for line in lines_of(bare) if line.startswith(("action:", "job:", "runbook:", "about:"))]
    resolved = compose_incident_page(WebhookPayload.model_validate(payload(xid_alert("resolved"))), "resolved", 7, "t")
    assert not [line for line in lines_of(resolved) if line.startswith(("action:", "job:"))]


def test_the_page_in_the_inbox_says_what_to_do(tmp_path):
    with NotifierServer(make_settings(tmp_path, port=free_port()), ONCALL) as server:
        posted = requests.post(f"{server.url}/api/v1/alerts/alertmanager", headers=AUTH, timeout=10,
                               json=payload(xid_alert(), group_key='{}:{alertname="GpuXidHardware"}'))
        assert posted.status_code == 200, posted.text
        [page] = wait_for(lambda: requests.get(f"{server.url}/api/v1/inbox", headers=AUTH, timeout=5).json()["pages"])
    body = page["body"].splitlines()
    assert page["recipient"] == "ana" and body[0] == f"incident #{page['incident_id']} · P1"
    assert f"action: {ACTION_TEXT[REBOOT_NODE]}" in body and "job: job-42 (owner bob)" in body
    assert "runbook: https://runbooks.example/gpu#xid-79" in body
