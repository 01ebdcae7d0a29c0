"""Notification rules: the right contact at the right hour, by priority, severity and the person's
local working hours (their team's, else the file's); held pages wait for the morning, never dropped."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from vigil.oncall import OncallConfigError, contact_plan, parse_oncall

ONCALL = """\
timezone: America/New_York
working_hours: {days: [mon, tue, wed, thu, fri], start: "09:00", end: "17:00"}
people:
  nina:                          # the file's zone and working hours
    contacts:
      phone: {inbox: true, kind: phone}
      im: {inbox: true, kind: im}
      email: {inbox: true, kind: email}
    notify:
      - priorities: [P1]
        hours: off
        steps: [{contact: phone}, {contact: im, after: 30s}]
      - priorities: [P1]
        steps: [{contact: im}]
      - severities: [info]
        steps: [{contact: email, after: 10m, hold_until: working_hours}]
      - priorities: [P2]
        steps: [{contact: im}]
  omar:                          # the night team: their hours cross midnight, in Tokyo
    contacts:
      im: {inbox: true, kind: im}
      email: {inbox: true, kind: email}
    notify:
      - hours: working
        steps: [{contact: im}]
      - steps: [{contact: email, hold_until: working_hours}]
teams:
  night:
    timezone: Asia/Tokyo
    working_hours: {days: [mon, tue, wed, thu, fri], start: "22:00", end: "06:00"}
    members: [omar]
"""

NEW_YORK, TOKYO = ZoneInfo("America/New_York"), ZoneInfo("Asia/Tokyo")


def unix(zone: ZoneInfo, *parts: int) -> float:
    return datetime(*parts, tzinfo=zone).timestamp()


@pytest.fixture(scope="module")
def config():
    return parse_oncall(ONCALL, "oncall.yaml")


def plan(config, person, priority, severity, at):
    return [(page.contact, page.due_at - at) for page in contact_plan(config, person, priority, severity, at)]


def test_off_hours_and_working_hours_pick_different_rules(config):
    night = unix(NEW_YORK, 2026, 11, 25, 23, 30)  # Wednesday 23:30 local
    day = unix(NEW_YORK, 2026, 11, 25, 11, 0)
    assert plan(config, "nina", "P1", "critical", night) == [("phone", 0.0), ("im", 30.0)]
    assert plan(config, "nina", "P1", "critical", day) == [("im", 0.0)]


def test_the_first_matching_rule_wins_and_no_match_means_the_first_contact_at_once(config):
    day = unix(NEW_YORK, 2026, 11, 25, 11, 0)
    assert plan(config, "nina", "P2", "info", day) == [("email", 600.0)]  # the severity rule comes first
    assert plan(config, "nina", "P2", "warning", day) == [("im", 0.0)]
    assert plan(config, "nina", "P4", "warning", day) == [("phone", 0.0)]  # no rule: never dropped


def test_a_held_step_counts_its_delay_first_then_waits_for_working_hours(config):
    # Friday 16:55 local: ten minutes later is 17:05, after hours, so Monday 09:00 (EST)
    friday = unix(NEW_YORK, 2026, 11, 27, 16, 55)
    monday = unix(NEW_YORK, 2026, 11, 30, 9, 0)
    assert contact_plan(config, "nina", "P5", "info", friday)[0].due_at == monday
    # Friday 16:00 local: ten minutes later is still inside working hours
    assert plan(config, "nina", "P5", "info", unix(NEW_YORK, 2026, 11, 27, 16, 0)) == [("email", 600.0)]


def test_working_hours_across_midnight_in_the_teams_zone(config):
    # the night team works 22:00-06:00 Tokyo time, starting Monday to Friday evenings
    tuesday_early = unix(TOKYO, 2026, 11, 24, 3, 0)  # inside Monday evening's shift
    assert plan(config, "omar", "P3", None, tuesday_early) == [("im", 0.0)]
    saturday_early = unix(TOKYO, 2026, 11, 28, 3, 0)  # inside Friday evening's shift
    assert plan(config, "omar", "P3", None, saturday_early) == [("im", 0.0)]
    saturday_noon = unix(TOKYO, 2026, 11, 28, 12, 0)  # no shift starts on Saturday or Sunday
    assert contact_plan(config, "omar", "P3", None, saturday_noon)[0].due_at == unix(TOKYO, 2026, 11, 30, 22, 0)
    tuesday_noon = unix(TOKYO, 2026, 11, 24, 12, 0)
    assert contact_plan(config, "omar", "P3", None, tuesday_noon)[0].due_at == unix(TOKYO, 2026, 11, 24, 22, 0)


def test_rule_mistakes_are_reported_each_at_its_line():
    text = """\
people:
  nina:
    contacts:
      im: {inbox: true, kind: im}
    notify:
      - priorities: [P1, P6]
        steps: [{contact: pager}]
      - hours: lunchtime
        steps: [{contact: im, after: soon}]
      - steps: [{contact: im, hold_until: monday}]
      - priorities: [P2]
        steps: []
teams:
  t:
    working_hours: {days: [mon], start: "09:00", end: "09:00"}
"""
    with pytest.raises(OncallConfigError) as caught:
        parse_oncall(text, "oncall.yaml")
    problems = caught.value.problems
    assert problems[0].startswith("oncall.yaml:6: people.nina.notify.0.priorities.1: Input should be 'P1'")
    assert problems[1] == "oncall.yaml:7: people.nina.notify.0.steps.0.contact: unknown contact 'pager' (the contacts of 'nina': im)"
    assert problems[2] == "oncall.yaml:8: people.nina.notify.1.hours: Input should be 'working', 'off' or 'any'"
    assert problems[3].startswith("oncall.yaml:9: people.nina.notify.1.steps.0.after: 'soon' is not a duration")
    assert problems[4] == "oncall.yaml:10: people.nina.notify.2.steps.0.hold_until: Input should be 'working_hours'"
    assert problems[5].startswith("oncall.yaml:12: people.nina.notify.3.steps: Tuple should have at least 1 item")
    assert problems[6] == "oncall.yaml:15: teams.t.working_hours: start 09:00 and end 09:00 leave an empty window"
    assert len(problems) == 7
