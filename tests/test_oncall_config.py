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
