"""Alertmanager webhook payload, version "4" (field notes §2).

Unknown fields are accepted and kept (newer Alertmanagers add `notification_reason`, `routeLabels`…).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from vigil.common.times import ZERO_TIME

AlertStatus = Literal["firing", "resolved"]
_DATETIME = TypeAdapter(datetime)
MAX_TITLE_CHARS = 200  # a page title is an SMS line or a phone's notification, not a document


def _rfc3339_in_range(value: str) -> str:
    """`value` is an RFC 3339 time that exists in UTC (`0001-01-01T00:00:00+01:00` does not)."""
    moment = _DATETIME.validate_python(value)
    try:
        moment.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError("time is outside the years 1 to 9999 once converted to UTC") from None
    return value


def naive_time(value: str) -> bool:
    """Is `value`, a time the model accepted, one without a UTC offset (no `Z`, no `±hh:mm`)?"""
    return _DATETIME.validate_python(value).tzinfo is None


def shorten(text: str, most: int) -> str:
    """`text` cut to at most `most` characters, with an ellipsis when cut."""
    return text if len(text) <= most else text[:most - 1] + "…"


class WebhookAlert(BaseModel):
    """One alert of the group, as Alertmanager sends it."""

    model_config = ConfigDict(extra="allow")

    status: AlertStatus
    labels: dict[str, str]
    annotations: dict[str, str] = Field(default_factory=dict)
    # times are kept exactly as sent (strings) and checked to be RFC 3339; `starts_at` is the parsed one
    startsAt: str = Field(json_schema_extra={"format": "date-time"})
    # firing alerts carry Alertmanager's zero time; kept as sent (a string) so the identity is exact
    endsAt: str = Field(default=ZERO_TIME, json_schema_extra={"format": "date-time"})
    generatorURL: str = ""
    fingerprint: str = Field(min_length=1)

    @field_validator("startsAt", "endsAt")
    @classmethod
    def _rfc3339(cls, value: str) -> str:
        return _rfc3339_in_range(value)

    @property
    def starts_at(self) -> datetime:
        return _DATETIME.validate_python(self.startsAt)

    def firing_key(self) -> str:
        """Identifies one firing of one alert (fingerprint + start, UTC, milliseconds).

        Milliseconds because Alertmanager's API v2 rounds times to them while the webhook sends
        nanoseconds; reconciliation must recognise the same firing from both.
        """
        start = self.starts_at.astimezone(timezone.utc)
        return f"{self.fingerprint}@{start.replace(microsecond=start.microsecond // 1000 * 1000).isoformat()}"


class WebhookPayload(BaseModel):
    """The body Alertmanager POSTs to a webhook receiver."""

    model_config = ConfigDict(extra="allow")

    version: Literal["4"]
    groupKey: str = Field(min_length=1)
    truncatedAlerts: int = Field(default=0, ge=0, le=2**31 - 1)
    status: AlertStatus
    receiver: str
    groupLabels: dict[str, str] = Field(default_factory=dict)
    commonLabels: dict[str, str] = Field(default_factory=dict)
    commonAnnotations: dict[str, str] = Field(default_factory=dict)
    externalURL: str = ""
    alerts: list[WebhookAlert] = Field(min_length=1)

    def dedup_key(self) -> str:
        """Same group, status and alert states → same key: a repeated delivery of one notification."""
        identity = {
            "groupKey": self.groupKey,
            "status": self.status,
            "alerts": sorted(
                [a.fingerprint, a.startsAt, a.endsAt, a.status] for a in self.alerts
            ),
        }
        canonical = _CANONICAL.encode(identity)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def firing_keys(self) -> set[str]:
        return {alert.firing_key() for alert in self.alerts if alert.status == "firing"}

    def title(self) -> str:
        """One line a person reads: `GpuLost node=node-2 gpu=3 — summary`, never the raw group key.

        Alert names and node/GPU come from the alerts themselves, so a group whose common labels lack
        them (grouped by node only, say) still says what fired where.
        """
        names = _distinct(alert.labels.get("alertname") for alert in self.alerts)
        where = []
        for key in ("node", "gpu"):
            values = _distinct(alert.labels.get(key) for alert in self.alerts)
            if values:
                where.append(f"{key}={_listed(values)}")
            if len(values) > 1:
                break  # GPUs of several nodes: their indexes alone would mislead
        summary = self.commonAnnotations.get("summary", "") or self._first_summary()
        parts = (_listed(names, ", ") or "alert group", *where, f"— {summary}" if summary else "")
        return shorten(" ".join(part for part in parts if part), MAX_TITLE_CHARS)

    def _first_summary(self) -> str:
        """Where the alerts' summaries differ (Alertmanager then sends no common one: one disk's three
        SMART attributes, say), the first firing alert's, saying how many more there are."""
        summaries = _distinct(alert.annotations.get("summary") for alert in self.alerts if alert.status == "firing") \
            or _distinct(alert.annotations.get("summary") for alert in self.alerts)
        if not summaries:
            return ""
        return summaries[0] + (f" (+{len(summaries) - 1} more)" if len(summaries) > 1 else "")


# the dedup key's canonical JSON: one encoder for every post (`json.dumps` with options builds one per call)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def _distinct(values) -> list[str]:
    return sorted({value for value in values if value})


def _listed(values: list[str], separator: str = ",", most: int = 3) -> str:
    shown = separator.join(values[:most])
    return shown + (f"{separator}+{len(values) - most} more" if len(values) > most else "")
