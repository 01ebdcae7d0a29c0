"""iCal: a schedule's and a person's shifts as calendars, and overrides imported from an .ics file."""

from __future__ import annotations

from datetime import datetime, timezone

import icalendar
import pytest

from vigil.oncall.ical import (
    OverridesIcsError,
    overrides_from_ics,
    person_calendar,
    resolve_overrides_ics,
    schedule_calendar,
)
from vigil.oncall.loader import parse_oncall
from vigil.oncall.schedules import on_call

CONFIG = """
timezone: UTC
people:
  alice: {name: Alice Chen, email: alice@example.com, contacts: {phone: {inbox: true, kind: phone}}}
  bob: {name: Bob Stone, contacts: {phone: {inbox: true, kind: phone}}}
  carol: {contacts: {phone: {inbox: true, kind: phone}}}
schedules:
  primary:
    layers:
      - {rotation: weekly, handoff: "2026-11-02T09:00", people: [alice, bob]}
  secondary:
    layers:
      - {rotation: weekly, handoff: "2026-11-02T09:00", people: [carol, alice]}
"""


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def events(data: bytes) -> list[icalendar.Event]:
    return list(icalendar.Calendar.from_ical(data).walk("VEVENT"))


def test_schedule_calendar_has_one_event_per_shift_with_stable_uids():
    config = parse_oncall(CONFIG, "oncall.yaml")
    data = schedule_calendar(config, "primary", utc("2026-11-02T09:00"), utc("2026-11-23T09:00"))
    found = events(data)
    assert [str(event["SUMMARY"]) for event in found] == [
        "On call: Alice Chen (primary)", "On call: Bob Stone (primary)", "On call: Alice Chen (primary)"]
    assert found[0]["DTSTART"].dt == datetime(2026, 11, 2, 9, tzinfo=timezone.utc)
    assert found[0]["DTEND"].dt == datetime(2026, 11, 9, 9, tzinfo=timezone.utc)
    assert str(found[0]["ATTENDEE"]) == "mailto:alice@example.com"
    again = schedule_calendar(config, "primary", utc("2026-11-02T09:00"), utc("2026-11-23T09:00"), stamp=utc("2026-12-01T00:00"))
    assert [str(e["UID"]) for e in events(again)] == [str(e["UID"]) for e in found]
    assert len({str(e["UID"]) for e in found}) == 3


def test_person_calendar_lists_their_shifts_in_every_schedule():
    config = parse_oncall(CONFIG, "oncall.yaml")
    found = events(person_calendar(config, "alice", utc("2026-11-02T09:00"), utc("2026-11-16T09:00")))
    assert [(str(e["SUMMARY"]), e["DTSTART"].dt.day) for e in found] == [
        ("On call: Alice Chen (primary)", 2), ("On call: Alice Chen (secondary)", 9)]


def ics(*events_: dict) -> bytes:
    calendar = icalendar.Calendar()
    calendar.add("prodid", "-//test//EN")
    calendar.add("version", "2.0")
    for fields in events_:
        event = icalendar.Event()
        for key, value in fields.items():
            event.add(key, value)
        calendar.add_component(event)
    return calendar.to_ical()


def test_overrides_map_events_to_people_by_attendee_or_summary():
    config = parse_oncall(CONFIG, "oncall.yaml")
    data = ics(
        {"uid": "a", "summary": "swap", "attendee": "mailto:ALICE@example.com",
         "dtstart": datetime(2026, 11, 10, 0, tzinfo=timezone.utc), "dtend": datetime(2026, 11, 11, tzinfo=timezone.utc)},
        {"uid": "b", "summary": "Bob Stone", "dtstart": datetime(2026, 11, 3, 12), "dtend": datetime(2026, 11, 3, 18)},
        {"uid": "c", "summary": "carol", "dtstart": datetime(2026, 11, 4).date(), "dtend": datetime(2026, 11, 5).date()},
    )
    found = overrides_from_ics(data, config.people)
    assert [(o.person, o.start.isoformat(), o.end.isoformat()) for o in found] == [
        ("bob", "2026-11-03T12:00:00", "2026-11-03T18:00:00"),
        ("carol", "2026-11-04T00:00:00", "2026-11-05T00:00:00"),
        ("alice", "2026-11-10T00:00:00+00:00", "2026-11-11T00:00:00+00:00"),
    ]


def test_events_that_match_nobody_are_all_reported_by_uid_and_summary():
    config = parse_oncall(CONFIG, "oncall.yaml")
    data = ics(
        {"uid": "x-1", "summary": "Mallory", "dtstart": datetime(2026, 11, 3, 12), "dtend": datetime(2026, 11, 3, 18)},
        {"uid": "ok", "summary": "carol", "dtstart": datetime(2026, 11, 4, 12), "dtend": datetime(2026, 11, 4, 18)},
        {"uid": "x-2", "summary": "holiday", "attendee": "mailto:eve@example.com",
         "dtstart": datetime(2026, 11, 5, 12), "dtend": datetime(2026, 11, 5, 18)},
    )
    with pytest.raises(OverridesIcsError) as caught:
        overrides_from_ics(data, config.people)
    assert len(caught.value.problems) == 2
    assert "event UID 'x-1' summary 'Mallory': matches no person" in caught.value.problems[0]
    assert "event UID 'x-2' summary 'holiday': matches no person" in caught.value.problems[1]
    with pytest.raises(OverridesIcsError, match="not a valid iCalendar file"):
        overrides_from_ics(b"hello", config.people)


def test_overrides_ics_is_read_relative_to_the_oncall_file(tmp_path):
    (tmp_path / "overrides").mkdir()
    (tmp_path / "overrides" / "primary.ics").write_bytes(ics(
        {"uid": "cover", "summary": "carol", "dtstart": datetime(2026, 11, 3, 0), "dtend": datetime(2026, 11, 4, 0)}))
    config = parse_oncall(CONFIG.replace(
        'people: [alice, bob]}', 'people: [alice, bob]}\n    overrides_ics: overrides/primary.ics'), "oncall.yaml")
    assert on_call(config, "primary", utc("2026-11-03T12:00")) == ["alice"]
    resolved = resolve_overrides_ics(config, tmp_path)
    assert on_call(resolved, "primary", utc("2026-11-03T12:00")) == ["carol"]
    with pytest.raises(OverridesIcsError, match="schedules.primary.overrides_ics: .*missing.ics: cannot read"):
        resolve_overrides_ics(config.model_copy(update={"schedules": {
            "primary": config.schedules["primary"].model_copy(update={"overrides_ics": "missing.ics"})}}), tmp_path)


def test_the_notifier_serves_who_is_on_call_and_the_calendars(tmp_path):
    from fastapi.testclient import TestClient

    from test_notifier_support import AUTH, make_settings
    from vigil.notifier.app import create_app

    text = CONFIG + """teams:
  ops: {timezone: Asia/Shanghai, policy: ops}
policies:
  ops:
    tiers:
      - {name: DRI, notify: [{schedule: primary}]}
      - {notify: [{schedule: secondary}, {person: carol}]}
"""
    now = utc("2026-11-10T00:00")
    app = create_app(make_settings(tmp_path), parse_oncall(text, "oncall.yaml"), run_worker=False, clock=lambda: now)
    with TestClient(app) as client:
        who = client.get("/api/v1/oncall", headers=AUTH).json()
        assert who == {"teams": [{"team": "ops", "policy": "ops", "at": now, "tiers": [
            {"index": 0, "name": "DRI", "people": ["bob"]},
            {"index": 1, "name": "tier 2", "people": ["alice", "carol"]}]}]}
        # a local time is in the team's zone: 2026-11-02T18:00 in Shanghai is 10:00 UTC, alice's week
        earlier = client.get("/api/v1/oncall", params={"team": "ops", "at": "2026-11-02T18:00"}, headers=AUTH).json()
        assert earlier["teams"][0]["tiers"][0]["people"] == ["alice"]
        calendar = client.get("/api/v1/schedules/primary.ics", params={"from": "2026-11-02T09:00Z",
                              "to": "2026-11-16T09:00Z"}, headers=AUTH)
        assert calendar.status_code == 200 and calendar.headers["content-type"].startswith("text/calendar")
        assert [str(e["SUMMARY"]) for e in events(calendar.content)] == [
            "On call: Alice Chen (primary)", "On call: Bob Stone (primary)"]
        mine = client.get("/api/v1/people/alice.ics", headers=AUTH)  # default: a week back, eight ahead
        assert {str(e["SUMMARY"]) for e in events(mine.content)} == {
            "On call: Alice Chen (primary)", "On call: Alice Chen (secondary)"}
        refusals = [
            (client.get("/api/v1/schedules/nope.ics", headers=AUTH), 404, "unknown schedule 'nope'"),
            (client.get("/api/v1/people/nope.ics", headers=AUTH), 404, "unknown person 'nope'"),
            (client.get("/api/v1/oncall", params={"team": "nope"}, headers=AUTH), 404, "unknown team 'nope'"),
            (client.get("/api/v1/oncall", params={"at": "1e309"}, headers=AUTH), 422, "is not a time"),
            (client.get("/api/v1/schedules/primary.ics", params={"from": "2026-01-01T00:00Z", "to": "2028-01-01T00:00Z"},
                        headers=AUTH), 422, "at most 367 days"),
            (client.get("/api/v1/schedules/primary.ics"), 401, ""),
        ]
        for response, status, reason in refusals:
            assert response.status_code == status and reason in response.text, response.text


def test_loading_the_file_applies_its_overrides_ics_as_the_notifier_does(tmp_path):
    """`load_oncall` (what `vigil notifier serve` and `vigil up` read) imports the overrides; a broken
    `.ics` is a mistake of the on-call file at the line of its `overrides_ics:` key."""
    from vigil.oncall.loader import OncallConfigError, load_oncall

    (tmp_path / "cover.ics").write_bytes(ics(
        {"uid": "cover", "summary": "carol", "dtstart": datetime(2026, 11, 3, 0), "dtend": datetime(2026, 11, 4, 0)}))
    path = tmp_path / "oncall.yaml"
    path.write_text(CONFIG.replace('people: [alice, bob]}', 'people: [alice, bob]}\n    overrides_ics: cover.ics', 1))
    assert on_call(load_oncall(path), "primary", utc("2026-11-03T12:00")) == ["carol"]
    (tmp_path / "cover.ics").write_bytes(ics(
        {"uid": "who", "summary": "Mallory", "dtstart": datetime(2026, 11, 3, 0), "dtend": datetime(2026, 11, 4, 0)}))
    with pytest.raises(OncallConfigError) as caught:
        load_oncall(path)
    [problem] = caught.value.problems
    assert problem.startswith(f"{path}:11: schedules.primary.overrides_ics: {tmp_path / 'cover.ics'}: "
                              "event UID 'who' summary 'Mallory': matches no person")
