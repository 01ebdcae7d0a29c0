"""The demo's on-call file, used when the settings name none.

A three-person weekly rota of DRIs (tier 1), the same three shifted by one as the senior line (tier 2,
so it is always somebody else), and a manager (tier 3). Every contact is the local inbox under the
channel name of the real thing it stands for (phone, sms, im, email), so `vigil inbox` shows which
channel a real deployment would have used. Waits are short so a drill shows the escalation. The first
DRI (DEMO_CONSOLE_USER) may log in to the web console with the run directory's demo password.
"""

from __future__ import annotations

from vigil.common.durations import format_duration

DEMO_PEOPLE = {
    "ana": "Ana Lima",
    "ben": "Ben Okafor",
    "chen": "Chen Wei",
}
DEMO_MANAGER = "dana"
DEMO_CONSOLE_USER = "ana"
ROTA_HANDOFF = "2026-11-02T09:00"  # a Monday; the rota hands over every Monday at 09:00 UTC
TIER_WAIT = "20s"  # a real team waits minutes; the demo escalates within a drill


def _inbox_contacts(*kinds: str) -> dict:
    return {kind: {"inbox": True, "kind": kind} for kind in kinds}


def _person(name: str) -> dict:
    return {
        "name": name,
        "timezone": "UTC",
        "contacts": _inbox_contacts("phone", "sms", "im", "email"),
        "notify": [
            # critical faults: a phone call at once, an SMS a minute later in case the call was missed
            {"priorities": ["P1", "P2"], "steps": [{"contact": "phone"}, {"contact": "sms", "after": "1m"}]},
            # warnings go where people discuss, at any hour
            {"priorities": ["P3"], "steps": [{"contact": "im"}]},
            # low priority: e-mail in working hours; out of hours it waits for the morning (never dropped)
            {"priorities": ["P4", "P5"], "hours": "working", "steps": [{"contact": "email"}]},
            {"priorities": ["P4", "P5"], "steps": [{"contact": "email", "hold_until": "working_hours"}]},
        ],
    }


def demo_oncall_config(console_password_hash: str | None = None, resolve_after_s: float = 60.0) -> dict:
    """The demo's on-call file; `console_password_hash`: DEMO_CONSOLE_USER's console login (an Argon2id hash);
    `resolve_after_s`: its `incidents.resolve_after` (the stack's `resolve_after` setting)."""
    rota = list(DEMO_PEOPLE)
    people = {key: _person(name) for key, name in DEMO_PEOPLE.items()}
    if console_password_hash:
        people[DEMO_CONSOLE_USER]["password_hash"] = console_password_hash
    people[DEMO_MANAGER] = {
        "name": "Dana Park (manager)", "timezone": "UTC", "contacts": _inbox_contacts("phone", "email"),
        "notify": [
            # the last tier: phoned only for what would phone the DRI; an unanswered warning is an e-mail
            {"priorities": ["P1", "P2"], "steps": [{"contact": "phone"}]},
            {"priorities": ["P3"], "steps": [{"contact": "email"}]},
            {"priorities": ["P4", "P5"], "steps": [{"contact": "email", "hold_until": "working_hours"}]},
        ],
    }
    return {
        "timezone": "UTC",
        "working_hours": {"days": ["mon", "tue", "wed", "thu", "fri"], "start": "09:00", "end": "18:00"},
        "priorities": {
            "P1": {"ack_within": "5m", "resolve_within": "1h"},
            "P2": {"ack_within": "15m", "resolve_within": "4h"},
            "P3": {"ack_within": "1h", "resolve_within": "1d"},
            "P4": {"ack_within": "4h", "resolve_within": "3d"},
            "P5": {"ack_within": "1d", "resolve_within": "7d"},
        },
        "severities": {"critical": "P1", "warning": "P3", "info": "P5"},
        "default_priority": "P3",
        "people": people,
        "teams": {"gpu-infra": {"name": "GPU infrastructure", "policy": "gpu-infra",
                                "members": [*rota, DEMO_MANAGER]}},
        "schedules": {
            "gpu-primary": {"layers": [{"name": "weekly DRI rota", "rotation": "weekly", "handoff": ROTA_HANDOFF,
                                        "people": rota}]},
            "gpu-secondary": {"layers": [{"name": "weekly senior rota", "rotation": "weekly",
                                          "handoff": ROTA_HANDOFF, "people": rota[1:] + rota[:1]}]},
        },
        "policies": {
            "gpu-infra": {
                "tiers": [
                    {"name": "DRI", "notify": [{"schedule": "gpu-primary"}], "escalate_after": TIER_WAIT},
                    {"name": "senior", "notify": [{"schedule": "gpu-secondary"}], "escalate_after": TIER_WAIT},
                    {"name": "manager", "notify": [{"person": DEMO_MANAGER}], "escalate_after": "5m"},
                ],
                "repeat": "until_acknowledged",
                "repage_acknowledged_after": "30m",
            },
        },
        "default_policy": "gpu-infra",
        # drills in a row page the same DRI often; more than this in a minute becomes one digest
        "storm": {"max_pages_per_minute": 30},
        "incidents": {"reopen_within": "5m", "link_ttl": "24h", "resolve_after": format_duration(resolve_after_s)},
    }
