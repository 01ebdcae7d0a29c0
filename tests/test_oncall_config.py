"""The on-call YAML as a rule author writes it: routing, and every mistake reported as file:line."""

from __future__ import annotations

import pytest

from vigil.oncall.loader import OncallConfigError, load_oncall, parse_oncall
from vigil.oncall.routing import route_page, target_for

EXAMPLE = """\
targets:
  demo-dri:
    name: Demo DRI
    channels:
      - type: inbox            # the notifier's local inbox (demo)
      - type: apprise
        url: "mailto://user:pass@example.com"
        severities: [critical] # optional filter
  storage:
    channels:
      - type: apprise
        url: "tgram://123456789:abcdefg_hijklmnop/12345"
routes:                        # first match wins; match on alert labels
  - match: {severity: critical}
    notify: demo-dri
  - match: {team: storage}
    notify: storage
  - match: {severity: warning}
    notify: demo-dri
default: demo-dri
"""


def test_the_documented_example_loads_and_routes_by_labels(tmp_path):
    path = tmp_path / "oncall.yaml"
    path.write_text(EXAMPLE)
    config = load_oncall(path)
    assert target_for(config, {"severity": "critical", "team": "storage"}) == "demo-dri"  # first match wins
    assert target_for(config, {"severity": "warning", "team": "storage"}) == "storage"
    assert target_for(config, {"severity": "info"}) == "demo-dri"  # default
    critical = route_page(config, {"severity": "critical"})
    warning = route_page(config, {"severity": "warning"})
    assert [(r.target, r.channel_index, r.channel_type) for r in critical] == [
        ("demo-dri", 0, "inbox"), ("demo-dri", 1, "apprise")]
    assert [(r.channel_index, r.channel_type) for r in warning] == [(0, "inbox")]  # mail only for critical


def test_without_a_default_unrouted_alerts_page_nobody():
    config = parse_oncall("targets:\n  a:\n    channels: [{type: inbox}]\nroutes:\n  - match: {team: x}\n"
                          "    notify: a\n")
    assert route_page(config, {"team": "y"}) == []


def test_every_mistake_is_reported_at_once_with_its_line():
    text = """\
targets:
  demo-dri:
    name: Demo DRI
    channels:
      - type: inbox
      - type: apprise
        url: "nosuchscheme://nothing"
      - type: pager
    colour: red
  nobody-home:
    channels: []
routes:
  - match: {severity: critical}
    notify: demo-dri
  - match: {severity: warning}
    notify: ghost
default: phantom
"""
    with pytest.raises(OncallConfigError) as caught:
        parse_oncall(text, "oncall.yaml")
    problems = caught.value.problems
    assert problems[0] == ("oncall.yaml:7: targets.demo-dri.channels.1.url: apprise does not understand "
                           "this URL (unknown scheme or missing parts)")
    assert problems[1].startswith("oncall.yaml:8: targets.demo-dri.channels.2: ") and "'pager'" in problems[1]
    assert problems[2] == "oncall.yaml:9: targets.demo-dri.colour: Extra inputs are not permitted"
    assert problems[3].startswith("oncall.yaml:11: targets.nobody-home.channels: ")
    assert problems[4] == "oncall.yaml:16: routes.1.notify: unknown target 'ghost'"
    assert problems[5] == "oncall.yaml:17: default: unknown target 'phantom'"
    assert len(problems) == 6


@pytest.mark.parametrize("text, expected", [
    ("targets: [\n", "oncall.yaml:2: invalid YAML"),
    ("", "oncall.yaml:1: the on-call config is empty"),
    ("- a\n- b\n", "oncall.yaml:1: expected a mapping at top level"),
    ("routes: []\n", "oncall.yaml:1: targets: Field required"),
    ("targets:\n  a:\n    channels:\n      - type: apprise\n", "oncall.yaml:4: targets.a.channels.0.url: Field required"),
])
def test_broken_files_get_one_clear_line(text, expected):
    with pytest.raises(OncallConfigError) as caught:
        parse_oncall(text, "oncall.yaml")
    assert caught.value.problems[0].startswith(expected)


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(OncallConfigError, match="cannot read on-call config"):
        load_oncall(tmp_path / "absent.yaml")


SECOND_VERSION_WITH_MISTAKES = """\
timezone: Mars/Olympus
priorities:
  P1: {ack_within: soon}
  P7: {ack_within: 5m}
people:
  alice:
    contacts:
      phone: {url: "nosuchscheme://x"}
      im: {inbox: true, kind: im}
    notify:
      - steps: [{contact: fax}]
teams:
  gpu:
    policy: nopolicy
    members: [alice, zed]
schedules:
  primary:
    layers:
      - rotation: weekly
        handoff: "2026-11-02T09:00"
        people: [alice, yves]
    overrides:
      - {person: xavier, start: "2026-11-24T00:00", end: "2026-11-25T00:00"}
policies:
  main:
    tiers:
      - notify: [{schedule: primary}, {schedule: secondary}, {person: wanda}]
        escalate_after: never
    repeat: -1
routes:
  - match: {team: gpu}
    policy: ghost
  - match: {team: x}
    notify: nobody
  - match_re: {alertname: "Gpu(.*"}
    policy: main
default_policy: phantom
maintenance:
  - {start: "2026-11-25T02:00Z", end: "2026-11-24T22:00Z"}
"""


def test_every_mistake_of_a_second_version_file_is_reported_at_its_own_line():
    with pytest.raises(OncallConfigError) as caught:
        parse_oncall(SECOND_VERSION_WITH_MISTAKES, "oncall.yaml")
    assert [problem.split(": ")[0] for problem in caught.value.problems] == [
        "oncall.yaml:1", "oncall.yaml:3", "oncall.yaml:4", "oncall.yaml:8", "oncall.yaml:11", "oncall.yaml:14",
        "oncall.yaml:15", "oncall.yaml:21", "oncall.yaml:23", "oncall.yaml:27", "oncall.yaml:27",
        "oncall.yaml:28", "oncall.yaml:29", "oncall.yaml:32", "oncall.yaml:34", "oncall.yaml:35",
        "oncall.yaml:37", "oncall.yaml:39"]
    text = "\n".join(caught.value.problems)
    for expected in [
        "oncall.yaml:1: timezone: unknown time zone 'Mars/Olympus'",
        "oncall.yaml:3: priorities.P1.ack_within: 'soon' is not a duration",
        "oncall.yaml:4: priorities.P7: Input should be 'P1', 'P2', 'P3', 'P4' or 'P5'",
        "oncall.yaml:8: people.alice.contacts.phone: apprise does not understand this URL",
        "oncall.yaml:11: people.alice.notify.0.steps.0.contact: unknown contact 'fax' (the contacts of 'alice': im, phone)",
        "oncall.yaml:14: teams.gpu.policy: unknown policy 'nopolicy'",
        "oncall.yaml:15: teams.gpu.members.1: unknown person 'zed'",
        "oncall.yaml:21: schedules.primary.layers.0.people.1: unknown person 'yves'",
        "oncall.yaml:23: schedules.primary.overrides.0.person: unknown person 'xavier'",
        "oncall.yaml:27: policies.main.tiers.0.notify.1.schedule: unknown schedule 'secondary'",
        "oncall.yaml:27: policies.main.tiers.0.notify.2.person: unknown person 'wanda'",
        "oncall.yaml:28: policies.main.tiers.0.escalate_after: 'never' is not a duration",
        "oncall.yaml:29: policies.main.repeat: -1: repeat is a count of extra rounds (0 or more) or `until_acknowledged`",
        "oncall.yaml:32: routes.0.policy: unknown policy 'ghost'",
        "oncall.yaml:34: routes.1.notify: unknown target 'nobody'",
        "oncall.yaml:35: routes.2.match_re: alertname: invalid regular expression 'Gpu(.*'",
        "oncall.yaml:37: default_policy: unknown policy 'phantom'",
        "oncall.yaml:39: maintenance.0: the window ends (2026-11-24T22:00:00+00:00) before it starts",
    ]:
        assert expected in text


def test_first_version_targets_and_second_version_people_mix_in_one_file():
    config = parse_oncall("""\
targets:
  legacy-dri:
    channels: [{type: inbox}]
people:
  alice:
    contacts: {im: {inbox: true, kind: im}}
policies:
  gpu: {tiers: [{notify: [{person: alice}, {person: legacy-dri}]}]}
routes:
  - match: {team: gpu}
    policy: gpu
  - match: {team: old}
    notify: legacy-dri
default: legacy-dri
""")
    assert target_for(config, {"team": "old"}) == "legacy-dri"
    assert target_for(config, {"team": "gpu"}) is None  # a policy route: the first version's paging has no target
    assert target_for(config, {}) == "legacy-dri"


@pytest.mark.parametrize("text, expected", [
    ("targets:\n  a: {channels: [{type: inbox}]}\npeople:\n  a: {contacts: {c: {inbox: true, kind: im}}}\n",
     "oncall.yaml:4: people.a: 'a' is also defined under `targets:`"),
    ("people:\n  a: {contacts: {c: {inbox: true, kind: im}}}\npolicies:\n  p: {tiers: [{notify: [{person: a}]}]}\n"
     "default: a\ndefault_policy: p\n",
     "oncall.yaml:6: default_policy: set `default_policy` or (first version) `default`, not both"),
    ("people:\n  a: {contacts: {}}\n", "oncall.yaml:2: people.a.contacts: Dictionary should have at least 1 item"),
    ("people:\n  a: {contacts: {c: {inbox: true, kind: im}}}\npolicies:\n  p: {tiers: [{notify: [{}]}]}\n",
     "oncall.yaml:4: policies.p.tiers.0.notify.0: each entry is {schedule: NAME} or {person: NAME}"),
])
def test_second_version_mistakes_get_a_clear_line(text, expected):
    with pytest.raises(OncallConfigError) as caught:
        parse_oncall(text, "oncall.yaml")
    assert caught.value.problems[0].startswith(expected)
