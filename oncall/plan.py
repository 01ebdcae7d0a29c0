"""The planning API the notifier's engine calls: pure functions of the on-call config and a time.

Nothing here reads a clock or a database: `at` is UNIX seconds, passed in. The engine asks, in turn:
which policy and priority an incident gets (`route_incident`) and its response targets (`sla_for`);
the shape of the policy (`policy_spec`) and who a tier pages now (`tier_people`); for each person, which
contacts to send to and when (`contact_plan`, by their notification rules and working hours); on a
failing contact, the next one (`next_contact`); at send time, the contact itself (`contact_at`); and
whether a maintenance window of the file holds the page (`config_maintenance`).

First-version files plan the first version's way (see `legacy.py`): a route `notify: X` is the
one-tier policy `target:X`, and a target's pages go to every channel its `severities` admit, at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from zoneinfo import ZoneInfo

from vigil.oncall.contacts import Contact
from vigil.oncall.legacy import (channel_contact, contact_name, legacy_policy_name, legacy_policy_target,
                                 wanted_channels)
from vigil.oncall.model import MaintenanceWindow, OncallConfig, Person, Team
from vigil.oncall.notify_rules import (NotifyRule, NotifyStep, WorkingHours, in_working_hours, next_working_start,
                                       step_due)
from vigil.oncall.priorities import decide_priority
from vigil.oncall.routing import matching_route
from vigil.oncall.schedule_model import zone_named
from vigil.oncall.schedules import on_call, to_unix


@dataclass(frozen=True)
class IncidentRouting:
    policy: str | None  # None: nobody is paged (no route, no default)
    priority: str  # "P1".."P5"
    team: str | None
    ticket: bool = False  # its alerts say `notify: ticket`: first tier only, in working hours


TICKET_LABEL, TICKET = "notify", "ticket"  # the label the generated rules set on every alert, and its value


def is_ticket(labels: dict[str, str]) -> bool:
    """Whether an incident with these (common) labels files a ticket rather than paging."""
    return labels.get(TICKET_LABEL) == TICKET


@dataclass(frozen=True)
class Sla:
    ack_within_s: float | None
    resolve_within_s: float | None


@dataclass(frozen=True)
class TierSpec:
    index: int  # 0-based
    name: str
    escalate_after_s: float
    pages: int  # >= 1: the first page and the tier's `repeat` more


@dataclass(frozen=True)
class PolicySpec:
    name: str
    tiers: tuple[TierSpec, ...]
    rounds: int | None  # total rounds of the whole policy; None = until acknowledged
    repage_acknowledged_after_s: float | None


@dataclass(frozen=True)
class ContactRef:
    """A contact of a person by position, name and kind (what `next_contact` returns)."""

    person: str
    contact_index: int  # position in the person's contacts (the outbox's channel_index)
    contact: str  # contact name
    kind: str  # phone | sms | im | email | push | other | inbox | apprise (first version)


@dataclass(frozen=True)
class ContactPlan(ContactRef):
    """One page to send: to this contact, due at `due_at` (UNIX seconds)."""

    due_at: float


class UnknownPolicy(LookupError):
    """A policy name the config does not define (the config may have changed since it was routed)."""


def route_incident(config: OncallConfig, labels: dict[str, str]) -> IncidentRouting:
    """The policy, priority and team of an incident whose alerts carry `labels`."""
    route = matching_route(config, labels)
    if route is not None:
        policy = route.policy if route.policy is not None else legacy_policy_name(route.notify)
    elif config.default_policy is not None:
        policy = config.default_policy
    else:
        policy = None if config.default is None else legacy_policy_name(config.default)
    if is_ticket(labels):  # a ticket is a ticket whatever the route or severity say
        return IncidentRouting(policy, config.tickets.priority, _team_of(config, policy, labels), ticket=True)
    priority = decide_priority(route.priority if route else None, labels, config.severities,
                               config.default_priority)
    return IncidentRouting(policy, priority, _team_of(config, policy, labels))


def _team_of(config: OncallConfig, policy: str | None, labels: dict[str, str]) -> str | None:
    """The first team whose policy is `policy`, else the team the `team` label names, else None."""
    owner = next((key for key, team in config.teams.items() if policy is not None and team.policy == policy), None)
    label = labels.get("team")
    return owner if owner is not None else (label if label in config.teams else None)


def sla_for(config: OncallConfig, priority: str) -> Sla:
    """The response targets of `priority` (None where the file sets none)."""
    targets = config.priorities.get(priority)
    return Sla(None, None) if targets is None else Sla(targets.ack_within, targets.resolve_within)


def policy_spec(config: OncallConfig, policy: str) -> PolicySpec:
    """The tiers and rounds of `policy`; UnknownPolicy if the config has no such policy."""
    known = config.policies.get(policy)
    if known is not None:
        tiers = tuple(TierSpec(index, tier.name or f"tier {index + 1}", tier.escalate_after, tier.repeat + 1)
                      for index, tier in enumerate(known.tiers))
        return PolicySpec(policy, tiers, known.rounds, known.repage_acknowledged_after)
    target = legacy_policy_target(config, policy)
    if target is None:
        raise UnknownPolicy(policy)
    return PolicySpec(policy, (TierSpec(0, target, 0.0, 1),), 1, None)


def tier_people(config: OncallConfig, policy: str, tier_index: int, at: float) -> list[str]:
    """Who tier `tier_index` of `policy` pages at `at`, in order, each once ([]: nobody, a gap)."""
    known = config.policies.get(policy)
    if known is None:
        target = legacy_policy_target(config, policy)
        if target is None:
            raise UnknownPolicy(policy)
        return [target] if tier_index == 0 else []
    if not 0 <= tier_index < len(known.tiers):
        return []
    people: list[str] = []
    for entry in known.tiers[tier_index].notify:
        found = [entry.person] if entry.person is not None else on_call(config, entry.schedule, at)
        people += [person for person in found if person not in people]
    return people


def person_team(config: OncallConfig, person: str) -> Team | None:
    """The first team whose `members` list `person`, if any."""
    return next((team for team in config.teams.values() if person in team.members), None)


def person_zone(config: OncallConfig, person: str) -> ZoneInfo:
    """The person's time zone: their own, else their team's, else the file's."""
    known = config.people.get(person)
    team = person_team(config, person)
    name = (known.timezone if known else None) or (team.timezone if team else None) or config.timezone
    return zone_named(name)


def person_hours(config: OncallConfig, person: str) -> WorkingHours:
    """The working hours that apply to `person`: their team's, else the file's."""
    team = person_team(config, person)
    return team.working_hours if team is not None and team.working_hours is not None else config.working_hours


def contact_plan(config: OncallConfig, person: str, priority: str, severity: str | None,
                 at: float, ticket: bool = False) -> list[ContactPlan]:
    """The pages to send `person` for an incident of `priority`/`severity` paged at `at`, by the
    first of their notification rules that matches (none: their first contact at once); a `ticket`'s
    pages are each held to the person's working hours."""
    zone, hours = person_zone(config, person), person_hours(config, person)
    target = config.targets.get(person)
    if target is not None:
        due = next_working_start(hours, zone, at) if ticket else at
        return [ContactPlan(person, index, contact_name(index), target.channels[index].type, due)
                for index in wanted_channels(target, severity)]
    known = config.people.get(person)
    if known is None:
        return []
    working = in_working_hours(hours, zone, at)
    rule = next((rule for rule in known.notify or () if rule.matches(priority, severity, working)), None)
    steps = rule.steps if rule is not None else _first_contact(known).steps
    names = list(known.contacts)
    return [ContactPlan(person, names.index(step.contact), step.contact, known.contacts[step.contact].kind,
                        _held(step_due(step, hours, zone, at), hours, zone, ticket)) for step in steps]


def _held(due: float, hours: WorkingHours, zone: ZoneInfo, ticket: bool) -> float:
    """A ticket's page waits for working hours; any other is due when its step says."""
    return next_working_start(hours, zone, due) if ticket else due


def _first_contact(person: Person) -> NotifyRule:
    return NotifyRule(steps=(NotifyStep(contact=next(iter(person.contacts))),))


def next_contact(config: OncallConfig, person: str, contact_index: int) -> ContactRef | None:
    """The contact after `contact_index` in the person's fallback order; None after the last."""
    contacts = _contacts(config, person)
    following = contact_index + 1
    if not 0 <= following < len(contacts):
        return None
    name, contact = contacts[following]
    return ContactRef(person, following, name, contact.kind)


def contact_at(config: OncallConfig, person: str, contact_index: int, kind: str) -> Contact | None:
    """The contact a page was planned for, if the config still has one of that kind there."""
    contacts = _contacts(config, person)
    if not 0 <= contact_index < len(contacts):
        return None
    contact = contacts[contact_index][1]
    return contact if contact.kind == kind else None


def _contacts(config: OncallConfig, person: str) -> list[tuple[str, Contact]]:
    target = config.targets.get(person)
    if target is not None:
        return [(contact_name(index), channel_contact(channel)) for index, channel in enumerate(target.channels)]
    known = config.people.get(person)
    return list(known.contacts.items()) if known is not None else []


def config_maintenance(config: OncallConfig, labels: dict[str, str], at: float) -> MaintenanceWindow | None:
    """The first maintenance window of the file that holds pages of `labels` at `at`, if any."""
    zone = zone_named(config.timezone)
    for window in config.maintenance:
        if to_unix(window.start, zone) <= at < to_unix(window.end, zone) and all(
                labels.get(key) == value for key, value in window.match.items()):
            return window
    return None

