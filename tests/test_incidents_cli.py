"""`vigil incidents …` and `vigil maintenance …` as a user runs them against a running notifier, found
through the run directory the way `vigil inbox` finds it (a run dir whose supervisor holds its lock)."""

from __future__ import annotations

import json

import pytest
import requests
from click.testing import CliRunner

from vigil.cli import main
from test_notifier_support import (AUTH, NotifierServer, alert, free_port, make_settings, payload, run_dir_for,
                                   wait_for)

ONCALL = """
people:
  alice:
    contacts:
      phone: {inbox: true, kind: phone}
teams:
  gpu: {policy: main, members: [alice]}
policies:
  main:
    tiers:
      - {notify: [{person: alice}], escalate_after: 5m}
default_policy: main
"""


@pytest.fixture
def stack(tmp_path):
    """A notifier served for real, and a run directory that points at it, as `vigil up` leaves one."""
    with NotifierServer(make_settings(tmp_path, port=free_port()), ONCALL) as server, \
            run_dir_for(server, tmp_path / "run"):
        yield server


def vigil(stack, *args: str):
    result = CliRunner().invoke(main, [*args, "--run-dir", str(stack.run_dir)],
                                env={"USER": "tester", "LOGNAME": "tester"})
    assert "Traceback" not in result.output
    return result


def page_alice(stack, fingerprint="a", node="node-1") -> int:
    body = payload(alert(fingerprint, node=node), group_key=f"g-{fingerprint}")
    answer = requests.post(stack.url + "/api/v1/alerts/alertmanager", json=body, headers=AUTH, timeout=5)
    answer.raise_for_status()
    return answer.json()["incident_id"]


def test_list_show_ack_note_resolve(stack):
    incident = page_alice(stack)
    listed = vigil(stack, "incidents", "list")
    assert listed.exit_code == 0, listed.output
    assert f"#{incident}" in listed.output and "triggered" in listed.output and "GpuLost" in listed.output
    assert [i["id"] for i in json.loads(vigil(stack, "incidents", "list", "--json").output)["incidents"]] == [incident]
    assert vigil(stack, "incidents", "list", "--state", "resolved").output == "no incidents\n"

    acked = vigil(stack, "incidents", "ack", str(incident))
    assert acked.exit_code == 0 and f"#{incident} acknowledged by tester: now acknowledged" in acked.output
    again = vigil(stack, "incidents", "ack", str(incident), "--by", "bob")
    assert again.exit_code == 1 and "already acknowledged by tester" in again.output
    assert vigil(stack, "incidents", "note", str(incident), "reseated the GPU", "--by", "alice").exit_code == 0
    resolved = vigil(stack, "incidents", "resolve", str(incident), "--by", "alice")
    assert resolved.exit_code == 0 and "now resolved" in resolved.output
    refused = vigil(stack, "incidents", "escalate", str(incident))
    assert refused.exit_code == 1 and "is resolved: nothing to escalate" in refused.output

    shown = vigil(stack, "incidents", "show", str(incident))
    assert shown.exit_code == 0
    lines = shown.output.splitlines()
    assert lines[0].startswith(f"#{incident} GpuLost") and "state resolved, priority P1, team gpu" in lines[1]
    timeline = lines[lines.index("timeline:") + 1:]
    assert any("acknowledged" in line and "tester" in line for line in timeline)
    assert any(" note " in line and "alice" in line and line.endswith("reseated the GPU") for line in timeline)
    assert any("resolved" in line and "alice" in line for line in timeline)
    # every event in words: the routing, and the title the incident opened with, not their key=value
    [routed] = [line for line in timeline if " routed " in line]
    assert routed.endswith("policy main, priority P1, team gpu"), routed
    [opened] = [line for line in timeline if " opened " in line]
    assert opened.endswith(lines[0].split(" ", 1)[1]) and "title=" not in opened, opened
    detail = json.loads(vigil(stack, "incidents", "show", str(incident), "--json").output)
    assert detail["resolved_by"] == "alice"

    # a resolved incident's page is judged afterwards: marked, in words on the timeline
    marked = vigil(stack, "incidents", "mark", str(incident), "--not-actionable", "--reason", "a PDU test", "--by", "bob")
    assert marked.exit_code == 0 and f"#{incident}: marked not actionable by bob" in marked.output
    assert vigil(stack, "incidents", "mark", str(incident), "--by", "bob").output.strip().endswith("marked noisy by bob")
    timeline = vigil(stack, "incidents", "show", str(incident)).output.splitlines()
    marks = [line for line in timeline if " marked " in line]
    assert marks[0].endswith("not actionable: a PDU test") and marks[1].endswith("noisy") and "bob" in marks[1]
    withdrawn = vigil(stack, "incidents", "mark", str(incident), "--actionable", "--by", "alice")
    assert withdrawn.exit_code == 0 and "marked actionable by alice" in withdrawn.output


def test_a_resolved_incident_is_reopened_by_hand_and_pages_again(stack):
    incident = page_alice(stack, "r")
    wait_for(lambda: len(pages_of(stack, incident)) == 1)
    assert vigil(stack, "incidents", "resolve", str(incident)).exit_code == 0
    refused = vigil(stack, "incidents", "ack", str(incident))
    assert refused.exit_code == 1 and f"reopen it first: vigil incidents reopen {incident}" in refused.output
    reopened = vigil(stack, "incidents", "reopen", str(incident), "--by", "alice")
    assert reopened.exit_code == 0 and f"#{incident} reopened by alice: now triggered" in reopened.output, reopened.output
    # unacknowledged again, from the first tier: alice is paged anew
    wait_for(lambda: [p["status"] for p in pages_of(stack, incident)].count("firing") == 2)
    detail = json.loads(vigil(stack, "incidents", "show", str(incident), "--json").output)
    assert any(e["kind"] == "reopened" and e["actor"] == "alice" for e in detail["timeline"])
    again = vigil(stack, "incidents", "reopen", str(incident))
    assert again.exit_code == 1 and "is not resolved: nothing to reopen" in again.output


def pages_of(stack, incident: int) -> list[dict]:
    return json.loads(vigil(stack, "incidents", "show", str(incident), "--json").output)["pages"]


def test_show_reads_each_page_attempt(stack):
    incident = page_alice(stack)
    wait_for(lambda: any(e["kind"] == "page_attempt" for e in
                         requests.get(f"{stack.url}/api/v1/incidents/{incident}", headers=AUTH, timeout=5).json()["timeline"]))
    shown = vigil(stack, "incidents", "show", str(incident)).output
    assert "firing page to alice via phone, attempt 1: sent" in shown
    assert "firing page to alice via phone (tier 1)" in shown and "tier 1: alice" in shown
    [page] = requests.get(f"{stack.url}/api/v1/inbox", headers=AUTH, timeout=5).json()["pages"]
    assert page["recipient"] == "alice" and page["channel"] == "phone"  # an inbox contact shows as its kind


def test_unknown_incidents_and_bad_arguments_are_one_line_errors(stack):
    missing = vigil(stack, "incidents", "show", "999")
    assert missing.exit_code == 1 and "Error: no incident 999" in missing.output
    assert vigil(stack, "incidents", "ack", "0").exit_code == 2
    word = vigil(stack, "incidents", "show", "abc")
    assert word.exit_code == 2 and "'abc' is not an incident number (1 or more)" in word.output
    postmortem = vigil(stack, "postmortem", "abc")
    assert postmortem.exit_code == 2 and "'abc' is not an incident number (1 or more)" in postmortem.output
    huge = vigil(stack, "incidents", "show", str(2**63))  # a stopped stack's SQLite would raise OverflowError
    assert huge.exit_code == 2 and "too large for incident numbers" in huge.output and "Traceback" not in huge.output
    window = vigil(stack, "maintenance", "end", "first")
    assert window.exit_code == 2 and "'first' is not a maintenance window number" in window.output
    assert vigil(stack, "incidents", "list", "--priority", "P9").exit_code == 2


def test_a_refused_argument_is_the_notifiers_reason_without_json(stack):
    long_name = "x" * 201  # click takes any --by; the notifier's actor names stop at 200 characters
    refused = vigil(stack, "incidents", "ack", "1", "--by", long_name)
    assert refused.exit_code == 1 and len(refused.output.splitlines()) == 1, refused.output
    assert refused.output.startswith("Error: ") and "200" in refused.output
    assert "{" not in refused.output and "detail" not in refused.output


def test_no_running_stack_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(main, ["incidents", "list", "--run-dir", str(tmp_path)])
    assert result.exit_code == 1 and "no vigil stack is running" in result.output


def test_maintenance_add_list_end(stack):
    added = vigil(stack, "maintenance", "add", "--match", "node=node-7", "--match", "alertname=GpuLost", "--for", "2h",
                  "--reason", "firmware")
    assert added.exit_code == 0, added.output
    assert added.output.startswith("maintenance window #1: ") and "(active now)" in added.output
    planned = vigil(stack, "maintenance", "add", "--match", "rack=r1", "--from", "2100-01-01T00:00",
                    "--until", "2100-01-01T04:00Z")
    assert planned.exit_code == 0 and "2100-01-01 00:00:00 → 2100-01-01 04:00:00 UTC (not begun)" in planned.output
    listed = vigil(stack, "maintenance", "list").output.splitlines()
    assert len(listed) == 2 and "ACTIVE" in listed[0] and "alertname=GpuLost node=node-7" in listed[0]
    assert "by tester: firmware" in listed[0]
    assert len(json.loads(vigil(stack, "maintenance", "list", "--json").output)["windows"]) == 2

    held = page_alice(stack, "b", node="node-7")
    wait_for(lambda: any(e["kind"] == "page_held" for e in
                         requests.get(f"{stack.url}/api/v1/incidents/{held}", headers=AUTH, timeout=5).json()["timeline"]))
    assert "held: maintenance window 1 (firmware)" in vigil(stack, "incidents", "show", str(held)).output

    ended = vigil(stack, "maintenance", "end", "1")
    assert ended.exit_code == 0 and "maintenance window #1 ended at" in ended.output
    over = vigil(stack, "maintenance", "end", "1")
    assert over.exit_code == 1 and "over already" in over.output
    assert len(vigil(stack, "maintenance", "list").output.splitlines()) == 1
    assert len(vigil(stack, "maintenance", "list", "--all").output.splitlines()) == 2


@pytest.mark.parametrize("args, message", [
    (["--match", "node=node-7"], "exactly one of --for DURATION and --until TIME"),
    (["--match", "node=node-7", "--for", "1h", "--until", "2100-01-01T00:00Z"], "exactly one of"),
    (["--match", "node", "--for", "1h"], "'node' is not LABEL=VALUE"),
    (["--match", "node=n", "--for", "soon"], "'soon' is not a duration"),
    (["--match", "node=n", "--until", "tomorrow"], "'tomorrow' is not a time"),
    (["--match", "node=n", "--until", "2001-01-01T00:00Z"], "`ends_at` is in the past"),
])
def test_bad_windows_are_refused_without_a_traceback(stack, args, message):
    result = vigil(stack, "maintenance", "add", *args)
    assert result.exit_code != 0 and message in result.output


def test_the_acknowledge_link_in_a_page_works_from_a_phone(stack):
    incident = page_alice(stack)
    [page] = wait_for(lambda: requests.get(f"{stack.url}/api/v1/inbox", headers=AUTH, timeout=5).json()["pages"])
    # a phone page is the short form: one line, its one link the compact acknowledge link
    [ack_url] = [word for word in page["body"].split() if "/l/" in word]
    assert ack_url.startswith(stack.url + "/l/") and len(page["body"]) <= 160
    assert "Acknowledge incident" in requests.get(ack_url, timeout=5).text  # no token: the link is the credential
    assert requests.post(ack_url, timeout=5).status_code == 200
    listed = vigil(stack, "incidents", "list").output
    assert f"#{incident}" in listed and "acknowledged by alice" in listed  # the person the page went to
    assert requests.post(ack_url, timeout=5).status_code == 409
