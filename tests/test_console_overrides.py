"""Schedule overrides from the console: Carol takes Dong's shift on gpu-primary ("take"), with a reason;
from then on the schedule says so with who made it, when and why, a page in the span goes to Carol,
and her calendar feed holds the shift. Cancelling gives the shift back. A bad override answers 422 with
every reason and keeps what was typed."""

from __future__ import annotations

import re

import icalendar
import pytest

from console_support import csrf_of, log_in
from test_console_oncall_support import CAROL_PASSWORD, at, client_at
from test_notifier_support import AUTH, alert, payload

HOOK = "/api/v1/alerts/alertmanager"


@pytest.fixture
def carol(tmp_path):
    # Friday 27 November 10:00 Berlin: week of the 23rd, Dong's week of the weekly rota
    with client_at(tmp_path, at("2026-11-27T10:00")) as client:
        assert log_in(client, "carol", CAROL_PASSWORD).status_code == 303
        yield client


def on_call_now(client) -> list[str]:
    teams = client.get("/api/v1/oncall", headers=AUTH).json()["teams"]
    gpu = next(team for team in teams if team["team"] == "gpu")
    return gpu["tiers"][0]["people"]


def take_link(client) -> str:
    page = client.get("/console/schedules", params={"schedule": "gpu-primary", "tz": ""}).text
    links = re.findall(r'href="(/console/schedules/gpu-primary/override\?mode=take[^"]+)"', page)
    assert links, "no 'take' link on Dong's shift"
    return links[0].replace("&amp;", "&")


def test_taking_a_shift_pages_the_taker_shows_why_and_is_in_her_calendar(carol):
    assert on_call_now(carol) == ["dong"]
    form = carol.get(take_link(carol))
    assert form.status_code == 200 and "Take this shift" in form.text and "instead of Dong Wei" in form.text
    fields = dict(re.findall(r'<input name="(from|to)" value="([^"]*)"', form.text))
    assert fields["from"] == "2026-11-27T10:00"  # from now: the part of the shift not gone yet
    made = carol.post("/console/schedules/gpu-primary/overrides", data={
        "csrf_token": csrf_of(form.text), "mode": "take", "replaces": "dong", "person": "carol",
        "from": "2026-11-27T10:00", "to": "2026-11-27T20:00", "reason": "Dong is at the dentist"})
    assert made.status_code == 303 and made.headers["location"].endswith("done=override")

    assert on_call_now(carol) == ["carol"]
    page = carol.get(made.headers["location"]).text
    assert "Override saved" in page and "Made in the console" in page
    history = re.search(r'<ul class="overrides history">(.*?)</ul>', page, re.S).group(1)
    assert "Carol Diaz" in history and "instead of Dong Wei" in history and "Dong is at the dentist" in history
    assert "by Carol Diaz" in history and "Cancel" in history
    assert "cover me" in page  # her own shift now offers "cover me"

    # a page in the span goes to her
    assert carol.post(HOOK, json=payload(alert(team="gpu")), headers=AUTH).status_code == 200
    incident = carol.get("/api/v1/incidents", headers=AUTH).json()["incidents"][-1]
    pages = carol.get(f"/api/v1/incidents/{incident['id']}", headers=AUTH).json()["pages"]
    assert {p["person"] for p in pages} == {"carol"}

    # ... and her calendar feed holds the shift
    feed = carol.get("/api/v1/people/carol.ics", headers=AUTH,
                     params={"from": "2026-11-27T00:00Z", "to": "2026-11-28T00:00Z"})
    events = [e for e in icalendar.Calendar.from_ical(feed.content).walk("VEVENT")]
    spans = [(e["DTSTART"].dt.isoformat(), e["DTEND"].dt.isoformat()) for e in events]
    assert ("2026-11-27T09:00:00+00:00", "2026-11-27T19:00:00+00:00") in spans

    # cancelled: Dong is back, the history keeps it struck through with who cancelled it
    override_id = re.search(r"/overrides/(\d+)/cancel", page).group(1)
    elsewhere = carol.post(f"/console/schedules/platform-days/overrides/{override_id}/cancel",
                           data={"csrf_token": csrf_of(page)})
    assert elsewhere.status_code == 404  # another schedule's override: left alone, as its history says
    assert "cancelled by" not in carol.get("/console/schedules", params={"schedule": "gpu-primary", "tz": ""}).text
    cancelled = carol.post(f"/console/schedules/gpu-primary/overrides/{override_id}/cancel",
                           data={"csrf_token": csrf_of(page)})
    assert cancelled.status_code == 303
    assert on_call_now(carol) == ["dong"]
    after = carol.get(cancelled.headers["location"]).text
    assert "Override cancelled" in after and "cancelled by Carol Diaz" in after


def test_a_bad_override_names_every_mistake_and_keeps_what_was_typed(carol):
    form = carol.get(take_link(carol))
    answer = carol.post("/console/schedules/gpu-primary/overrides", data={
        "csrf_token": csrf_of(form.text), "mode": "take", "person": "zed", "from": "2026-11-27T18:00",
        "to": "2026-11-27T12:00", "reason": ""})
    assert answer.status_code == 422
    problems = re.findall(r'<p class="notice bad" role="alert">([^<]*)</p>', answer.text)
    assert problems == ["who: &#39;zed&#39; is not a person of the on-call file",
                        "to: the override ends before it starts",
                        "why: say why (the schedule&#39;s history shows it, and the person covering sees it)"]
    assert 'value="2026-11-27T18:00"' in answer.text  # kept
    past = carol.post("/console/schedules/gpu-primary/overrides", data={
        "csrf_token": csrf_of(form.text), "person": "carol", "from": "2026-11-20T10:00", "to": "2026-11-21T10:00",
        "reason": "late"})
    assert past.status_code == 422 and "would be over already" in past.text
    assert carol.post("/console/schedules/gpu-primary/overrides", data={
        "person": "carol", "from": "2026-11-27T10:00", "to": "2026-11-27T12:00", "reason": "x"}).status_code == 403
    assert carol.get("/console/schedules/nope/override").status_code == 404
    assert on_call_now(carol) == ["dong"]  # nothing was stored
