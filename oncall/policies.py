"""Escalation policies: ordered tiers, each paging schedules and people, waiting for an ack, repeating.

`repeat` has one meaning everywhere, as in GoAlert and PagerDuty: how many MORE times. A tier is paged
once and then `repeat` more times, `escalate_after` apart, before the next tier; after the last tier
the whole policy runs again `repeat` more times (or `until_acknowledged`). An acknowledged incident that
stays unresolved for `repage_acknowledged_after` has its acknowledgement expire and is paged again.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from vigil.oncall.notify_rules import Duration

DEFAULT_ESCALATE_AFTER_S = 300.0  # GoAlert's and Grafana OnCall's usual first wait: 5 minutes


def _rounds_value(value: object) -> object:
    if value == "until_acknowledged" or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise ValueError(f"{value!r}: repeat is a count of extra rounds (0 or more) or `until_acknowledged`")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TierEntry(_Strict):
    """Who a tier pages: whoever is on call in `schedule`, or `person`."""

    schedule: str | None = None
    person: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> "TierEntry":
        if (self.schedule is None) == (self.person is None):
            raise ValueError("each entry is {schedule: NAME} or {person: NAME}")
        return self


class Tier(_Strict):
    """One line of responders."""

    name: str | None = None
    notify: tuple[TierEntry, ...] = Field(min_length=1)
    escalate_after: Duration = DEFAULT_ESCALATE_AFTER_S
    repeat: int = Field(default=0, ge=0)  # pages after the first on this tier before the next tier


class Policy(_Strict):
    """Tiers in order, how often the whole policy runs, and when an acknowledgement expires."""

    tiers: tuple[Tier, ...] = Field(min_length=1)
    repeat: Annotated[Literal["until_acknowledged"] | int, BeforeValidator(_rounds_value)] = 0
    repage_acknowledged_after: Duration | None = None

    @property
    def rounds(self) -> int | None:
        """Total rounds of the whole policy; None: until acknowledged."""
        return None if self.repeat == "until_acknowledged" else self.repeat + 1
