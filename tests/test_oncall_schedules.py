"""Schedules: rotations, layers, restrictions and overrides give the shifts a user expects."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from vigil.oncall.loader import OncallConfigError, parse_oncall
from vigil.oncall.schedules import UnknownSchedule, on_call, shifts

BERLIN = ZoneInfo("Europe/Berlin")
PEOPLE = """
people:
  alice: {name: Alice Chen, email: alice@example.com, contacts: {phone: {inbox: true, kind: phone}}}
  bob: {name: Bob, contacts: {phone: {inbox: true, kind: phone}}}
  carol: {contacts: {phone: {inbox: true, kind: phone}}}
  dave: {contacts: {phone: {inbox: true, kind: phone}}}
"""


def config(schedules: str, zone: str = "Europe/Berlin"):
    return parse_oncall(f"timezone: {zone}\n{PEOPLE}schedules:\n{schedules}", "oncall.yaml")


def at(text: str, zone: ZoneInfo = BERLIN) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=zone).timestamp()


def table(found, zone: ZoneInfo = BERLIN) -> list[tuple[str, str, str]]:
    def local(ts: float) -> str:
        return datetime.fromtimestamp(ts, zone).strftime("%Y-%m-%dT%H:%M")
    return [(shift.person, local(shift.start), local(shift.end)) for shift in found]


def test_weekly_rotation_hands_off_at_handoff_time_in_rotation_order():
    cfg = config("""
  primary:
    layers:
      - {name: rota, rotation: weekly, handoff: "2026-11-02T09:00", people: [alice, bob, carol]}
""")
    found = shifts(cfg, "primary", at("2026-11-02T09:00"), at("2026-11-30T09:00"))
    assert table(found) == [
        ("alice", "2026-11-02T09:00", "2026-11-09T09:00"),
        ("bob", "2026-11-09T09:00", "2026-11-16T09:00"),
        ("carol", "2026-11-16T09:00", "2026-11-23T09:00"),
        ("alice", "2026-11-23T09:00", "2026-11-30T09:00"),
    ]
    assert {shift.source for shift in found} == {"rota"}
    # the layer starts at its handoff: nobody before it
    assert on_call(cfg, "primary", at("2026-11-02T08:59")) == []
    assert shifts(cfg, "primary", at("2026-10-01T00:00"), at("2026-11-02T10:00"))[0].start == at("2026-11-02T09:00")
    assert on_call(cfg, "primary", at("2026-11-28T03:00")) == ["alice"]


def test_daily_handoff_keeps_local_time_across_the_october_dst_change():
    cfg = config("""
  primary:
    layers:
      - {rotation: daily, handoff: "2026-10-23T09:00", people: [alice, bob]}
""")
    found = shifts(cfg, "primary", at("2026-10-24T09:00"), at("2026-10-27T09:00"))
    # Berlin leaves summer time at 03:00 on Sunday 25 October 2026: bob's shift lasts 25 hours
    assert table(found) == [
        ("bob", "2026-10-24T09:00", "2026-10-25T09:00"),
        ("alice", "2026-10-25T09:00", "2026-10-26T09:00"),
        ("bob", "2026-10-26T09:00", "2026-10-27T09:00"),
    ]
    assert [shift.end - shift.start for shift in found] == [25 * 3600, 24 * 3600, 24 * 3600]


def test_weekly_and_monthly_handoffs_hold_across_dst():
    cfg = config("""
  weekly:
    layers:
      - {rotation: weekly, handoff: "2026-10-19T09:00", people: [alice, bob]}
  monthly:
    layers:
      - {rotation: monthly, handoff: "2026-01-31T10:00", people: [alice, bob, carol]}
""")
    weekly = shifts(cfg, "weekly", at("2026-10-19T09:00"), at("2026-11-02T09:00"))
    assert table(weekly) == [("alice", "2026-10-19T09:00", "2026-10-26T09:00"),
                             ("bob", "2026-10-26T09:00", "2026-11-02T09:00")]
    monthly = shifts(cfg, "monthly", at("2026-02-01T00:00"), at("2026-05-01T00:00"))
    # the 31st is the last day in shorter months; 10:00 local in winter and summer time
    assert table(monthly) == [
        ("alice", "2026-02-01T00:00", "2026-02-28T10:00"),
        ("bob", "2026-02-28T10:00", "2026-03-31T10:00"),
        ("carol", "2026-03-31T10:00", "2026-04-30T10:00"),
        ("alice", "2026-04-30T10:00", "2026-05-01T00:00"),
    ]


def test_custom_shifts_last_exact_hours():
    cfg = config("""
  twelve:
    layers:
      - {rotation: custom, shift: 12h, handoff: "2026-10-24T20:00", people: [alice, bob]}
""")
    found = shifts(cfg, "twelve", at("2026-10-24T20:00"), at("2026-10-26T07:00"))
    # 12 real hours: after the clocks go back, the handoffs fall at 07:00/19:00 local
    assert table(found) == [
        ("alice", "2026-10-24T20:00", "2026-10-25T07:00"),
        ("bob", "2026-10-25T07:00", "2026-10-25T19:00"),
        ("alice", "2026-10-25T19:00", "2026-10-26T07:00"),
    ]
    assert all(shift.end - shift.start == 12 * 3600 for shift in found[1:])


def test_a_later_layer_wins_where_it_has_a_shift_and_restrictions_limit_it():
    cfg = config("""
  primary:
    timezone: Asia/Shanghai
    layers:
      - {name: nights, rotation: weekly, handoff: "2026-11-02T09:00", people: [alice, bob]}
      - name: office
        rotation: daily
        handoff: "2026-11-02T09:00"
        people: [carol, dave]
        restrict: {days: [mon, tue, wed, thu, fri], start: "09:00", end: "18:00"}
""")
    shanghai = ZoneInfo("Asia/Shanghai")
    found = shifts(cfg, "primary", at("2026-11-06T00:00", shanghai), at("2026-11-10T00:00", shanghai))
    assert table(found, shanghai) == [
        ("alice", "2026-11-06T00:00", "2026-11-06T09:00"),
        ("carol", "2026-11-06T09:00", "2026-11-06T18:00"),  # Friday
        ("alice", "2026-11-06T18:00", "2026-11-09T09:00"),  # weekend: the restricted layer is silent
        ("dave", "2026-11-09T09:00", "2026-11-09T18:00"),   # Monday: an odd number of days later
        ("bob", "2026-11-09T18:00", "2026-11-10T00:00"),
    ]
    assert [shift.source for shift in found] == ["nights", "office", "nights", "office", "nights"]


def test_restriction_past_midnight_covers_nights_only():
    cfg = config("""
  nights:
    layers:
      - rotation: weekly
        handoff: "2026-11-02T09:00"
        people: [bob]
        restrict: {days: [fri], start: "18:00", end: "09:00"}
""")
    found = shifts(cfg, "nights", at("2026-11-05T00:00"), at("2026-11-09T00:00"))
    assert table(found) == [("bob", "2026-11-06T18:00", "2026-11-07T09:00")]


def test_overrides_go_on_top_of_every_layer_and_pieces_merge():
    cfg = config("""
  primary:
    layers:
      - {name: rota, rotation: daily, handoff: "2026-11-23T09:00", people: [alice, bob]}
    overrides:
      - {person: dave, start: "2026-11-23T12:00", end: "2026-11-23T14:00"}
      - {person: bob, start: "2026-11-24T05:00", end: "2026-11-24T09:00"}
      - {person: carol, start: "2026-11-25T08:00Z", end: "2026-11-25T09:00Z"}
""")
    found = shifts(cfg, "primary", at("2026-11-23T09:00"), at("2026-11-25T12:00"))
    assert table(found) == [
        ("alice", "2026-11-23T09:00", "2026-11-23T12:00"),
        ("dave", "2026-11-23T12:00", "2026-11-23T14:00"),
        ("alice", "2026-11-23T14:00", "2026-11-24T05:00"),
        ("bob", "2026-11-24T05:00", "2026-11-25T09:00"),  # bob's override runs into his own shift
        ("carol", "2026-11-25T09:00", "2026-11-25T10:00"),  # 08:00Z is 09:00 in Berlin
        ("alice", "2026-11-25T10:00", "2026-11-25T12:00"),
    ]
    assert found[1].source == "override" and found[3].source == "override + rota"
    assert on_call(cfg, "primary", at("2026-11-23T13:00")) == ["dave"]


def test_a_restricted_only_schedule_has_nobody_outside_its_windows():
    cfg = config("""
  office:
    layers:
      - rotation: weekly
        handoff: "2026-11-02T09:00"
        people: [alice]
        restrict: {days: [mon], start: "09:00", end: "17:00"}
""")
    assert on_call(cfg, "office", at("2026-11-23T10:00")) == ["alice"]
    assert on_call(cfg, "office", at("2026-11-23T17:00")) == []


def test_unknown_schedule_is_a_clear_error():
    cfg = config("""
  primary:
    layers:
      - {rotation: daily, handoff: "2026-11-23T09:00", people: [alice]}
""")
    with pytest.raises(UnknownSchedule, match="unknown schedule 'nope' \\(known: primary\\)"):
        shifts(cfg, "nope", 0, 1)


def test_schedule_mistakes_are_reported_at_their_lines():
    text = f"""timezone: UTC
{PEOPLE}schedules:
  primary:
    timezone: Mars/Olympus
    layers:
      - rotation: custom
        handoff: "2026-11-23 nine"
        people: [alice]
        restrict: {{days: [mon], start: 18:00, end: "09:00"}}
"""
    with pytest.raises(OncallConfigError) as caught:
        parse_oncall(text, "oncall.yaml")
    problems = "\n".join(caught.value.problems)
    assert "oncall.yaml:10: schedules.primary.timezone: unknown time zone 'Mars/Olympus'" in problems
    assert "oncall.yaml:13: schedules.primary.layers.0.handoff:" in problems
    assert 'oncall.yaml:15: schedules.primary.layers.0.restrict.start: 1080 is not a time of day: quote it, like "18:00"' in problems


def test_a_night_restriction_keeps_its_local_hours_across_the_dst_change():
    cfg = config("""
  nights:
    layers:
      - rotation: weekly
        handoff: "2026-10-19T09:00"
        people: [bob]
        restrict: {days: [sat], start: "18:00", end: "09:00"}
""")
    found = shifts(cfg, "nights", at("2026-10-24T00:00"), at("2026-10-26T00:00"))
    # Saturday 18:00 to Sunday 09:00 on the wall clock: 16 hours that night (the clocks go back)
    assert table(found) == [("bob", "2026-10-24T18:00", "2026-10-25T09:00")]
    assert found[0].end - found[0].start == 16 * 3600


def test_rotation_mistakes_name_the_layer():
    text = f"""timezone: UTC
{PEOPLE}schedules:
  twelve:
    layers:
      - {{rotation: custom, handoff: "2026-11-23T09:00", people: [alice]}}
      - {{rotation: weekly, shift: 12h, handoff: "2026-11-23T09:00", people: [bob]}}
"""
    with pytest.raises(OncallConfigError) as caught:
        parse_oncall(text, "oncall.yaml")
    assert caught.value.problems == [
        "oncall.yaml:11: schedules.twelve.layers.0: a custom rotation needs `shift` (its length, like 12h)",
        "oncall.yaml:12: schedules.twelve.layers.1: `shift` is only for custom rotations (a weekly shift is one week)",
    ]
