"""A firing page says what to do: its priority, what broke (node, GPU, UUID), the repair action the XID
catalogue attaches (the alert's `action` label), the alert's description, the training job it stops
and the job's owner, and the runbook; an escalated page says why it came. SMS and phone get one line of
at most 160 characters with a short acknowledge link that works. Through a real notifier, as the
person on call reads it."""

from __future__ import annotations

from datetime import datetime, timezone

import requests

from vigil.dashboards.gpu import JOB_UID, NODE_UID
from vigil.dashboards.gpu import UID as GPU_UID
from vigil.notifier.core.page_text import MAX_SHORT_CHARS, compose_incident_page, dashboard_link
from vigil.notifier.core.models import WebhookPayload
from vigil.rules.xid_catalog import ACTION_TEXT, ACTIONS, REBOOT_NODE
from test_notifier_support import AUTH, NotifierServer, alert, free_port, inbox, make_settings, payload, wait_for

ONCALL = """
priorities:
  P1: {ack_within: 1h}
severities: {critical: P1}
people:
  ana:
    contacts: {phone: {inbox: true, kind: phone}, im: {inbox: true, kind: im}}
    notify: [{steps: [{contact: phone}, {contact: im}]}]
  bob:
    contacts: {sms: {inbox: true, kind: sms}}
policies:
  main:
    tiers:
      - {name: DRI, notify: [{person: ana}], escalate_after: 5m}
      - {name: senior, notify: [{person: bob}], escalate_after: 5m}
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


def test_a_gpu_alert_without_a_job_label_names_the_job_from_its_job_annotation():
    """GpuOverheating has no `job_id` label (its identity must not change when a job ends): the generated
    `job` annotation, filled by Prometheus from the job exporters' series, gives the page its job line."""
    hot = alert("fp-hot", alertname="GpuOverheating")
    hot["annotations"] |= {"description": "GPU 0 on node-1 runs at 95 C.", "job": "57431500 (owner bob)"}
    page = compose_incident_page(WebhookPayload.model_validate(payload(hot)), "firing", 3, "t", priority="P1")
    assert "job: 57431500 (owner bob)" in lines_of(page)
    idle = alert("fp-idle", alertname="GpuOverheating")
    idle["annotations"] |= {"job": ""}  # no job holds the GPU: no job line
    page = compose_incident_page(WebhookPayload.model_validate(payload(idle)), "firing", 4, "t", priority="P1")
    assert not any(line.startswith("job:") for line in lines_of(page))


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


def fire_xid(server) -> int:
    """Alertmanager posts the XID alert; its incident's id once ana's two pages (phone, IM) are in the inbox."""
    posted = requests.post(f"{server.url}/api/v1/alerts/alertmanager", headers=AUTH, timeout=10,
                           json=payload(xid_alert(), group_key='{}:{alertname="GpuXidHardware"}'))
    assert posted.status_code == 200, posted.text
    wait_for(lambda: len(inbox(server)) == 2)
    return posted.json()["incident_id"]


def test_im_gets_the_full_page_and_the_phone_one_short_line_whose_link_acknowledges(tmp_path, fake_clock):
    settings = make_settings(tmp_path, port=free_port(), grafana_url="https://grafana.example/")
    with NotifierServer(settings, ONCALL, clock=fake_clock) as server:
        incident = fire_xid(server)
        pages = {page["channel"]: page for page in inbox(server)}
        full = pages["im"]["body"].splitlines()
        assert pages["im"]["recipient"] == "ana" and full[0] == f"incident #{incident} · P1"
        assert f"action: {ACTION_TEXT[REBOOT_NODE]}" in full and "job: job-42 (owner bob)" in full
        assert "runbook: https://runbooks.example/gpu#xid-79" in full
        # the GPU's dashboard, open on the hour before and after the alert began (20:00:00.123 UTC)
        began_ms = int(datetime(2026, 11, 21, 20, 0, 0, 123456, tzinfo=timezone.utc).timestamp() * 1000)
        assert (f"dashboard: https://grafana.example/d/{GPU_UID}?var-node=node-1&var-gpu=0"
                f"&from={began_ms - 3_600_000}&to={began_ms + 3_600_000}") in full
        short = pages["phone"]["body"]
        assert len(short) <= MAX_SHORT_CHARS and "\n" not in short, short
        assert short.startswith(f"P1 #{incident} GpuXidHardware node-1 gpu 0: drain the node and reboot it. Ack http")
        link = short.rpartition(" ")[2]
        assert requests.post(link, timeout=5).status_code == 200
        detail = requests.get(f"{server.url}/api/v1/incidents/{incident}", headers=AUTH, timeout=5).json()
        assert detail["state"] == "acknowledged"
        assert requests.post(link, timeout=5).status_code == 409  # a link acts once


def test_an_escalated_page_says_why_it_came(tmp_path, fake_clock):
    settings = make_settings(tmp_path, port=free_port())
    with NotifierServer(settings, ONCALL, clock=fake_clock) as server:
        fire_xid(server)
        assert not [line for page in inbox(server) for line in page["body"].splitlines()
                    if line.startswith("escalated:")]  # the first page: the alert is the reason
        fake_clock.advance(301)  # ana did not acknowledge within the DRI tier's 5 minutes
        [sms] = wait_for(lambda: [page for page in inbox(server) if page["recipient"] == "bob"])
    why = "not acknowledged within 5m by ana (DRI)"
    assert sms["channel"] == "sms" and "No ack in 5m by ana (DRI)" in sms["body"]
    assert len(sms["body"]) <= MAX_SHORT_CHARS
    full = compose_incident_page(WebhookPayload.model_validate(payload(xid_alert())), "firing", 1, "t",
                                 priority="P1", why=why)
    assert lines_of(full)[:2] == ["incident #1 · P1", f"escalated: {why}"]


def test_a_missed_resolve_target_does_not_pass_for_the_reason_of_an_escalation(tmp_path, fake_clock):
    """The resolve target (2 minutes) passes before the DRI tier's 5-minute wait: it moves nothing, so
    the senior's page names the unanswered wait, not a missed target."""
    oncall = ONCALL.replace("P1: {ack_within: 1h}", "P1: {ack_within: 1h, resolve_within: 2m}")
    with NotifierServer(make_settings(tmp_path, port=free_port()), oncall, clock=fake_clock) as server:
        incident = fire_xid(server)
        fake_clock.advance(150)  # past the resolve target
        wait_for(lambda: requests.get(f"{server.url}/api/v1/incidents/{incident}", headers=AUTH,
                                      timeout=5).json()["sla"]["resolve"] == "breached")
        fake_clock.advance(151)  # past the DRI tier's wait
        [sms] = wait_for(lambda: [page for page in inbox(server) if page["recipient"] == "bob"])
    assert "No ack in 5m by ana (DRI)" in sms["body"], sms["body"]


def test_a_page_escalated_by_hand_names_who_did_it(tmp_path, fake_clock):
    settings = make_settings(tmp_path, port=free_port())
    with NotifierServer(settings, ONCALL, clock=fake_clock) as server:
        incident = fire_xid(server)
        escalated = requests.post(f"{server.url}/api/v1/incidents/{incident}/escalate", headers=AUTH, timeout=5,
                                  json={"by": "carol"})
        assert escalated.status_code == 200, escalated.text
        [sms] = wait_for(lambda: [page for page in inbox(server) if page["recipient"] == "bob"])
    assert "Escalated by carol" in sms["body"] and len(sms["body"]) <= MAX_SHORT_CHARS


def test_the_short_form_keeps_its_link_whole_when_the_rest_does_not_fit():
    noisy = xid_alert()
    noisy["labels"]["alertname"] = "Gpu" + "VeryLong" * 30
    link = "https://vigil.example.com/l/AQBxP7MAM9zjKI7frKhNtXvn"
    page = compose_incident_page(WebhookPayload.model_validate(payload(noisy)), "firing", 12, "t",
                                 links=["a", "r", "o", "n", link], priority="P1", why="escalated by carol")
    assert len(page.short) == MAX_SHORT_CHARS
    assert page.short.endswith(f"Ack {link}") and page.short.startswith("P1 #12 GpuVeryLong")
    assert page.for_kind("sms") == ("", page.short) and page.for_kind("email") == (page.title, page.body)


def test_a_jobs_short_page_names_the_job_where_a_gpus_names_the_node():
    hung = alert("fp-job", alertname="JobHung", job_id="job-42", tenant="ml")
    del hung["labels"]["node"], hung["labels"]["gpu"]
    page = compose_incident_page(WebhookPayload.model_validate(payload(hung)), "firing", 5, "t", priority="P1")
    assert page.short == "P1 #5 JobHung job job-42"


def test_the_dashboard_link_opens_the_gpus_else_the_jobs_else_the_nodes_board():
    began = datetime(2027, 1, 15, 8, 0, tzinfo=timezone.utc)
    at = int(began.timestamp() * 1000)
    span = f"from={at - 3_600_000}&to={at + 3_600_000}"
    grafana = "https://g.example"
    assert dashboard_link(grafana, {"node": "n 1", "gpu": "3", "job_id": "j"}, began) == \
        f"{grafana}/d/{GPU_UID}?var-node=n+1&var-gpu=3&{span}"
    assert dashboard_link(grafana, {"job_id": "train/7"}, began) == f"{grafana}/d/{JOB_UID}?var-job_id=train%2F7&{span}"
    assert dashboard_link(grafana, {"node": "n1"}, began) == f"{grafana}/d/{NODE_UID}?var-node=n1&{span}"
    assert dashboard_link(grafana, {"slo": "GpuAvailability"}, began) is None
    # no Grafana configured: no dashboard line
    plain = compose_incident_page(WebhookPayload.model_validate(payload(xid_alert())), "firing", 7, "t")
    assert not [line for line in lines_of(plain) if line.startswith("dashboard:")]
