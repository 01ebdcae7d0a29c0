"""One incident per cause, in a real notifier server: a symptom (an alert with the `symptom_of` annotation
the rule generator writes) joins the open incident of its cause without a page, waits for a cause that
fires after it, and pages on its own when no cause comes or the cause is another GPU's."""

from __future__ import annotations

import time

import requests

from vigil.common import symptoms
from vigil.common.times import parse_time, rfc3339
from vigil.stack.client import StackClient
from vigil.stack.drill import Drill, DrillFailed, shipped_fault_expectations
from vigil.rules import SPECS_DIR, load_specs, prometheus_rule_file
import pytest

from test_notifier_support import TOKEN, AUTH, NotifierServer, alert, free_port, inbox, make_settings, payload, post_alerts, wait_for

LOST = "GpuFallenOffBus"


def symptom_annotation(wait_s: float) -> str:
    return symptoms.encode(symptoms.SymptomOf((symptoms.Cause(LOST, ("node", "gpu")),), wait_s))


def lost(node="node-1", gpu="3", status="firing") -> dict:
    body = alert(f"lost-{node}-{gpu}", status=status, alertname=LOST, node=node, gpu=gpu)
    return payload(body, group_key=f'{{}}:{{alertname="{LOST}", node="{node}", gpu="{gpu}"}}')


def job_xid(node="node-1", gpu="3", wait_s=60.0, status="firing") -> dict:
    body = alert(f"xid-{node}-{gpu}", status=status, alertname="JobGpuXid", node=node, gpu=gpu, job_id="job-7",
                 severity="warning")
    body["annotations"][symptoms.ANNOTATION] = symptom_annotation(wait_s)
    return payload(body, group_key=f'{{}}:{{alertname="JobGpuXid", node="{node}", gpu="{gpu}", job_id="job-7"}}')


def detail(server: NotifierServer, incident_id: int) -> dict:
    return requests.get(f"{server.url}/api/v1/incidents/{incident_id}", headers=AUTH, timeout=5).json()


def kinds(server: NotifierServer, incident_id: int) -> list[str]:
    return [event["kind"] for event in detail(server, incident_id)["timeline"]]


def firing_pages(server: NotifierServer) -> list[dict]:
    return [page for page in inbox(server) if page["status"] == "firing"]


def test_a_symptom_of_an_open_cause_joins_its_incident_and_pages_nobody(tmp_path):
    with NotifierServer(make_settings(tmp_path, port=free_port())) as server:
        cause = post_alerts(server, lost())
        wait_for(lambda: len(firing_pages(server)) == 1)
        symptom = post_alerts(server, job_xid())
        assert symptom != cause
        shown = detail(server, symptom)
        assert shown["part_of"] == cause and shown["ack_due_at"] is None
        assert "joined" in kinds(server, symptom)
        also = [e for e in detail(server, cause)["timeline"] if e["kind"] == "also_firing"]
        assert [e["detail"]["incident"] for e in also] == [symptom]
        # its resolution pages nobody either; the cause's page stays the only one
        post_alerts(server, job_xid(status="resolved"))
        wait_for(lambda: detail(server, symptom)["status"] == "resolved")
        post_alerts(server, lost(status="resolved"))
        wait_for(lambda: [p["status"] for p in inbox(server)] == ["firing", "resolved"])
        assert {p["incident_id"] for p in inbox(server)} == {cause}


def test_a_symptom_that_fires_first_waits_and_joins_the_cause_which_alone_is_paged(tmp_path):
    with NotifierServer(make_settings(tmp_path, port=free_port())) as server:
        symptom = post_alerts(server, job_xid(wait_s=60))
        shown = detail(server, symptom)
        assert shown["held_until"] is not None and shown["part_of"] is None
        assert "held" in kinds(server, symptom) and inbox(server) == []
        cause = post_alerts(server, lost())
        assert detail(server, symptom)["part_of"] == cause
        pages = wait_for(lambda: firing_pages(server))
        assert [p["incident_id"] for p in pages] == [cause]
        assert "also_firing" in kinds(server, cause)
        # the one page names what else fired and, through the job's XID alert, the training job it stops
        body = pages[0]["body"]
        assert f"also firing, same cause (not paged): JobGpuXid node=node-1 gpu=3 job_id=job-7 (#{symptom})" in body
        assert "\njob: job-7" in body


def remap_failure(node="node-1", gpu="3", wait_s=60.0) -> dict:
    """GpuRowRemapFailure: the cause of the XID 64 alert, itself a symptom of a GPU off the bus."""
    body = alert(f"remap-{node}-{gpu}", alertname="GpuRowRemapFailure", node=node, gpu=gpu)
    body["annotations"][symptoms.ANNOTATION] = symptom_annotation(wait_s)
    return payload(body, group_key=f'{{}}:{{alertname="GpuRowRemapFailure", node="{node}", gpu="{gpu}"}}')


def xid64(node="node-1", gpu="3", wait_s=60.0) -> dict:
    body = alert(f"xid64-{node}-{gpu}", alertname="GpuCriticalXid", node=node, gpu=gpu, xid="64")
    body["annotations"][symptoms.ANNOTATION] = symptoms.encode(symptoms.SymptomOf(
        (symptoms.Cause(LOST, ("node", "gpu")), symptoms.Cause("GpuRowRemapFailure", ("node", "gpu"))), wait_s))
    return payload(body, group_key=f'{{}}:{{alertname="GpuCriticalXid", node="{node}", gpu="{gpu}"}}')


def test_a_held_cause_gathers_its_held_symptoms_and_takes_them_along_when_it_joins_its_own_cause(tmp_path):
    """A row remap failure: XID 64's alert (a symptom of the remap failure) fires first and waits; the
    remap failure fires and waits for a GPU off the bus itself. It gathers the XID alert at once, so when
    its wait ends one page goes out, not two (a live run paged both, two seconds apart)."""
    with NotifierServer(make_settings(tmp_path, port=free_port())) as server:
        xid = post_alerts(server, xid64(wait_s=1))
        remap = post_alerts(server, remap_failure(wait_s=1.5))
        assert detail(server, xid)["part_of"] == remap and detail(server, remap)["held_until"] is not None
        pages = wait_for(lambda: firing_pages(server))
        # the XID alert's wait (1 s) ended before the remap failure's (1.5 s): had it not joined, its page
        # would have come first
        assert [p["incident_id"] for p in pages] == [remap]
        assert "page_queued" not in kinds(server, xid)
    chain = tmp_path / "chain"
    chain.mkdir()
    with NotifierServer(make_settings(chain, port=free_port())) as server:
        xid = post_alerts(server, xid64(wait_s=60))
        remap = post_alerts(server, remap_failure(wait_s=60))
        cause = post_alerts(server, lost())  # the GPU is off the bus: the remap failure and the XID join it
        assert detail(server, remap)["part_of"] == cause and detail(server, xid)["part_of"] == cause
        assert [p["incident_id"] for p in wait_for(lambda: firing_pages(server))] == [cause]


def test_a_symptom_whose_cause_never_fires_is_paged_after_its_wait(tmp_path):
    with NotifierServer(make_settings(tmp_path, port=free_port())) as server:
        symptom = post_alerts(server, job_xid(wait_s=1))
        held_at = time.monotonic()
        pages = wait_for(lambda: firing_pages(server))
        assert time.monotonic() - held_at >= 0.9  # not before its wait
        assert [p["incident_id"] for p in pages] == [symptom]
        assert detail(server, symptom)["part_of"] is None


def test_another_gpus_cause_does_not_take_a_symptom(tmp_path):
    with NotifierServer(make_settings(tmp_path, port=free_port())) as server:
        cause = post_alerts(server, lost(gpu="5"))
        symptom = post_alerts(server, job_xid(gpu="3", wait_s=0))
        assert detail(server, symptom)["part_of"] is None
        pages = wait_for(lambda: len(firing_pages(server)) == 2 and firing_pages(server))
        assert {p["incident_id"] for p in pages} == {cause, symptom}


def test_a_ticket_that_outlives_its_cause_joins_the_resolved_incident_a_page_does_not(tmp_path):
    """A rate over a 15-minute window outlives the fault, and Alertmanager delivers what the cause
    inhibited once it ends: a symptom that files a ticket, arriving minutes after its cause resolved,
    is that fault's aftermath (no ticket of its own); one that pages still pages."""
    with NotifierServer(make_settings(tmp_path, port=free_port())) as server:
        cause = post_alerts(server, lost())
        post_alerts(server, lost(status="resolved"))
        wait_for(lambda: detail(server, cause)["status"] == "resolved")
        ticket = job_xid(wait_s=0)
        for alert_ in ticket["alerts"]:
            alert_["labels"]["notify"] = "ticket"
        ticket["commonLabels"]["notify"] = "ticket"
        after = post_alerts(server, ticket)
        assert detail(server, after)["part_of"] == cause
        joined = next(e for e in detail(server, after)["timeline"] if e["kind"] == "joined")
        assert joined["detail"].get("aftermath") is True
        # a page-worthy symptom whose alert began after the repair is a new fault: it pages
        later = job_xid(gpu="3", wait_s=0, node="node-1") | {"groupKey": "other"}
        repaired = parse_time(detail(server, cause)["resolved_at"])  # as the notifier recorded it
        later["alerts"][0]["startsAt"] = rfc3339(repaired + 60)
        paging = post_alerts(server, later)
        assert detail(server, paging)["part_of"] is None


def test_a_page_whose_alert_began_while_its_cause_fired_joins_it_though_it_arrives_after_the_repair(tmp_path):
    """A GPU fewer than expected (GpuMissing, `for: 5m`) began when the GPU fell off the bus; a quick repair
    resolved the GPU's incident before Alertmanager sent the missing GPU's firing: the same fault, no page
    of its own (a drill in CI met exactly this)."""
    with NotifierServer(make_settings(tmp_path, port=free_port())) as server:
        cause = post_alerts(server, lost())
        wait_for(lambda: len(firing_pages(server)) == 1)
        post_alerts(server, lost(status="resolved"))
        wait_for(lambda: detail(server, cause)["status"] == "resolved")
        late = post_alerts(server, job_xid(wait_s=0) | {"groupKey": "late"})  # began 2026-11-21, long before
        assert detail(server, late)["part_of"] == cause
        joined = next(e for e in detail(server, late)["timeline"] if e["kind"] == "joined")
        assert joined["detail"].get("aftermath") is True
        assert {p["incident_id"] for p in firing_pages(server)} == {cause}


def test_the_generated_rules_carry_the_causes_the_notifier_reads():
    """The annotation on a shipped symptom is what the notifier decodes: JobGpuXid names the GPU lost."""
    rule_file = prometheus_rule_file(load_specs(sorted(SPECS_DIR.glob("*.yaml"))))
    rules = {rule["alert"]: rule for group in rule_file["groups"] for rule in group["rules"] if "alert" in rule}
    declared = symptoms.decode(rules["JobGpuXid"]["annotations"][symptoms.ANNOTATION])
    assert symptoms.Cause(LOST, ("node", "gpu")) in declared.causes
    assert declared.wait_s > 60  # the GPU lost waits a minute on its `for`: the XID is held longer
    # the GPU lost is itself a symptom of its node down (`inhibits: {"*": [node]}`), not held for it
    its_own = symptoms.decode(rules[LOST]["annotations"][symptoms.ANNOTATION])
    assert {c.alertname for c in its_own.causes} == {"GpuNodeDown", "NodeDown"} and its_own.wait_s == 0
    # a burst of application XIDs on a GPU a job holds is its owner's ticket (JobGpuXid), not a second one
    burst = symptoms.decode(rules["GpuApplicationXidSpike"]["annotations"][symptoms.ANNOTATION])
    assert symptoms.Cause("JobGpuXid", ("node", "gpu", "xid")) in burst.causes


def test_a_drill_fails_naming_an_incident_its_fault_opened_that_did_not_join(tmp_path):
    """`vigil drill`'s last check, against a real notifier: a joined symptom passes, another incident
    about the drilled node fails the drill with its name, one about another node is not the drill's."""
    with NotifierServer(make_settings(tmp_path, port=free_port())) as server:
        client = StackClient(prometheus="http://127.0.0.1:9", notifier=server.url, gpu_control=None, token=TOKEN)
        drill = Drill(client, shipped_fault_expectations()["xid79"], node="node-1", gpu=3)
        cause = post_alerts(server, lost())
        post_alerts(server, job_xid())  # joins the GPU lost
        post_alerts(server, lost(node="node-4", gpu="0"))  # another node: not this fault's
        drill._one_incident(cause, 0, time.monotonic())
        assert drill.results[-1].detail == f"#{cause}, joined by JobGpuXid"
        other = alert("temp-node-1", alertname="GpuTemperatureHigh", node="node-1", gpu="3", severity="warning")
        extra = post_alerts(server, payload(other, group_key='{}:{alertname="GpuTemperatureHigh"}'))
        with pytest.raises(DrillFailed, match=rf"1 more incident\(s\) besides #{cause}: #{extra} GpuTemperatureHigh"):
            drill._one_incident(cause, 0, time.monotonic())
        # the same alert already pending on that GPU before the injection (Prometheus' ALERTS then) is not
        # the fault's doing; the same alert on another GPU of the node was not under way, so it still counts
        drill.under_way = [{"alertname": "GpuTemperatureHigh", "node": "node-1", "gpu": "3"}]
        drill._one_incident(cause, 0, time.monotonic())
        drill.under_way = [{"alertname": "GpuTemperatureHigh", "node": "node-1", "gpu": "2"}]
        with pytest.raises(DrillFailed, match=rf"#{extra} GpuTemperatureHigh"):
            drill._one_incident(cause, 0, time.monotonic())


def test_a_symptom_joins_a_cause_group_of_several_gpus_through_the_alert_of_its_own_gpu(tmp_path):
    """The cause's group holds two GPUs, so its common labels lack `gpu`: the symptom is matched against
    each alert of the group's latest notification, and joins only through its own GPU's."""
    both = payload(alert("lost-1-3", alertname=LOST, node="node-1", gpu="3"),
                   alert("lost-1-4", alertname=LOST, node="node-1", gpu="4"),
                   group_key=f'{{}}:{{alertname="{LOST}", node="node-1"}}')
    with NotifierServer(make_settings(tmp_path, port=free_port())) as server:
        cause = post_alerts(server, both)
        assert "gpu" not in detail(server, cause)["labels"]
        assert detail(server, post_alerts(server, job_xid(gpu="4", wait_s=0)))["part_of"] == cause
        assert detail(server, post_alerts(server, job_xid(gpu="5", wait_s=0)))["part_of"] is None
