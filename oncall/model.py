"""The on-call configuration model: people and how to reach them, teams, schedules, escalation
policies, routes from alert labels to a policy, priorities and their response targets.

Version 2 of the file adds `people`, `teams`, `schedules`, `policies`, `priorities`, `maintenance`…
to the first version's keys, which stay valid: a legacy *target* (`targets:`) is someone with an
ordered list of *channels*, a legacy route `notify: TARGET` pages that target, `default` catches the
rest. Both may be mixed in one file (`legacy.py` shows targets as people and `notify:` routes as
one-tier policies). This module is the data and its validation; references between sections are
checked by `references.py`, routing and planning are `routing.py` and `plan.py`.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from vigil.oncall.contacts import Contact, apprise_service
from vigil.oncall.notify_rules import Duration, NotifyRule, Priority, WorkingHours
from vigil.oncall.policies import Policy
from vigil.oncall.priorities import DEFAULT_SEVERITIES, PrioritySla
from vigil.oncall.schedule_model import Moment, Schedule, zone_named

Severity = str  # free-form label value; the rules use critical / warning / info


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _zone(name: str | None) -> str | None:
    if name is not None:
        zone_named(name)
    return name


class InboxChannel(_Strict):
    """The notifier's own local inbox (`GET /api/v1/inbox`): pages a demo user can read."""

    type: Literal["inbox"]
    severities: tuple[Severity, ...] | None = None


class AppriseChannel(_Strict):
    """Any notification URL apprise understands: mailto://, tgram://, slack://, twilio://…"""

    type: Literal["apprise"]
    url: str
    severities: tuple[Severity, ...] | None = None
    # pages per minute this channel may carry (phones and SMS gateways limit senders); None: the
    # notifier's default. Pages over the limit wait, none are dropped.
    max_per_minute: int | None = Field(default=None, ge=1)

    @field_validator("url")
    @classmethod
    def _apprise_understands(cls, url: str) -> str:
        apprise_service(url)
        return url


Channel = Annotated[InboxChannel | AppriseChannel, Field(discriminator="type")]


class Target(_Strict):
    """Someone who can be paged (the first version of the file)."""

    name: str | None = None
    channels: tuple[Channel, ...] = Field(min_length=1)


class Person(_Strict):
    """Someone who carries the pager: contacts in fallback order and the rules choosing among them."""

    name: str | None = None
    timezone: str | None = None  # None: their team's, else the file's
    email: str | None = None  # matches iCal ATTENDEE mailto: on override import
    contacts: dict[str, Contact] = Field(min_length=1)
    notify: tuple[NotifyRule, ...] | None = None  # None: the first contact at once
    # Web Push first: a contact `push` ({push: true}) before the others, unless one is written already
    push: bool = False
    # the web console's login: an Argon2id hash (`vigil oncall hash-password`); None: no console login
    password_hash: str | None = Field(default=None, pattern=r"^\$argon2id\$v=\d+\$m=\d+,t=\d+,p=\d+\$\S+\$\S+$")

    _known_zone = field_validator("timezone")(classmethod(lambda cls, name: _zone(name)))

    @model_validator(mode="before")
    @classmethod
    def _push_first(cls, data):
        """`push: true` on a person: Web Push is their first contact, the others its fallbacks in order."""
        if isinstance(data, dict) and data.get("push") is True and isinstance(data.get("contacts"), dict):
            contacts = data["contacts"]
            if not any(isinstance(c, dict) and c.get("push") is True for c in contacts.values()) and "push" not in contacts:
                data = {**data, "contacts": {"push": {"push": True}, **contacts}}
        return data


class Team(_Strict):
    """A team: its zone and working hours (defaults for its members), its policy, its members."""

    name: str | None = None
    timezone: str | None = None
    working_hours: WorkingHours | None = None
    policy: str | None = None
    members: tuple[str, ...] = ()

    _known_zone = field_validator("timezone")(classmethod(lambda cls, name: _zone(name)))


class Route(_Strict):
    """Alerts whose labels equal every `match` entry (and fully match every `match_re` pattern) are
    handled by `policy` (or, first version, paged to target `notify`), at `priority` if given."""

    match: dict[str, str] = Field(default_factory=dict)
    match_re: dict[str, str] = Field(default_factory=dict)
    notify: str | None = None
    policy: str | None = None
    priority: Priority | None = None

    @field_validator("match_re")
    @classmethod
    def _patterns_compile(cls, patterns: dict[str, str]) -> dict[str, str]:
        for label, pattern in patterns.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{label}: invalid regular expression {pattern!r}: {exc}") from None
        return patterns

    @model_validator(mode="after")
    def _one_destination(self) -> "Route":
        if (self.notify is None) == (self.policy is None):
            raise ValueError("a route names either `policy` or (first version) `notify`, exactly one")
        return self


class MaintenanceWindow(_Strict):
    """Pages for alerts whose labels equal every `match` entry are held from `start` to `end`
    (local times without an offset are in the file's time zone)."""

    match: dict[str, str] = Field(default_factory=dict)
    start: Moment
    end: Moment
    reason: str | None = None

    @model_validator(mode="after")
    def _ends_after_it_starts(self) -> "MaintenanceWindow":
        if (self.start.tzinfo is None) == (self.end.tzinfo is None) and self.end <= self.start:
            raise ValueError(f"the window ends ({self.end.isoformat()}) before it starts ({self.start.isoformat()})")
        return self


class Storm(_Strict):
    """Storm control: past this many pages a minute to one person and contact, one digest."""

    max_pages_per_minute: int | None = Field(default=None, ge=1)


class IncidentSettings(_Strict):
    """`reopen_within` seconds (0: never reopen), `resolve_after` (how long a resolution waits for the
    group to stay resolved before the incident is; 0: at once) and the lifetime of the one-click links."""

    reopen_within: Duration = 0.0
    resolve_after: Duration = 0.0
    link_ttl: Duration = 86400.0


class Tickets(_Strict):
    """Incidents of alerts labelled `notify: ticket` (the rules' slow burns, forecasts, waste): they take
    this priority, go to the first tier of their policy only (never escalated), and each page waits for
    the person's working hours whatever their notification rules say."""

    priority: Priority = "P5"


class OncallConfig(_Strict):
    """The whole on-call file."""

    timezone: str = "UTC"
    working_hours: WorkingHours = WorkingHours()
    priorities: dict[Priority, PrioritySla] = Field(default_factory=dict)
    severities: dict[str, Priority] = Field(default_factory=lambda: dict(DEFAULT_SEVERITIES))
    default_priority: Priority = "P3"
    people: dict[str, Person] = Field(default_factory=dict)
    teams: dict[str, Team] = Field(default_factory=dict)
    schedules: dict[str, Schedule] = Field(default_factory=dict)
    policies: dict[str, Policy] = Field(default_factory=dict)
    targets: dict[str, Target] = Field(default_factory=dict)
    routes: tuple[Route, ...] = ()
    default: str | None = None
    default_policy: str | None = None
    maintenance: tuple[MaintenanceWindow, ...] = ()
    storm: Storm = Storm()
    incidents: IncidentSettings = IncidentSettings()
    tickets: Tickets = Tickets()

    _known_zone = field_validator("timezone")(classmethod(lambda cls, name: _zone(name)))

    @field_validator("targets")
    @classmethod
    def _targets_not_empty(cls, targets: dict[str, Target]) -> dict[str, Target]:
        if not targets:
            raise ValueError("`targets:` is empty (define at least one target, or use `people:`)")
        return targets

    @model_validator(mode="after")
    def _references_resolve(self) -> "OncallConfig":
        from vigil.oncall.references import reference_problems  # the check works on plain data

        found = reference_problems(self.model_dump())
        if found:
            raise UnknownReferences(found)
        return self


class UnknownReferences(ValueError):
    """Names used in one section that no other section defines; carries each offender's location."""

    def __init__(self, offenders: list[tuple[tuple, str]]):
        self.offenders = offenders
        super().__init__("; ".join(message for _, message in offenders))


UnknownTargets = UnknownReferences  # its first-version name
