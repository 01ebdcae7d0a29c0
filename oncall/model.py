"""The on-call configuration model: who is paged for which alerts, and through which channels.

A *target* is someone (or a rota) that can be paged; it owns an ordered list of *channels*. A *route*
matches alert labels and names the target to notify; routes are tried in order, the first match wins,
and `default` catches the rest. This module is the data and its validation; picking who is paged from
labels is `routing.py`. Escalation tiers (primary → secondary → manager) will later hang off a route as
an ordered list of steps; today a route has exactly one step: `notify`.
"""

from __future__ import annotations

from typing import Annotated, Literal

import apprise
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Severity = str  # free-form label value; the rules use critical / warning / info


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
        # instantiate() parses the URL with the matching plugin and returns None when no plugin accepts it
        if apprise.Apprise.instantiate(url, suppress_exceptions=True) is None:
            raise ValueError("apprise does not understand this URL (unknown scheme or missing parts)")
        return url


Channel = Annotated[InboxChannel | AppriseChannel, Field(discriminator="type")]


class Target(_Strict):
    """Someone who can be paged."""

    name: str | None = None
    channels: tuple[Channel, ...] = Field(min_length=1)


class Route(_Strict):
    """Alerts whose labels equal every `match` entry are sent to target `notify`."""

    match: dict[str, str] = Field(default_factory=dict)
    notify: str


class OncallConfig(_Strict):
    """The whole on-call file."""

    targets: dict[str, Target] = Field(min_length=1)
    routes: tuple[Route, ...] = ()
    default: str | None = None

    @model_validator(mode="after")
    def _known_targets(self) -> "OncallConfig":
        unknown = []
        for index, route in enumerate(self.routes):
            if route.notify not in self.targets:
                unknown.append((("routes", index, "notify"), route.notify))
        if self.default is not None and self.default not in self.targets:
            unknown.append((("default",), self.default))
        if unknown:
            raise UnknownTargets(unknown, sorted(self.targets))
        return self


class UnknownTargets(ValueError):
    """Routes naming targets that are not defined; carries the location of each offender."""

    def __init__(self, offenders: list[tuple[tuple, str]], known: list[str]):
        self.offenders = offenders
        self.known = known
        super().__init__("; ".join(f"unknown target {name!r}" for _, name in offenders))
