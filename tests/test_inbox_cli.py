"""`vigil inbox` with its filters, as a user runs it against a real notifier found through the run
directory (as in tests/test_incidents_cli.py): pages to two people, one incident two hours old."""

from __future__ import annotations

import json
import time

import pytest
import requests
from click.testing import CliRunner

from test_notifier_support import AUTH, NotifierServer, alert, free_port, make_settings, payload, run_dir_for, wait_for
from vigil.cli import main
from vigil.common.times import rfc3339
from vigil.stack.client import StackClient

ONCALL = """
people:
  alice: {contacts: {phone: {inbox: true, kind: phone}}}
  bob: {contacts: {phone: {inbox: true, kind: phone}}}
teams:
  gpu: {policy: gpu, members: [alice]}
  storage: {policy: storage, members: [bob]}
policies:
  gpu: {tiers: [{notify: [{person: alice}], escalate_after: 30m}]}
  storage: {tiers: [{notify: [{person: bob}], escalate_after: 30m}]}
routes:
  - match: {team: storage}
    policy: storage
default_policy: gpu
"""
TWO_HOURS = 7200.0


@pytest.fixture(scope="module")
def inbox(tmp_path_factory):
    """A notifier whose inbox holds: incident 1 to alice two hours ago (firing, then resolved), then
    incident 2 to bob and incident 3 to alice now. Yields (run dir, {name: incident id})."""
    tmp = tmp_path_factory.mktemp("inbox")
    offset = [-TWO_HOURS]  # the notifier's clock: pages arrive at its time
    with NotifierServer(make_settings(tmp, port=free_port()), ONCALL, clock=lambda: time.time() + offset[0]) as server, \
            run_dir_for(server, tmp / "run") as run_dir:
        old = post(server, alert("old", node="node-1"), "old")
        wait_for(lambda: len(pages(server)) == 1)
        post(server, alert("old", status="resolved", node="node-1"), "old")
        wait_for(lambda: len(pages(server)) == 2)
        offset[0] = 0.0
        disk = post(server, alert("disk", alertname="DiskFailing", node="node-2", team="storage"), "disk")
        wait_for(lambda: len(pages(server)) == 3)  # one at a time: the inbox lists pages in arrival order
        gpu = post(server, alert("gpu", node="node-3"), "gpu")
        wait_for(lambda: len(pages(server)) == 4)
        yield run_dir, {"old": old, "disk": disk, "gpu": gpu}


def post(server, one_alert: dict, group: str) -> int:
    answer = requests.post(server.url + "/api/v1/alerts/alertmanager", json=payload(one_alert, group_key=f"g-{group}"),
                           headers=AUTH, timeout=5)
    answer.raise_for_status()
    return answer.json()["incident_id"]


def pages(server) -> list[dict]:
    return requests.get(server.url + "/api/v1/inbox", headers=AUTH, timeout=5).json()["pages"]


def vigil_inbox(run_dir, *args: str):
    result = CliRunner().invoke(main, ["inbox", *args, "--run-dir", str(run_dir)])
    assert "Traceback" not in result.output
    return result


def listed(run_dir, *args: str) -> list[tuple[int, str, str]]:
    """(incident, status, recipient) of each page `vigil inbox ARGS --json` lists, in its order."""
    result = vigil_inbox(run_dir, *args, "--json")
    assert result.exit_code == 0, result.output
    return [(p["incident_id"], p["status"], p["recipient"]) for p in json.loads(result.output)["pages"]]


def test_without_filters_every_page_is_listed_oldest_first(inbox):
    run_dir, ids = inbox
    assert listed(run_dir) == [(ids["old"], "firing", "alice"), (ids["old"], "resolved", "alice"),
                               (ids["disk"], "firing", "bob"), (ids["gpu"], "firing", "alice")]


def test_each_filter_keeps_only_its_pages_and_together_all_must_hold(inbox):
    run_dir, ids = inbox
    assert listed(run_dir, "--to", "bob") == [(ids["disk"], "firing", "bob")]
    assert listed(run_dir, "--to", "alice", "--status", "firing") == [(ids["old"], "firing", "alice"),
                                                                       (ids["gpu"], "firing", "alice")]
    assert listed(run_dir, "--status", "resolved") == [(ids["old"], "resolved", "alice")]
    assert [i for i, _, _ in listed(run_dir, "--incident", str(ids["old"]))] == [ids["old"], ids["old"]]
    assert [i for i, _, _ in listed(run_dir, "--incident", str(ids["old"]), "--incident", str(ids["disk"]))] == \
        [ids["old"], ids["old"], ids["disk"]]
    assert listed(run_dir, "--to", "alice", "--to", "bob", "--incident", str(ids["disk"])) == [(ids["disk"], "firing", "bob")]


def test_since_keeps_the_pages_that_arrived_within_that_long(inbox):
    run_dir, ids = inbox
    assert [i for i, _, _ in listed(run_dir, "--since", "1h")] == [ids["disk"], ids["gpu"]]
    assert [i for i, _, _ in listed(run_dir, "--since", "3h")] == [ids["old"], ids["old"], ids["disk"], ids["gpu"]]
    assert listed(run_dir, "--since", "1h", "--to", "alice") == [(ids["gpu"], "firing", "alice")]


def test_limit_keeps_the_newest_after_the_filters(inbox):
    run_dir, ids = inbox
    assert listed(run_dir, "--limit", "1") == [(ids["gpu"], "firing", "alice")]
    assert listed(run_dir, "--to", "alice", "--limit", "2") == [(ids["old"], "resolved", "alice"),
                                                                 (ids["gpu"], "firing", "alice")]


def test_the_listing_shows_only_the_chosen_pages_and_says_when_none_match(inbox):
    run_dir, ids = inbox
    shown = vigil_inbox(run_dir, "--to", "bob")
    assert shown.exit_code == 0
    assert f"#{ids['disk']}  FIRING    to bob via phone (tier 1)" in shown.output
    page = json.loads(vigil_inbox(run_dir, "--to", "bob", "--json").output)["pages"][0]
    arrived = page["time"][:19].replace("T", " ")  # as incidents show prints times, not RFC 3339's T and Z
    assert shown.output.startswith(f"{arrived}  #{ids['disk']}  FIRING"), shown.output
    assert "to alice" not in shown.output
    none = vigil_inbox(run_dir, "--to", "carol")
    assert (none.exit_code, none.output) == (0, "no page in the inbox matches these filters\n")
    assert json.loads(vigil_inbox(run_dir, "--to", "carol", "--json").output) == {"pages": []}


@pytest.mark.parametrize("args, message", [
    (("--since", "soon"), "'soon' is not a duration"),
    (("--since", "0"), "must be above zero"),
    (("--limit", "0"), "--limit"),
    (("--incident", "x"), "'x' is not an incident number (1 or more)"),
    (("--incident", "0"), "'0' is not an incident number (1 or more)"),
    (("--incident", str(2**63)), f"'{2**63}' is too large for incident numbers (at most {2**63 - 1})"),
    (("--status", "open"), "'open' is not one of 'firing', 'resolved'"),
], ids=["since-word", "since-zero", "limit-zero", "incident-word", "incident-zero", "incident-too-large",
        "status-unknown"])
def test_a_bad_filter_is_a_usage_error_naming_it(inbox, args, message):
    result = vigil_inbox(inbox[0], *args)
    assert result.exit_code == 2 and message in result.output, result.output


@pytest.mark.parametrize("query, names", [
    ({"incident": "0"}, "incident"), ({"incident": "x"}, "incident"), ({"incident": str(2**63)}, "incident"),
    ({"status": "maybe"}, "status"), ({"since": "yesterday"}, "since"), ({"since": "2026-11-24T10:00:00"}, "since"),
])
def test_the_inbox_route_refuses_a_bad_filter_with_a_422_naming_it(inbox, query, names):
    run_dir, _ = inbox
    client = StackClient.from_run_dir(run_dir)
    answer = requests.get(client.notifier + "/api/v1/inbox", params=query, headers=AUTH, timeout=5)
    assert answer.status_code == 422 and names in answer.json()["error"], answer.text


def test_the_inbox_route_filters_before_it_counts_the_limit(inbox):
    run_dir, ids = inbox
    client = StackClient.from_run_dir(run_dir)
    since = rfc3339(time.time() - 600)
    assert [(p["incident_id"], p["status"]) for p in client.pages(limit=1, to=["alice"], status="firing")] == \
        [(ids["gpu"], "firing")]
    assert [p["incident_id"] for p in client.pages(limit=5, incident=[ids["old"], ids["disk"]], since=since)] == \
        [ids["disk"]]  # the old incident's pages are two hours old
