"""Postmortems from a seeded store with a fixed clock (no Prometheus): the facts sections (times,
people, channels, SLA, escalations, related incidents), the Markdown as a Markdown parser reads it, and
a team's own templates."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from vigil.common.times import parse_time
from vigil.notifier.postmortem import TemplateProblem, render_postmortem
from vigil.notifier.postmortem.analysis import analyse
from vigil.notifier.postmortem.facts import incident_facts
from vigil.notifier.postmortem.history import GpuHistory, Job
from vigil.notifier.postmortem.render import when
from postmortem_support import rfc
from sim_clock import SIM_NOW

T0 = SIM_NOW


def test_the_facts_say_when_who_and_how(seeded):
    facts = incident_facts(seeded["detail"], seeded["others"], seeded["now"])
    assert facts.opened_at == T0 - 60 and facts.received_at == T0 and facts.resolved_at == T0 + 900
    assert facts.first_alert["name"] == "GpuLost" and facts.first_alert["at"] == T0 - 60
    assert (facts.time_to_acknowledge_s, facts.time_to_resolve_s) == (260, 960)
    assert facts.time_to_detect_s is None  # no metrics: unknown, never guessed
    assert facts.nodes == ["node-1"] and facts.gpus == [dict(node="node-1", gpu="0", uuid="GPU-node-1-0")]
    assert facts.jobs == ["job-7"]
    assert facts.incident["acknowledged_by"] == "bob" and facts.sla == {"ack": "met", "resolve": "met"}
    assert facts.escalations == [dict(at=T0 + 120, text="escalated to tier 2 by carol")]
    assert facts.paged == []  # no delivery worker here: alice's page is queued, not sent (the e2e test sends)
    kinds = [e["kind"] for e in facts.timeline]
    assert kinds[0] == "opened" and {"escalated", "acknowledged", "resolved"} <= set(kinds)
    related = {r["id"]: r["shares"] for r in facts.related}
    ids = seeded["ids"]
    assert related == {ids["recent"]: "GPU 0 of node-1", ids["other_gpu"]: "node node-1"}


def test_late_and_failed_pages_are_called_out(seeded):
    detail = dict(seeded["detail"])
    detail["pages"] = [
        dict(person="alice", contact="phone", kind="phone", tier=0, status="firing", state="sent",
             created_at=rfc(T0), sent_at=rfc(T0 + 2), attempts=[dict(at=rfc(T0 + 2), ok=True, error=None)]),
        dict(person="bob", contact="pager", kind="pager", tier=1, status="firing", state="sent",
             created_at=rfc(T0), sent_at=rfc(T0 + 95), attempts=[dict(at=rfc(T0 + 95), ok=True, error=None)]),
        dict(person="carol", contact="sms", kind="sms", tier=1, status="firing", state="failed", created_at=rfc(T0),
             sent_at=None, attempts=[dict(at=rfc(T0 + 1), ok=False, error="HTTP 503"),
                                     dict(at=rfc(T0 + 3), ok=False, error="HTTP 502")])]
    facts = incident_facts(detail, [], seeded["now"])
    assert [(p.person, p.late, p.result, p.delay_s) for p in facts.troubled_pages] == [
        ("bob", True, "sent", 95.0), ("carol", False, "failed", None)]
    text = render_postmortem(detail, [], "md", now=seeded["now"])[0].decode()
    assert "bob via pager sent after 1m35s" in text and "carol via sms failed, 2 attempt(s): HTTP 502" in text


def test_the_markdown_renders_with_the_sre_sections_and_tables(seeded):
    body, content_type = render_postmortem(seeded["detail"], seeded["others"], "md", now=seeded["now"])
    assert content_type.startswith("text/markdown")
    tokens = MarkdownIt("commonmark").enable("table").parse(body.decode())
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings[0].startswith("Postmortem: ")
    assert {"Summary", "Impact", "Root causes", "Trigger", "Detection", "Response", "Timeline (UTC)",
            "Metrics around the incident", "Related incidents (same node or GPU, last 30 days)", "Lessons learned",
            "Action items"} <= set(headings)
    tables = [i for i, t in enumerate(tokens) if t.type == "table_open"]
    assert len(tables) == 6  # header, jobs, pages, timeline, action items, every event
    cells = [t.content for t in tokens if t.type == "inline"]
    assert when(T0 + 200) in cells  # the acknowledgement on the timeline
    text = body.decode()
    assert "acknowledged by bob after 4m20s, resolved after 16m" in text
    assert "Time to detect: unknown" in text and "SLA: acknowledge met, resolve met" in text


def test_a_team_overrides_a_template_or_one_block(seeded, tmp_path):
    (tmp_path / "postmortem.md.j2").write_text(
        '{% extends "base/postmortem.md.j2" %}{% block summary %}## Summary\n\nOurs: {{ f.title }}\n{% endblock %}')
    text = render_postmortem(seeded["detail"], [], "md", now=seeded["now"], templates=tmp_path)[0].decode()
    assert "Ours: " in text and "## Detection" in text and "acknowledged by bob after" not in text
    (tmp_path / "postmortem.html.j2").write_text("<p>{{ f.incident.id }} {{ f.title }}</p>")
    html = render_postmortem(seeded["detail"], [], "html", now=seeded["now"], templates=tmp_path)[0].decode()
    assert html.startswith(f"<p>{seeded['ids']['main']} ")


def test_a_broken_team_template_is_named_with_its_line(seeded, tmp_path):
    (tmp_path / "postmortem.md.j2").write_text("# {{ f.title }}\n\n{% if %}\n")
    with pytest.raises(TemplateProblem, match=r"postmortem\.md\.j2:3: "):
        render_postmortem(seeded["detail"], [], "md", now=seeded["now"], templates=tmp_path)
    (tmp_path / "postmortem.md.j2").write_text("{{ f.no_such_fact }}")
    with pytest.raises(TemplateProblem, match="no_such_fact"):
        render_postmortem(seeded["detail"], [], "md", now=seeded["now"], templates=tmp_path)


def test_times_parse_from_the_api_and_alertmanager():
    T0 = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC, the instant the strings below name
    assert parse_time("2027-01-15T08:00:00.000Z") == T0
    assert parse_time("2027-01-15T08:00:00.123456789Z") == pytest.approx(T0 + 0.123456)
    assert parse_time("0001-01-01T00:00:00Z") is None and parse_time(None) is None
    # an Alertmanager on a host that is not on UTC writes its offset: the same moment
    assert parse_time("2027-01-15T09:00:00.000+01:00") == T0
    assert parse_time("2027-01-15T03:00:00.123456789-05:00") == pytest.approx(T0 + 0.123456)


def test_an_open_incident_without_alerts_says_what_is_unknown():
    """A heartbeat's incident: no alerts, no pages yet, still open; nothing is guessed."""
    heartbeat = dict(id=9, title="Heartbeat watchdog silent", opened_at=rfc(T0), resolved_at=None, status="firing",
                     state="triggered", priority="P2", team="platform", acknowledged_at=None, acknowledged_by=None,
                     resolved_by=None, labels={"alertname": "HeartbeatMissing", "heartbeat": "watchdog"}, alerts=[],
                     timeline=[], pages=[], sla={"ack": "pending", "resolve": "pending"})
    text = render_postmortem(heartbeat, [], "md", now=T0 + 600)[0].decode()
    for line in ("- Duration: 10m (from the incident's opening to now, still open)", "- Affected nodes: none named",
                 "- Time to detect: unknown", "- Time to acknowledge: not acknowledged",
                 "- Time to resolve: not resolved yet", "- Paged: nobody", "- SLA: acknowledge pending, resolve pending"):
        assert line in text, line


def test_the_timeline_is_told_in_words_and_the_plumbing_goes_to_the_appendix(seeded):
    text = render_postmortem(seeded["detail"], seeded["others"], "md", now=seeded["now"])[0].decode()
    story = text.split("## Timeline (UTC)")[1].split("## Metrics")[0]
    rows = [row for row in story.splitlines() if row.startswith("| 20")]
    assert [row.rstrip(" |").split(" | ")[2].split(":")[0] for row in rows] == [
        "incident opened", "routed", "paged", "escalated to tier 2", "acknowledged", "resolved"]
    assert "page_queued" not in story and "alice by phone" in rows[2]  # the page folded into the tier's row
    appendix = text.split("## Appendix: every event (UTC)")[1]
    assert appendix.count("| page_queued |") == 2


def test_impact_factors_lessons_and_action_items_are_drafted_from_what_vigil_knows(seeded):
    """A GPU off the bus (XID 79) under an 8-GPU job of llm/ana, on a GPU whose history shows precursors
    and that failed earlier this month: the draft names the GPU-hours, the XID's repair, the history and
    the suggested actions; what vigil cannot know stays to fill in."""
    detail = dict(seeded["detail"])
    labels = {**detail["labels"], "alertname": "GpuFallenOffBus", "action": "reboot_node"}
    detail["labels"] = labels
    detail["alerts"] = [{**a, "labels": {**a["labels"], "alertname": "GpuFallenOffBus"}} for a in detail["alerts"]]
    facts = incident_facts(detail, seeded["others"], seeded["now"])
    history = GpuHistory("node-1", "0", xids={"92": 3}, ecc={"corrected": 1200}, remap_pending=True, risk=0.02,
                         risk_threshold=0.05)
    drafted = analyse(facts, [Job("job-7", "llm/ana", 8)], [history])
    assert drafted.jobs == [dict(job_id="job-7", owner="llm/ana", gpus=8, down_s=960, gpu_hours=2.1333)]
    assert drafted.gpu_hours_lost == 2.1333  # 8 GPUs for 16 minutes
    assert drafted.summary == "GpuFallenOffBus on GPU 0 of node-1, stopping job job-7 of llm/ana (8 GPUs), 2.13 GPU-hours lost"
    assert drafted.factors[0].startswith("XID 79 (") and "reboot" in drafted.factors[0]
    assert drafted.factors[1] == ("GPU 0 of node-1 in the 30 days before: XID 92 ×3, corrected ECC errors ×1200, "
                                  "a row remap pending.")
    assert "2.00%" in drafted.factors[2] and "below it, no warning" in drafted.factors[2]
    assert "The acknowledgement SLA was met." in drafted.went_well
    assert any(line.startswith("It escalated 1 time(s)") for line in drafted.went_badly)
    kinds = [(item["type"], item["what"].split(":")[0].split(" from")[0]) for item in drafted.actions]
    assert kinds == [("mitigate", "Repair node-1 GPU 0"), ("mitigate", "Resubmit job job-7"),
                     ("prevent", "Precursors showed in the GPU's history but nothing warned"),
                     ("prevent", "The GPU failed 2 times this month"),
                     ("process", "Review the on-call schedule and contacts")]
    assert drafted.actions[1]["owner"] == "llm/ana"
