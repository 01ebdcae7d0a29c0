"""The demo's on-call file (vigil/stack/config/demo_oncall.py), read by the real loader: who is reached
through which contact for each priority. A warning phones nobody, the manager included."""

from __future__ import annotations

import yaml

from vigil.oncall.loader import parse_oncall
from vigil.oncall.plan import contact_plan
from vigil.stack.config.demo_oncall import DEMO_MANAGER, DEMO_PEOPLE, demo_oncall_config

MONDAY_NOON = 1_763_985_600.0  # 2025-11-24 12:00 UTC, inside the demo's working hours
SUNDAY_NIGHT = MONDAY_NOON - 36 * 3600  # outside them


def kinds(person: str, priority: str, severity: str, at: float = MONDAY_NOON) -> list[str]:
    config = parse_oncall(yaml.safe_dump(demo_oncall_config()), "demo-oncall.yaml")
    return [plan.kind for plan in contact_plan(config, person, priority, severity, at)]


def test_critical_phones_every_tier_and_warnings_phone_nobody():
    for person in [*DEMO_PEOPLE, DEMO_MANAGER]:
        assert kinds(person, "P1", "critical")[0] == "phone", person
        assert "phone" not in kinds(person, "P3", "warning"), person
        assert "phone" not in kinds(person, "P5", "info", SUNDAY_NIGHT), person
    assert kinds("ana", "P1", "critical") == ["phone", "sms"]
    assert kinds("ana", "P3", "warning") == ["im"]
    assert kinds(DEMO_MANAGER, "P3", "warning") == ["email"]
