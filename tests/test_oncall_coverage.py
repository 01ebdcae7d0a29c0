"""Coverage gaps: the stretches when a tier of a policy would find nobody on call."""

from __future__ import annotations

from datetime import datetime, timezone

from vigil.oncall.coverage import Gap, gaps
from vigil.oncall.loader import parse_oncall

CONFIG = """
timezone: UTC
people:
  alice: {contacts: {phone: {inbox: true, kind: phone}}}
  bob: {contacts: {phone: {inbox: true, kind: phone}}}
  mgr: {contacts: {phone: {inbox: true, kind: phone}}}
schedules:
  office:
    layers:
      - rotation: weekly
        handoff: "2026-11-02T09:00"
        people: [alice, bob]
        restrict: {days: [mon, tue, wed, thu, fri], start: "09:00", end: "17:00"}
  nights:
    layers:
      - rotation: weekly
        handoff: "2026-11-02T09:00"
        people: [bob]
        restrict: {days: [mon, tue, wed, thu, fri], start: "17:00", end: "09:00"}
policies:
  ops:
    tiers:
      - name: DRI
        notify: [{schedule: office}, {schedule: nights}]
      - notify: [{schedule: office}]
      - name: manager
        notify: [{schedule: office}, {person: mgr}]
"""


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def test_each_tier_reports_when_nobody_is_on_call():
    config = parse_oncall(CONFIG, "oncall.yaml")
    found = gaps(config, utc("2026-11-06T00:00"), utc("2026-11-10T00:00"))  # Friday to Tuesday
    assert found == [
        # office + nights cover weekdays round the clock; the weekend is open from Saturday 09:00
        Gap("ops", 0, "DRI", utc("2026-11-07T09:00"), utc("2026-11-09T09:00")),
        Gap("ops", 1, "tier 2", utc("2026-11-06T00:00"), utc("2026-11-06T09:00")),
        Gap("ops", 1, "tier 2", utc("2026-11-06T17:00"), utc("2026-11-09T09:00")),
        Gap("ops", 1, "tier 2", utc("2026-11-09T17:00"), utc("2026-11-10T00:00")),
    ]  # the manager tier names a person: always covered


def test_no_policies_no_gaps():
    config = parse_oncall(CONFIG.split("policies:")[0], "oncall.yaml")
    assert gaps(config, utc("2026-11-06T00:00"), utc("2026-11-10T00:00")) == []
