"""The planning API as the engine calls it: route → priority and SLA → policy tiers → who → which
contact, when. Files are written the way a user writes them; times are exact UNIX seconds."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from vigil.oncall import (ContactPlan, ContactRef, IncidentRouting, PolicySpec, Sla, TierSpec, UnknownPolicy,
                          config_maintenance, contact_at, contact_plan, next_contact, parse_oncall, policy_spec,
                          route_incident, sla_for, tier_people)

TWILIO = "twilio://ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb@15551230001/15551230002"

ONCALL = f"""\
timezone: UTC
working_hours: {{days: [mon, tue, wed, thu, fri], start: "09:00", end: "18:00"}}
priorities:
  P1: {{ack_within: 5m, resolve_within: 1h}}
  P3: {{ack_within: 1h}}
severities: {{critical: P1, warning: P3, info: P5}}
default_priority: P4

people:
  alice:
    timezone: Asia/Shanghai
    contacts:
      phone: {{url: "{TWILIO}?method=call"}}
      sms:   {{url: "{TWILIO}"}}
      im:    {{url: "slack://T1/B1/C1"}}
      email: {{url: "mailto://user:pass@example.com?to=alice@example.com"}}
    notify:
      - priorities: [P1, P2]
        steps: [{{contact: phone}}, {{contact: sms, after: 1m}}]
      - priorities: [P3]
        hours: working
        steps: [{{contact: im}}]
      - priorities: [P3, P4, P5]
        steps: [{{contact: email, hold_until: working_hours}}]
  bob:
    contacts:
      pager: {{inbox: true, kind: phone}}
      chat:  {{inbox: true, kind: im}}
  hans:
    contacts:
      email: {{url: "mailto://user:pass@example.com?to=hans@example.com"}}
    notify:
      - steps: [{{contact: email, hold_until: working_hours}}]

teams:
  gpu-infra:
    policy: gpu-infra
    members: [alice, bob]
  berlin:
    timezone: Europe/Berlin
    working_hours: {{days: [mon, tue, wed, thu, fri], start: "09:00", end: "17:00"}}
    members: [hans]

policies:
  gpu-infra:
    tiers:
      - name: DRI
        notify: [{{person: alice}}]
        escalate_after: 5m
        repeat: 2
      - notify: [{{person: bob}}, {{person: alice}}, {{person: bob}}]
        escalate_after: 10m
    repeat: until_acknowledged
    repage_acknowledged_after: 1h
  storage:
    tiers: [{{notify: [{{person: hans}}]}}]
    repeat: 2

routes:
  - match: {{team: gpu}}
    match_re: {{alertname: "Gpu.*"}}
    policy: gpu-infra
    priority: P2
  - match: {{team: gpu}}
    policy: gpu-infra
  - match: {{team: storage}}
    policy: storage
default_policy: storage

maintenance:
  - {{match: {{node: node-7}}, start: "2026-11-24T22:00Z", end: "2026-11-25T02:00Z", reason: firmware}}
  - {{start: "2026-12-24T00:00", end: "2026-12-27T00:00", reason: holidays}}
"""

SHANGHAI, BERLIN = ZoneInfo("Asia/Shanghai"), ZoneInfo("Europe/Berlin")


def unix(zone: ZoneInfo, *parts: int) -> float:
    return datetime(*parts, tzinfo=zone).timestamp()


@pytest.fixture(scope="module")
def config():
    return parse_oncall(ONCALL, "oncall.yaml")


def test_priority_comes_from_the_route_then_the_label_then_the_severity_then_the_default(config):
    gpu = {"team": "gpu", "alertname": "GpuXid79", "severity": "critical", "priority": "P5"}
    assert route_incident(config, gpu) == IncidentRouting("gpu-infra", "P2", "gpu-infra")  # the route says P2
    assert route_incident(config, {**gpu, "alertname": "NodeDown"}).priority == "P5"  # the label
    assert route_incident(config, {**gpu, "alertname": "NodeDown", "priority": "P9"}).priority == "P1"  # severity
    assert route_incident(config, {"team": "gpu", "severity": "debug"}).priority == "P4"  # default_priority
    assert route_incident(config, {"team": "gpu"}).priority == "P4"


def test_unrouted_alerts_take_the_default_policy_and_the_team_comes_from_the_policy_or_the_label(config):
    assert route_incident(config, {"team": "storage"}) == IncidentRouting("storage", "P4", None)
    assert route_incident(config, {"team": "berlin", "severity": "warning"}) == IncidentRouting("storage", "P3", "berlin")
    bare = parse_oncall("people:\n  a:\n    contacts: {c: {inbox: true, kind: im}}\n")
    assert route_incident(bare, {"severity": "critical"}) == IncidentRouting(None, "P1", None)


def test_each_priority_has_its_response_targets_in_seconds(config):
    assert sla_for(config, "P1") == Sla(300.0, 3600.0)
    assert sla_for(config, "P3") == Sla(3600.0, None)
    assert sla_for(config, "P5") == Sla(None, None)


def test_a_policy_is_tiers_with_waits_and_repeats_and_a_number_of_rounds(config):
    assert policy_spec(config, "gpu-infra") == PolicySpec(
        "gpu-infra", (TierSpec(0, "DRI", 300.0, 3), TierSpec(1, "tier 2", 600.0, 1)), None, 3600.0)
    assert policy_spec(config, "storage") == PolicySpec("storage", (TierSpec(0, "tier 1", 300.0, 1),), 3, None)
    with pytest.raises(UnknownPolicy):
        policy_spec(config, "gone")


def test_a_tier_pages_each_named_person_once_in_order(config):
    assert tier_people(config, "gpu-infra", 0, 0.0) == ["alice"]
    assert tier_people(config, "gpu-infra", 1, 0.0) == ["bob", "alice"]
    assert tier_people(config, "gpu-infra", 2, 0.0) == []


def test_p1_at_three_on_a_saturday_morning_phones_at_once_and_texts_a_minute_later(config):
    at = unix(SHANGHAI, 2026, 11, 28, 3, 0)  # a Saturday, 03:00 in Alice's zone
    assert at == 1795806000
    assert contact_plan(config, "alice", "P1", "critical", at) == [
        ContactPlan("alice", 0, "phone", "phone", at), ContactPlan("alice", 1, "sms", "sms", at + 60)]


def test_p3_in_working_hours_goes_to_im_at_once(config):
    at = unix(SHANGHAI, 2026, 11, 24, 10, 0)  # Tuesday 10:00 in Shanghai, 02:00 UTC
    assert contact_plan(config, "alice", "P3", "warning", at) == [ContactPlan("alice", 2, "im", "im", at)]


def test_p3_out_of_hours_is_an_email_held_until_the_next_working_morning_in_the_persons_zone(config):
    saturday_night = unix(SHANGHAI, 2026, 11, 28, 3, 0)
    # Monday 09:00 in Shanghai (no daylight saving time): 2026-11-30T01:00Z
    assert contact_plan(config, "alice", "P3", "warning", saturday_night) == [
        ContactPlan("alice", 3, "email", "email", 1796000400.0)]
    friday_evening = unix(SHANGHAI, 2026, 11, 27, 18, 0)  # the end of working hours is out of hours
    assert contact_plan(config, "alice", "P4", None, friday_evening)[0].due_at == 1796000400.0


def test_held_pages_wait_for_the_teams_working_hours_across_a_daylight_saving_change(config):
    # Saturday 2026-10-24 20:00 CEST; summer time ends on Sunday: Monday 09:00 is CET, 08:00 UTC
    at = unix(BERLIN, 2026, 10, 24, 20, 0)
    assert contact_plan(config, "hans", "P5", "info", at) == [ContactPlan("hans", 0, "email", "email", 1793001600.0)]
    # inside the Berlin team's hours (09:00-17:00) it goes at once; after 17:00 it waits for the morning
    monday = unix(BERLIN, 2026, 10, 26, 16, 59)
    assert contact_plan(config, "hans", "P5", "info", monday)[0].due_at == monday
    assert contact_plan(config, "hans", "P5", "info", monday + 60)[0].due_at == unix(BERLIN, 2026, 10, 27, 9, 0)


def test_without_rules_the_first_contact_is_paged_at_once_and_the_others_are_the_fallbacks(config):
    assert contact_plan(config, "bob", "P1", "critical", 100.0) == [ContactPlan("bob", 0, "pager", "phone", 100.0)]
    assert next_contact(config, "bob", 0) == ContactRef("bob", 1, "chat", "im")
    assert next_contact(config, "bob", 1) is None
    assert next_contact(config, "alice", 0) == ContactRef("alice", 1, "sms", "sms")
    assert contact_plan(config, "nobody", "P1", None, 0.0) == []


def test_the_sender_finds_a_contact_only_while_the_config_still_has_it_there(config):
    assert contact_at(config, "alice", 2, "im").url == "slack://T1/B1/C1"
    assert contact_at(config, "bob", 0, "phone").inbox is True
    assert contact_at(config, "alice", 2, "email") is None  # another kind at that place now
    assert contact_at(config, "alice", 9, "im") is None and contact_at(config, "ghost", 0, "im") is None


def test_maintenance_windows_of_the_file_hold_matching_pages_while_they_last(config):
    inside = datetime.fromisoformat("2026-11-24T23:00+00:00").timestamp()
    assert config_maintenance(config, {"node": "node-7", "team": "gpu"}, inside).reason == "firmware"
    assert config_maintenance(config, {"node": "node-8"}, inside) is None
    assert config_maintenance(config, {"node": "node-7"}, inside + 3 * 3600) is None  # ended at 02:00Z
    christmas = datetime.fromisoformat("2026-12-24T00:00+00:00").timestamp()  # local time: the file's UTC
    assert config_maintenance(config, {}, christmas).reason == "holidays"
    assert config_maintenance(config, {}, christmas - 1) is None


LEGACY = """\
targets:
  gpu-dri:
    channels:
      - type: inbox
      - type: apprise
        url: "json://127.0.0.1:9/phone"
        severities: [critical]
  manager:
    channels: [{type: inbox}]
routes:
  - match: {team: gpu}
    notify: gpu-dri
default: manager
"""


def test_a_first_version_file_plans_as_before_every_wanted_channel_at_once():
    config = parse_oncall(LEGACY)
    routing = route_incident(config, {"team": "gpu", "severity": "critical"})
    assert routing == IncidentRouting("target:gpu-dri", "P1", None)
    assert policy_spec(config, routing.policy) == PolicySpec("target:gpu-dri", (TierSpec(0, "gpu-dri", 0.0, 1),),
                                                             1, None)
    assert tier_people(config, routing.policy, 0, 0.0) == ["gpu-dri"]
    assert tier_people(config, routing.policy, 1, 0.0) == []
    assert contact_plan(config, "gpu-dri", "P1", "critical", 5.0) == [
        ContactPlan("gpu-dri", 0, "channel-0", "inbox", 5.0), ContactPlan("gpu-dri", 1, "channel-1", "apprise", 5.0)]
    assert contact_plan(config, "gpu-dri", "P3", "warning", 5.0) == [ContactPlan("gpu-dri", 0, "channel-0", "inbox", 5.0)]
    assert contact_at(config, "gpu-dri", 1, "apprise").url == "json://127.0.0.1:9/phone"
    assert contact_at(config, "gpu-dri", 0, "inbox").inbox is True
    assert next_contact(config, "gpu-dri", 0) == ContactRef("gpu-dri", 1, "channel-1", "apprise")
    assert route_incident(config, {"team": "other"}).policy == "target:manager"


ROTA = """\
timezone: Asia/Shanghai
people:
  alice: {contacts: {phone: {inbox: true, kind: phone}}}
  bob: {contacts: {phone: {inbox: true, kind: phone}}}
  carol: {contacts: {phone: {inbox: true, kind: phone}}}
  dave: {contacts: {phone: {inbox: true, kind: phone}}}
  mgr: {contacts: {phone: {inbox: true, kind: phone}}}
schedules:
  primary:
    layers:
      - {name: weekly rota, rotation: weekly, handoff: "2026-11-02T09:00", people: [alice, bob, carol]}
    overrides:
      - {person: dave, start: "2026-11-24T00:00", end: "2026-11-25T00:00"}
  business-hours:
    layers:
      - rotation: daily
        handoff: "2026-11-02T09:00"
        people: [carol]
        restrict: {days: [mon, tue, wed, thu, fri], start: "09:00", end: "18:00"}
policies:
  gpu:
    tiers:
      - {name: DRI, notify: [{schedule: primary}], escalate_after: 5m}
      - {name: day lead, notify: [{schedule: business-hours}, {person: mgr}], escalate_after: 10m}
default_policy: gpu
"""


def test_a_schedule_tier_pages_whoever_is_on_call_then_an_override_takes_the_page():
    config = parse_oncall(ROTA)
    saturday_night = unix(SHANGHAI, 2026, 11, 28, 3, 0)  # the 4th week since 2026-11-02: alice's again
    assert tier_people(config, "gpu", 0, saturday_night) == ["alice"]
    assert tier_people(config, "gpu", 0, unix(SHANGHAI, 2026, 11, 10, 12, 0)) == ["bob"]
    assert tier_people(config, "gpu", 0, unix(SHANGHAI, 2026, 11, 23, 8, 59)) == ["carol"]  # before the handoff
    assert tier_people(config, "gpu", 0, unix(SHANGHAI, 2026, 11, 24, 12, 0)) == ["dave"]  # the override
    # outside the business-hours layer's window only the person entry is left; inside it both, in order
    assert tier_people(config, "gpu", 1, saturday_night) == ["mgr"]
    assert tier_people(config, "gpu", 1, unix(SHANGHAI, 2026, 11, 24, 10, 0)) == ["carol", "mgr"]
    assert contact_plan(config, "alice", "P1", "critical", saturday_night) == [
        ContactPlan("alice", 0, "phone", "phone", saturday_night)]
