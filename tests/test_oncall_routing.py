"""Routing as the notifier runs it: who is paged for which labels, in which steps, on which channels."""

from __future__ import annotations

from vigil.oncall.loader import parse_oncall
from vigil.oncall.routing import PageRoute, Step, channel_of, route_page, steps_for, target_for

ONCALL = """\
targets:
  gpu-dri:
    channels:
      - type: inbox
      - type: apprise
        url: "json://127.0.0.1:9/phone"
        severities: [critical]
  storage:
    channels:
      - type: apprise
        url: "json://127.0.0.1:9/chat"
        severities: [warning, critical]
  manager:
    channels:
      - type: inbox
routes:
  - match: {team: storage, severity: warning}
    notify: storage
  - match: {team: gpu}
    notify: gpu-dri
default: manager
"""


def test_the_first_route_whose_labels_all_match_wins_and_default_catches_the_rest():
    config = parse_oncall(ONCALL)
    assert target_for(config, {"team": "storage", "severity": "warning"}) == "storage"
    assert target_for(config, {"team": "storage", "severity": "critical"}) == "manager"  # one match entry differs
    assert target_for(config, {"team": "gpu", "severity": "info"}) == "gpu-dri"
    assert target_for(config, {}) == "manager"


def test_without_a_default_an_unrouted_group_has_no_steps_and_pages_nobody():
    config = parse_oncall("targets:\n  a:\n    channels: [{type: inbox}]\nroutes:\n  - match: {team: x}\n"
                          "    notify: a\n")
    assert target_for(config, {"team": "y"}) is None
    assert steps_for(config, {"team": "y"}) == [] and route_page(config, {"team": "y"}) == []


def test_a_route_pages_one_step_today_its_target_at_once():
    config = parse_oncall(ONCALL)
    assert steps_for(config, {"team": "gpu", "severity": "critical"}) == [Step("gpu-dri", after_s=0.0)]


def test_each_channel_takes_only_the_severities_it_asks_for():
    config = parse_oncall(ONCALL)
    assert route_page(config, {"team": "gpu", "severity": "critical"}) == [
        PageRoute("gpu-dri", 0, "inbox"), PageRoute("gpu-dri", 1, "apprise")]
    assert route_page(config, {"team": "gpu", "severity": "warning"}) == [PageRoute("gpu-dri", 0, "inbox")]
    # no severity label: only the channels without a filter
    assert route_page(config, {"team": "gpu"}) == [PageRoute("gpu-dri", 0, "inbox")]
    assert route_page(config, {"team": "storage", "severity": "warning"}) == [PageRoute("storage", 0, "apprise")]


def test_a_routed_channel_is_found_again_only_while_the_config_still_has_it_there():
    config = parse_oncall(ONCALL)
    assert channel_of(config, "gpu-dri", 1, "apprise").url == "json://127.0.0.1:9/phone"
    assert channel_of(config, "gpu-dri", 1, "inbox") is None  # the channel at that place changed type
    assert channel_of(config, "gpu-dri", 2, "inbox") is None  # the target lost channels
    assert channel_of(config, "nobody", 0, "inbox") is None  # the target was removed
