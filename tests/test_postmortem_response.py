"""The postmortem's Response section read the way its reader reads it: each fact a list item of its own,
the time to acknowledge taken from what happened, the tiers named as people count them, and each
page's fate in accurate words."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest
import requests
from click.testing import CliRunner
from markdown_it import MarkdownIt

from vigil.common.times import parse_time
from vigil.cli import main
from vigil.notifier.postmortem import render_postmortem
from vigil.notifier.postmortem.render import duration
from test_notifier_support import AUTH, NotifierServer, alert, free_port, make_settings, payload, run_dir_for, wait_for

LIST_LABELS = ("Duration", "Affected nodes", "Affected GPUs", "Affected jobs", "First alert", "Incident opened",
               "First visible sign in the metrics", "Time to detect", "Paged", "Time to acknowledge",
               "Time to resolve", "Escalations", "SLA", "Pages delivered late or failed")


def test_every_list_item_of_the_markdown_is_a_line_of_its_own(seeded):  # noqa: F811
    text = render_postmortem(seeded["detail"], seeded["others"], "md", now=seeded["now"])[0].decode()
    lines = text.splitlines()
    for label in LIST_LABELS:
        starting = [line for line in lines if line.startswith(f"- {label}: ") or line.startswith(f"- {label} (")]
        assert len(starting) == 1, (label, starting)
    # no item glued onto the end of another: `…: 16m- Escalations: …`
    assert not [line for line in lines if re.search(r"\S- [A-Z][A-Za-z ]+: ", line)]
    tokens = MarkdownIt("commonmark").parse(text)
    items = [tokens[i + 2].content for i, t in enumerate(tokens) if t.type == "list_item_open"]
    response = items[items.index(next(i for i in items if i.startswith("Paged: "))):][:6]
    assert [item.split(":")[0] for item in response] == ["Paged", "Time to acknowledge", "Time to resolve",
                                                         "Escalations", "SLA", "Pages delivered late or failed"]
    assert "Time to resolve: 16m" in response[2] and "escalated to tier 2 by carol" in response[3]


THREE_TIERS = """
people:
  alice: {contacts: {phone: {inbox: true, kind: phone}}}
  bob: {contacts: {phone: {inbox: true, kind: phone}}}
  carol: {contacts: {phone: {inbox: true, kind: phone}}}
teams:
  gpu: {policy: main, members: [alice, bob, carol]}
policies:
  main:
    tiers:
      - {notify: [{person: alice}], escalate_after: 30m}
      - {notify: [{person: bob}], escalate_after: 30m}
      - {notify: [{person: carol}], escalate_after: 30m}
    repeat: until_acknowledged
default_policy: main
"""


@pytest.fixture
def stack(tmp_path):
    """A notifier served for real (its escalation engine and delivery worker running) and a run
    directory pointing at it, as `vigil up` leaves one: the CLI finds it through `--run-dir`."""
    with NotifierServer(make_settings(tmp_path, port=free_port()), THREE_TIERS) as server, \
            run_dir_for(server, tmp_path / "run"):
        yield server


def vigil(stack, *args: str) -> str:
    result = CliRunner().invoke(main, [*args, "--run-dir", str(stack.run_dir)], env={"USER": "tester"})
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    return result.output


def timeline(stack, incident: int) -> list[dict]:
    return requests.get(f"{stack.url}/api/v1/incidents/{incident}", headers=AUTH, timeout=5).json()["timeline"]


def tiers_paged(stack, incident: int, count: int) -> list[tuple[int, int]]:
    """(tier, round) of the incident's `tier_paged` events, once there are `count` of them."""
    def paged():
        found = [(e["detail"]["tier"], e["detail"]["round"]) for e in timeline(stack, incident) if e["kind"] == "tier_paged"]
        return found if len(found) >= count else None
    return wait_for(paged)


def open_incident(stack) -> int:
    starts = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    answer = requests.post(stack.url + "/api/v1/alerts/alertmanager", json=payload(alert("pm", starts=starts)),
                           headers=AUTH, timeout=5)
    answer.raise_for_status()
    incident = answer.json()["incident_id"]
    tiers_paged(stack, incident, 1)
    return incident


def response_items(markdown: str) -> dict[str, str]:
    return {line[2:].split(": ", 1)[0]: line[2:].split(": ", 1)[1] for line in markdown.splitlines()
            if line.startswith("- ") and ": " in line}


def test_time_to_acknowledge_survives_an_escalation(stack):
    incident = open_incident(stack)
    vigil(stack, "incidents", "ack", str(incident))
    vigil(stack, "incidents", "escalate", str(incident))
    assert tiers_paged(stack, incident, 2)[-1] == (1, 0)
    detail = requests.get(f"{stack.url}/api/v1/incidents/{incident}", headers=AUTH, timeout=5).json()
    assert detail["acknowledged_at"] is None  # the escalation handed the acknowledgement on
    ack_at = next(e["at"] for e in detail["timeline"] if e["kind"] == "acknowledged")
    took = duration(parse_time(ack_at) - parse_time(detail["opened_at"]))
    markdown = vigil(stack, "postmortem", str(incident))
    assert response_items(markdown)["Time to acknowledge"] == f"{took} (by tester)"
    assert f"acknowledged by tester after {took}" in markdown  # the summary says the same


def test_escalations_name_the_tier_paged_and_when_the_policy_starts_again(stack):
    incident = open_incident(stack)
    for count in (2, 3, 4):  # tier 2, tier 3, then past the last tier: tier 1 of the next round
        if count == 4:  # acknowledged at the last tier: the escalation asks for the tier after it (to_tier=3)
            vigil(stack, "incidents", "ack", str(incident))
        vigil(stack, "incidents", "escalate", str(incident))
        tiers_paged(stack, incident, count)
    asked = [e["detail"]["to_tier"] for e in timeline(stack, incident) if e["kind"] == "escalated"]
    assert asked == [1, 2, 3]  # what the reviewer saw: an index past the 3-tier policy's last tier
    assert tiers_paged(stack, incident, 4) == [(0, 0), (1, 0), (2, 0), (0, 1)]
    markdown = vigil(stack, "postmortem", str(incident))
    escalations = response_items(markdown)["Escalations"]
    assert "tier 4" not in markdown, escalations
    said = [part.split(" ", 1)[1] for part in escalations.split("; ")]
    assert said == ["escalated to tier 2 by tester", "tier 2 paged: bob",
                    "escalated to tier 3 by tester", "tier 3 paged: carol",
                    "escalated to tier 1 by tester (the policy repeated from the first tier: round 2)",
                    "tier 1 paged: alice (the policy repeated from the first tier: round 2)"]
    rows = [line for line in markdown.splitlines() if line.startswith("| ") and "| escalated |" in line]
    timeline_says = ["escalated to tier 2", "escalated to tier 3",
                     "escalated to tier 1 (the policy repeated from the first tier: round 2)"]
    assert [row.rstrip(" |").split(" | ")[3] for row in rows] == timeline_says
    shown = vigil(stack, "incidents", "show", str(incident)).splitlines()  # the CLI's timeline says the same
    assert [line.split("tester", 1)[1].strip() for line in shown if line.split()[2:3] == ["escalated"]] == timeline_says


CALL_THEN_SMS = """
people:
  ana:
    contacts:
      phone: {inbox: true, kind: phone}
      sms: {inbox: true, kind: sms}
    notify:
      - steps: [{contact: phone}, {contact: sms, after: 10s}]
teams:
  gpu: {policy: main, members: [ana]}
policies:
  main:
    tiers:
      - {notify: [{person: ana}], escalate_after: 30m}
default_policy: main
"""


def page_table(markdown: str) -> list[tuple[str, str, str]]:
    """(page status, channel, result) of each row of the postmortem's page table."""
    rows = [line.strip("| ").split(" | ") for line in markdown.splitlines() if line.startswith("| firing |")
            or line.startswith("| resolved |")]
    return [(row[0], row[2], row[7]) for row in rows]


def test_pages_not_sent_say_why(tmp_path):
    with NotifierServer(make_settings(tmp_path, port=free_port()), CALL_THEN_SMS) as stack, \
            run_dir_for(stack, tmp_path / "run"):
        # ana is called, acknowledges before her SMS is due, and resolves: neither SMS goes out
        acked = open_incident(stack)
        pages = lambda: requests.get(f"{stack.url}/api/v1/incidents/{acked}", headers=AUTH, timeout=5).json()["pages"]
        # the call has gone out (acknowledged before, on a loaded machine, it would be muted too), the SMS waits
        wait_for(lambda: [p["state"] for p in pages()] == ["sent", "pending"])
        vigil(stack, "incidents", "ack", str(acked))
        wait_for(lambda: [p["state"] for p in pages()] == ["sent", "muted"], timeout=40)
        vigil(stack, "incidents", "resolve", str(acked))
        wait_for(lambda: [p["state"] for p in pages()] == ["sent", "muted", "sent", "muted"], timeout=40)
        markdown = vigil(stack, "postmortem", str(acked))
        assert page_table(markdown) == [
            ("firing", "phone (phone)", "sent"), ("firing", "sms (sms)", "not sent: acknowledged"),
            ("resolved", "phone (phone)", "sent"), ("resolved", "sms (sms)", "not sent: firing page never reached it")]
        queued = [line.rstrip(" |").split(" | ")[3] for line in markdown.splitlines() if "| page_queued |" in line]
        assert queued == ["firing page to ana via phone (tier 1)",
                          "firing page to ana via sms (tier 1), due in 10 s; not sent: acknowledged",
                          "resolved page to ana via phone (tier 1)",
                          "resolved page to ana via sms (tier 1); not sent: firing page never reached it"]

        # a maintenance window holds every page of an incident on its node
        vigil(stack, "maintenance", "add", "--match", "node=node-7", "--for", "1h", "--reason", "firmware")
        answer = requests.post(stack.url + "/api/v1/alerts/alertmanager", headers=AUTH, timeout=5,
                               json=payload(alert("held", node="node-7"), group_key="g-held"))
        held = answer.json()["incident_id"]
        wait_for(lambda: any(e["kind"] == "page_held" for e in timeline(stack, held)))
        assert ("firing", "phone (phone)", "held: maintenance window 1") in page_table(vigil(stack, "postmortem", str(held)))
