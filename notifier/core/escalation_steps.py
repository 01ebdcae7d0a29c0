"""An escalation (the step an incident waits for) and where it goes next: pure functions of the
policy's shape and the escalation's position.

A position is (tier, repeat, round): page tier `tier` for the `repeat`-th time (0-based) in round
`round`. A tier is paged `pages` times (its `repeat` + 1) before the next; after the last tier a new round starts while
the policy's `rounds` allow (None: until acknowledged), else the policy is exhausted (None).
"""

from __future__ import annotations

from dataclasses import dataclass

from vigil.oncall.plan import PolicySpec

ESCALATE, REPAGE = "escalate", "repage"  # an escalation pages its tier, or checks an acknowledgement
Position = tuple[int, int, int]


@dataclass(frozen=True)
class Escalation:
    incident_id: int
    policy: str
    tier: int
    repeat: int
    round: int
    mode: str
    due_at: float


@dataclass(frozen=True)
class PagedContact:
    """A (person, contact) an incident's firing page went to."""

    person: str
    contact_index: int
    kind: str
    contact: str | None
    tier: int | None


def normalized(spec: PolicySpec, tier: int, repeat: int, round: int) -> Position | None:
    """The position itself, or the next round's first tier when `tier` is past the last one; None
    when no round is left."""
    if tier >= len(spec.tiers):
        tier, repeat, round = 0, 0, round + 1
    if spec.rounds is not None and round >= spec.rounds:
        return None
    return tier, repeat, round


def after_page(spec: PolicySpec, tier: int, repeat: int, round: int) -> Position | None:
    """The position after paging (tier, repeat, round): the same tier again while its repeats last,
    else the next tier (or round)."""
    if repeat + 1 < spec.tiers[tier].pages:
        return tier, repeat + 1, round
    return normalized(spec, tier + 1, 0, round)


def next_tier(incident_id: int, escalation: Escalation | None, last_paged_tier: int | None, policy: str,
              now: float, paused: bool = False) -> Escalation:
    """The escalation moved to the tier after the one paged last, due now (SLA breach, escalate now).

    A pending escalation that would page a new tier already points at the next tier; one that would
    page the same tier again (a repeat), one `paused` by a maintenance window (it waits at the tier whose
    pages were held) or re-page an acknowledged incident moves one tier on. The engine wraps a tier
    past the last into the next round (`normalized`).
    """
    if escalation is not None and escalation.mode == ESCALATE:
        tier = escalation.tier + 1 if escalation.repeat > 0 or paused else escalation.tier
        return Escalation(incident_id, escalation.policy, tier, 0, escalation.round, ESCALATE, now)
    round = escalation.round if escalation is not None else 0
    tier = 0 if last_paged_tier is None else last_paged_tier + 1
    return Escalation(incident_id, policy, tier, 0, round, ESCALATE, now)
