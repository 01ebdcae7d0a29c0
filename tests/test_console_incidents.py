"""The console's incident pages as an on-call engineer uses them: the list and its filters (and the
fragment the live refresh polls), an incident's alerts, labels, SLA clock, pages and timeline, the
buttons (acknowledge, note, escalate, resolve) acting as the logged-in user, refusals shown as such, and
a one-click link from a page in the inbox landing on the console's incident page."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

import pytest

from vigil.common.times import rfc3339
from vigil.notifier.links import page_links
from console_support import AUTH, HOOK, console_client, csrf_of, log_in
from sim_clock import SIM_NOW
from test_notifier_support import alert, payload, wait_for


@pytest.fixture
def user(client):
    """The console with alice logged in."""
    log_in(client)
    return client


def listed_ids(html: str) -> list[int]:
    return [int(found) for found in re.findall(r'<tr data-id="(\d+)"', html)]


def fire(client, group: str, **labels) -> int:
    starts = rfc3339(client.app.state.clock())  # the alert began now (an incident opens at its first alert)
    body = payload(alert(fingerprint=f"fp-{group}", starts=starts, **labels), group_key=f'{{}}:{{alertname="{group}"}}')
    assert client.post(HOOK, json=body, headers=AUTH).status_code == 200
    return client.get("/api/v1/incidents", headers=AUTH).json()["incidents"][-1]["id"]


def utc_day(t: float) -> date:
    return datetime.fromtimestamp(t, timezone.utc).date()


def test_the_list_filters_by_state_priority_team_node_and_time(user, clock):
    client = user
    old = fire(client, "a", node="gpu-node-01", severity="critical")
    clock.now = SIM_NOW + 5400  # 1.5 h later (the session is kept alive: idle for less than 2 h)
    warn = fire(client, "b", node="gpu-node-02", severity="warning")
    crit = fire(client, "c", node="gpu-node-12", severity="critical")
    page = client.get(f"/console/incidents/{crit}")
    client.post(f"/console/incidents/{crit}/ack", data={"csrf_token": csrf_of(page.text)})
    priorities = {i["id"]: i["priority"] for i in client.get("/api/v1/incidents", headers=AUTH).json()["incidents"]}
    assert priorities[old] == "P1" != priorities[warn]

    def shown(**query) -> list[int]:
        answer = client.get("/console/incidents", params=query)
        assert answer.status_code == 200
        return listed_ids(answer.text)
    assert shown() == [old, crit, warn]  # most urgent first: the P1s, the unacknowledged one first, then the P3
    assert shown(state="acknowledged") == [crit] and shown(state="triggered") == [old, warn]
    assert shown(state="open") == [old, crit, warn] and shown(state="resolved") == []
    assert shown(priority="P1") == [old, crit]
    assert shown(team="gpu") == [old, crit, warn] and shown(team="nobody") == []
    assert shown(node="node-0") == [old, warn] and shown(node="GPU-NODE-12") == [crit]
    assert shown(since="1h") == [crit, warn] and shown(since="3h") == [old, crit, warn]
    assert shown(node="node-0", since="1h", priority=priorities[warn]) == [warn]
    # days are UTC days: the first incident's and the last two's (the same day unless the now is late)
    first, last = utc_day(SIM_NOW), utc_day(SIM_NOW + 5400)
    assert shown(**{"from": first.isoformat(), "to": last.isoformat()}) == [old, crit, warn]
    assert shown(to=(first - timedelta(days=1)).isoformat()) == []
    assert shown(**{"from": (last + timedelta(days=1)).isoformat()}) == []
    assert shown(**{"from": last.isoformat()}) == ([crit, warn] if last != first else [old, crit, warn])
    bad = client.get("/console/incidents", params={"state": "sleeping", "since": "soon", "to": "tomorrow"})
    assert bad.status_code == 200 and "unknown state" in bad.text and "is not a duration" in bad.text
    assert "to: &#39;tomorrow&#39; is not a day" in bad.text
    assert listed_ids(bad.text) == [old, crit, warn]


def test_the_live_refresh_fragment_has_the_same_rows_and_sees_a_new_incident(user):
    client = user
    first = fire(client, "a")
    page = client.get("/console/incidents", params={"state": "open"})
    assert 'data-source="/console/incidents/rows?state=open"' in page.text and "/console/static/live.js" in page.text
    second = fire(client, "b")
    rows = client.get("/console/incidents/rows", params={"state": "open"})
    # two P1s, neither acknowledged: the one whose acknowledge target runs out first comes first
    assert rows.status_code == 200 and "<html" not in rows.text and listed_ids(rows.text) == [first, second]
    assert client.get("/console/static/live.js").status_code == 200


def test_the_incident_page_shows_alerts_labels_and_the_sla_clock(user, clock):
    client = user
    incident = fire(client, "a", node="gpu-node-07", gpu="3")
    clock.now = SIM_NOW + 120
    page = client.get(f"/console/incidents/{incident}")
    assert page.status_code == 200
    text = page.text
    assert "GpuLost" in text and "GPU fell off the bus" in text and "node=gpu-node-07" in text and "gpu=3" in text
    assert f'href="/console/incidents/{incident}/postmortem"' in text  # the postmortem button
    assert "Acknowledge by" in text and "3m left" in text and "Resolve by" in text and "58m left" in text
    clock.now = SIM_NOW + 400  # past the 5 min acknowledge target: the engine's check marks the breach
    from vigil.notifier.engine import sla
    sla.check(client.app.state.store, client.app.state.oncall, clock.now)
    later = client.get(f"/console/incidents/{incident}").text
    assert "breached by 1m" in later and "sla breach" in later
    assert client.get("/console/incidents/999").status_code == 404


def test_acknowledge_note_escalate_and_resolve_each_show_in_the_timeline_by_the_user(user, clock):
    client = user
    incident = fire(client, "a")
    token = csrf_of(client.get(f"/console/incidents/{incident}").text)
    steps = [("ack", {}, "acknowledged"), ("note", {"text": "drained <node> & rebooting"}, "noted"),
             ("escalate", {"confirm": "yes"}, "escalated"), ("resolve", {}, "resolved")]
    asked = client.post(f"/console/incidents/{incident}/escalate", data={"csrf_token": token})
    assert asked.status_code == 200 and "Page the next tier now" in asked.text and 'name="confirm" value="yes"' in asked.text
    assert "escalated" not in {e["kind"] for e in client.get(f"/api/v1/incidents/{incident}", headers=AUTH).json()["timeline"]}
    for n, (verb, form, done) in enumerate(steps, start=1):
        clock.now = SIM_NOW + 60 * n
        answer = client.post(f"/console/incidents/{incident}/{verb}", data={"csrf_token": token, **form})
        assert answer.status_code == 303 and answer.headers["location"] == f"/console/incidents/{incident}?done={done}"
    detail = client.get(f"/api/v1/incidents/{incident}", headers=AUTH).json()
    acted = [(e["kind"], e["actor"]) for e in detail["timeline"] if e["actor"] == "alice"]
    assert acted == [("acknowledged", "alice"), ("note", "alice"), ("escalated", "alice"), ("resolved", "alice")]
    page = client.get(f"/console/incidents/{incident}?done=resolved").text
    escalated = next(e for e in detail["timeline"] if e["kind"] == "escalated")["detail"]["to_tier"]
    assert f'<span class="muted">to tier {escalated + 1}</span>' in page  # tiers as people count them
    assert "drained &lt;node&gt; &amp; rebooting" in page  # escaped, not markup
    assert 'badge state-resolved' in page and "/ack\"" not in page  # no buttons left but the note
    refused = client.post(f"/console/incidents/{incident}/ack", data={"csrf_token": token})
    assert refused.status_code == 409 and "Nothing was done" in refused.text and "is resolved" in refused.text
    empty = client.post(f"/console/incidents/{incident}/note", data={"csrf_token": token, "text": "  "})
    assert empty.status_code == 409 and "needs some text" in empty.text


def test_the_timeline_says_in_words_who_was_paged_and_why_a_window_held_it(user, clock):
    client = user
    window = client.post("/api/v1/maintenance", headers=AUTH,
                         json={"match": {"node": "n7"}, "for": "2h", "reason": "firmware", "by": "bob"}).json()
    incident = fire(client, "held", node="n7")
    for minutes in (0, 6, 12):  # tier 1 due at once (its page held), then the pause instead of tier 2
        clock.now = SIM_NOW + 60 * minutes
        client.app.state.engine.run_once()
        while client.app.state.worker.run_once():
            pass
    page = client.get(f"/console/incidents/{incident}").text
    held = f"maintenance window {window['id']} (firmware)"
    assert f"page to alice via phone held: {held}" in page
    assert f"escalation paused at tier 1: {held} until" in page
    assert "tier=" not in page and "person=" not in page  # no paging event left as raw key=value
    assert "tier 2" not in page and "sla breach" not in page  # bob was not paged, nobody could be: no breach
    sla = page[page.index("SLA clock"):page.index("Facts")]
    assert f"paused: {held}" in sla and "left" not in sla.split("Resolve by")[0]  # the ack target waits for the window
    pages = page[page.index('id="pages"'):page.index("</table>", page.index('id="pages"'))]
    assert f'class="warn">held: maintenance window {window["id"]}<' in pages  # why, not the outbox's "muted"


def test_a_one_click_link_from_an_inbox_page_opens_the_incident_in_the_console(tmp_path, clock):
    with console_client(tmp_path, clock, run_worker=True) as client:
        incident = fire(client, "a")
        [page] = wait_for(lambda: client.get("/api/v1/inbox", headers=AUTH).json()["pages"])
        own = client.app.state.settings.own_url
        # a phone page is the short form: one line, its one link the compact acknowledge link
        [ack] = [word.removeprefix(own) for word in page["body"].split() if "/l/" in word]
        shown_ack = client.get(ack)  # not logged in: the incident, a button, and the way to the console
        assert shown_ack.status_code == 200 and "<form" in shown_ack.text
        assert f'href="/console/incidents/{incident}"' in shown_ack.text
        # the open link, as the same incident's IM or e-mail page carries it
        opened = page_links(client.app.state.settings, incident, clock.now)[2].removeprefix(own)
        anonymous = client.get(opened)  # not logged in: the read-only page, which points to the console
        assert anonymous.status_code == 200 and f'href="/console/incidents/{incident}"' in anonymous.text
        followed = client.get(f"/console/incidents/{incident}")
        assert followed.status_code == 303 and "next=%2Fconsole%2Fincidents%2F" in followed.headers["location"]
        log_in(client, next=f"/console/incidents/{incident}")
        answer = client.get(opened)
        assert answer.status_code == 303 and answer.headers["location"] == f"/console/incidents/{incident}"
        shown = client.get(answer.headers["location"])
        assert shown.status_code == 200 and f"#{incident}" in shown.text and "Pages sent" in shown.text
        assert re.search(r"<td>alice</td><td>phone</td>", shown.text) and 'class="ok">sent' in shown.text


def test_a_teams_template_folder_replaces_a_page_and_keeps_the_others(tmp_path, clock):
    overrides = tmp_path / "templates"
    overrides.mkdir()
    (overrides / "incidents_rows.html").write_text(
        '{% for i in incidents %}<tr data-id="{{ i.id }}"><td>ours: {{ i.title }}</td></tr>{% endfor %}')
    with console_client(tmp_path, clock, console_templates=overrides) as client:
        log_in(client)
        incident = fire(client, "a")
        page = client.get("/console/incidents")
        assert f'<tr data-id="{incident}"><td>ours: GpuLost' in page.text and "Opened within" in page.text
        assert "Timeline" in client.get(f"/console/incidents/{incident}").text  # the shipped incident page


def test_the_pages_load_nothing_from_elsewhere(user):
    client = user
    incident = fire(client, "a")
    for path in ("/console/incidents", f"/console/incidents/{incident}", "/console/login"):
        page = client.get(path)
        targets = re.findall(r'(?:src|href|action)="([^"]*)"', page.text)
        assert targets and all(t.startswith("/") and not t.startswith("//") for t in targets), (path, targets)
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"
    for asset in re.findall(r'(?:src|href)="(/console/static/[^"]+)"', client.get("/console/incidents").text):
        body = client.get(asset)
        assert body.status_code == 200 and "http://" not in body.text and "https://" not in body.text


def test_the_incident_page_knows_when_someone_else_changed_the_incident(user):
    client = user
    incident = fire(client, "a")
    page = client.get(f"/console/incidents/{incident}").text
    current = re.search(r'data-current="([^"]+)"', page).group(1)
    assert f'data-version="/console/incidents/{incident}/version"' in page and "/console/static/live.js" in page
    assert client.get(f"/console/incidents/{incident}/version").text == current
    client.post(f"/api/v1/incidents/{incident}/ack", json={"by": "bob"}, headers=AUTH)  # bob, elsewhere
    changed = client.get(f"/console/incidents/{incident}/version").text
    assert changed != current and changed.startswith("acknowledged:")
    assert client.get("/console/incidents/999/version").status_code == 404


def test_a_page_is_marked_noisy_or_not_actionable_from_the_incident_page_as_the_user(user, clock):
    client = user
    incident = fire(client, "chatty")
    page = client.get(f"/console/incidents/{incident}").text
    assert f'action="/console/incidents/{incident}/mark"' in page and 'value="not_actionable"' in page
    token = csrf_of(page)
    answer = client.post(f"/console/incidents/{incident}/mark", data={"csrf_token": token, "verdict": "not_actionable"})
    assert answer.status_code == 303 and answer.headers["location"] == f"/console/incidents/{incident}?done=marked"
    marks = [(e["actor"], e["detail"]["verdict"]) for e in
             client.get(f"/api/v1/incidents/{incident}", headers=AUTH).json()["timeline"] if e["kind"] == "marked"]
    assert marks == [("alice", "not_actionable")]
    assert "not actionable" in client.get(f"/console/incidents/{incident}?done=marked").text
    bogus = client.post(f"/console/incidents/{incident}/mark", data={"csrf_token": token, "verdict": "meh"})
    assert bogus.status_code == 409 and "a verdict is one of" in bogus.text
    no_token = client.post(f"/console/incidents/{incident}/mark", data={"verdict": "noisy"})
    assert no_token.status_code == 403


def test_incident_times_show_in_the_viewers_zone_and_say_which(user):
    """No zone picked: the viewer's own from the on-call file (UTC here); picked on the on-call pages
    (the cookie): that zone, on every page, its name said on the page and beside each time."""
    client = user
    incident = fire(client, "a")
    page = client.get(f"/console/incidents/{incident}").text
    assert "Times in UTC" in page and re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", page)
    client.cookies.set("vigil_console_tz", "Asia/Kolkata", path="/console")
    page = client.get(f"/console/incidents/{incident}").text
    assert "Times in Asia/Kolkata" in page and re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d IST", page)
    assert " UTC" not in page.replace("Times in UTC", "")


@pytest.mark.parametrize("opened_at, starts", [
    (-62135596800.0, "0001-01-01T00:00:00Z"),  # Alertmanager's zero time as a start, which 0.1 stored
    (253402300799.999, "9999-12-31T23:59:59.999999999Z"),  # the last nanosecond of year 9999
])
def test_every_reader_survives_a_row_an_older_version_stored(user, opened_at, starts):
    """Times the webhook refuses now (422) but an older version stored: the list, the incident, its
    postmortem and the API still answer, none with a 500, for everyone."""
    import sqlalchemy as sa
    from vigil.notifier.schema import incidents, notifications

    client = user
    incident = fire(client, "a")
    engine = client.app.state.store.engine
    with engine.begin() as conn:
        conn.execute(incidents.update().where(incidents.c.id == incident).values(opened_at=opened_at))
        stored = conn.execute(sa.select(notifications.c.id, notifications.c.payload)).all()
        began = rfc3339(client.app.state.clock())
        assert stored and all(began in row.payload for row in stored)
        for row in stored:
            conn.execute(notifications.update().where(notifications.c.id == row.id).values(
                payload=row.payload.replace(began, starts)))
    for path in ("/console/incidents", f"/console/incidents/{incident}", f"/console/incidents/{incident}/postmortem",
                 f"/console/incidents/{incident}/postmortem?format=md"):
        assert client.get(path).status_code == 200, path
    assert client.get(f"/api/v1/incidents/{incident}", headers=AUTH).status_code == 200
    assert client.get("/api/v1/incidents", headers=AUTH).status_code == 200


def test_a_console_form_is_validated_as_the_api_validates_its_body(user):
    """A note longer than the API takes is refused whole, not cut; a NUL (which PostgreSQL cannot store)
    is refused with the reason: nothing is saved either way."""
    client = user
    incident = fire(client, "a")
    token = csrf_of(client.get(f"/console/incidents/{incident}").text)
    long = client.post(f"/console/incidents/{incident}/note", data={"csrf_token": token, "text": "x" * 10_001})
    assert long.status_code == 409 and "at most 10,000 characters; this one has 10,001" in long.text
    nul = client.post(f"/console/incidents/{incident}/note", data={"csrf_token": token, "text": "a\x00b"})
    assert nul.status_code == 422 and "NUL" in nul.text and "Nothing was saved" in nul.text
    api = client.post(f"/api/v1/incidents/{incident}/notes", json={"by": "a", "text": "x" * 10_001}, headers=AUTH)
    assert api.status_code == 422
    kinds = [e["kind"] for e in client.get(f"/api/v1/incidents/{incident}", headers=AUTH).json()["timeline"]]
    assert "note" not in kinds
