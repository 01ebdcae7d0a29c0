"""What a heartbeat is: a name, how long it may stay silent, and the labels of the incident opened when it
does (`vigil notifier serve --heartbeat NAME=TIMEOUT[,LABEL=VALUE...]`).

The incident's alert is `HeartbeatMissing` with `heartbeat=NAME`, `severity=critical` unless the spec
says otherwise, and the spec's labels: the on-call file's routes see them like any alert's labels, so a
route matching `alertname: HeartbeatMissing` (or `heartbeat: NAME`, or a `team`) picks the policy, and a
`priority` label sets the priority directly (else the severity maps to one).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from vigil.common.durations import EXAMPLES, format_duration, parse_duration

HEARTBEAT_ALERT = "HeartbeatMissing"
DEFAULT_SEVERITY = "critical"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED_LABELS = ("alertname", "heartbeat")
FORMAT = "NAME=TIMEOUT[,LABEL=VALUE...] (e.g. watchdog=5m,team=platform)"
# a longer timeout is a mistake, and its deadline would lie past what a timestamp can show
MAX_TIMEOUT_S = 365 * 86400.0


class HeartbeatSpec(BaseModel):
    """One heartbeat the notifier watches."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    timeout_s: float
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("timeout_s")
    @classmethod
    def _timeout(cls, seconds: float) -> float:
        if not 0 < seconds <= MAX_TIMEOUT_S:
            raise ValueError(f"the timeout must be more than 0 and at most {format_duration(MAX_TIMEOUT_S)}")
        return seconds

    @field_validator("labels")
    @classmethod
    def _label_names(cls, labels: dict[str, str]) -> dict[str, str]:
        for name in labels:
            if not _LABEL_NAME.match(name):
                raise ValueError(f"{name!r} is not a label name")
            if name in RESERVED_LABELS:
                raise ValueError(f"the label {name!r} is set by the notifier")
        return labels

    def alert_labels(self) -> dict[str, str]:
        """The labels of the incident's alert."""
        return {"alertname": HEARTBEAT_ALERT, "heartbeat": self.name, "severity": DEFAULT_SEVERITY, **self.labels}


def parse_heartbeat(text: str) -> HeartbeatSpec:
    """`NAME=TIMEOUT[,LABEL=VALUE...]` as a spec; ValueError saying what is wrong."""
    head, *pairs = [part.strip() for part in text.split(",")]
    name, sep, timeout = head.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"{text!r} is not {FORMAT}")
    try:
        seconds = parse_duration(timeout.strip())
    except ValueError:
        raise ValueError(f"heartbeat {name.strip()!r}: timeout {timeout.strip()!r} is not a duration ({EXAMPLES})") from None
    labels = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"heartbeat {name.strip()!r}: {pair!r} is not LABEL=VALUE")
        labels[key.strip()] = value.strip()
    try:
        return HeartbeatSpec(name=name.strip(), timeout_s=seconds, labels=labels)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}"
                             for e in exc.errors()) if hasattr(exc, "errors") else str(exc)
        raise ValueError(f"heartbeat {name.strip()!r}: {problems}") from None
