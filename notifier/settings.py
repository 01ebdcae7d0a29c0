"""Notifier settings: one validated object that refuses unsafe configurations before anything starts.

No token means no start, on any address: every `/api/...` route needs the bearer token, so a notifier
on a non-loopback address can never be driven without it (the CLI still warns that plain HTTP carries
the token in clear there).
"""

from __future__ import annotations

import ipaddress
import math
import stat
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from vigil.notifier.heartbeat_spec import HeartbeatSpec

LOOPBACK_NAMES = {"localhost"}
MIN_TOKEN_LENGTH = 16
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_RESOLVE_GONE_AFTER_S = 600.0  # an incident none of whose alerts Alertmanager held for this long resolves
MIN_TOKEN_BITS = 64  # estimated from the token's own characters; `secrets.token_urlsafe(32)` has ~190
TOKEN_HINT = 'generate one with: python3 -c "import secrets; print(secrets.token_urlsafe(32))"'


class NotifierSettings(BaseModel):
    """Everything `vigil notifier serve` needs; built from its flags."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=9095, ge=1, le=65535)
    db_url: str = "sqlite:///notifier.db"
    token: str = Field(repr=False)
    oncall_config: Path
    alertmanager_url: str | None = None
    # reconcile only Alertmanager groups routed to this receiver (None: every group)
    alertmanager_receiver: str | None = None
    # a firing incident none of whose alerts Alertmanager holds for this long is resolved (their resolution
    # was lost, e.g. during `vigil down`: `reconcile_resolve.py`); Alertmanager is asked every `..._check_s`
    resolve_gone_after_s: float = Field(default=DEFAULT_RESOLVE_GONE_AFTER_S, gt=0)
    resolve_gone_check_s: float = Field(default=30.0, gt=0)
    # the inbox channel posts to this notifier; by default to the address it listens on
    public_url: str | None = None
    # firing pages link to the dashboard of what broke in this Grafana (the shipped vigil dashboards)
    grafana_url: str | None = None
    # outbox worker: how often it looks for due deliveries, and the retry schedule
    poll_interval_s: float = Field(default=0.5, gt=0)
    retry_base_s: float = Field(default=1.0, gt=0)
    retry_max_s: float = Field(default=300.0, gt=0)
    max_attempts: int = Field(default=8, ge=1)
    # an escalation page that failed this many times goes to the person's next contact instead
    fallback_after_attempts: int = Field(default=3, ge=1)
    # throttle: default pages per minute per apprise channel (`max_per_minute` in the on-call config
    # overrides it); the rest wait, never dropped. The local inbox is not throttled.
    max_pages_per_minute: int = Field(default=30, ge=1)
    # request bodies larger than this are refused with 413 before they are read whole (Alertmanager's
    # biggest groups are a few hundred KiB; `max_alerts` bounds them on its side)
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1024)
    # heartbeats to watch (`POST /api/v1/heartbeat/{name}`): an incident opens when one stays silent
    # past its timeout (`engine/heartbeat.py`)
    heartbeats: tuple[HeartbeatSpec, ...] = ()
    # postmortems (the console's button): the Prometheus to chart the incident's metrics from (None: no
    # charts), and a folder of templates that replace the shipped ones
    prometheus_url: str | None = None
    postmortem_templates: Path | None = None
    # the web console: a folder of Jinja2 templates that replace the shipped pages of the same name
    console_templates: Path | None = None
    # slow and hostile clients (`slow_clients.py`): each request's headers and body must arrive within
    # these, and one client address may hold this many connections
    header_timeout_s: float = Field(default=10.0, gt=0)
    body_timeout_s: float = Field(default=30.0, gt=0)
    max_connections_per_client: int = Field(default=100, ge=1)
    # Web Push (`delivery/webpush.py`): the VAPID key's PEM file, made there on first start (None: push
    # off), and the contact the push services may write to about this sender (RFC 8292's `sub`)
    vapid_key_file: Path | None = None
    vapid_subject: str = "mailto:root@localhost"

    @field_validator("token")
    @classmethod
    def _strong_token(cls, token: str) -> str:
        token = token.strip()
        if not token:
            raise ValueError("the webhook token is empty: refusing to start without authentication")
        if len(token) < MIN_TOKEN_LENGTH:
            raise ValueError(f"the webhook token is shorter than {MIN_TOKEN_LENGTH} characters; {TOKEN_HINT}")
        if token_bits(token) < MIN_TOKEN_BITS:
            raise ValueError(f"the webhook token is too predictable (about {token_bits(token):.0f} bits, "
                             f"at least {MIN_TOKEN_BITS} needed); {TOKEN_HINT}")
        return token

    @field_validator("heartbeats")
    @classmethod
    def _distinct_heartbeats(cls, heartbeats: tuple[HeartbeatSpec, ...]) -> tuple[HeartbeatSpec, ...]:
        names = [spec.name for spec in heartbeats]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"heartbeat {', '.join(map(repr, twice))} is configured twice")
        return heartbeats

    @field_validator("vapid_subject")
    @classmethod
    def _vapid_contact(cls, subject: str) -> str:
        if not subject.startswith(("mailto:", "https://")):
            raise ValueError("must be a mailto: or https:// URL (RFC 8292: whom the push service may contact)")
        return subject

    @field_validator("db_url")
    @classmethod
    def _known_database(cls, url: str) -> str:
        if not url.startswith(("sqlite:///", "postgresql://", "postgresql+psycopg://")):
            raise ValueError("--db must be sqlite:///PATH or postgresql://…")
        return url

    @field_validator("alertmanager_url", "public_url", "prometheus_url", "grafana_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return url.rstrip("/") if url else url

    @property
    def own_url(self) -> str:
        """Base URL at which this notifier reaches itself (for the inbox channel)."""
        if self.public_url:
            return self.public_url
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_bits(token: str) -> float:
    """An upper estimate of the token's entropy: its length times the Shannon entropy of its characters.

    It catches the weak tokens people type (`aaaaaaaaaaaaaaaa`, `passwordpassword`, `0000111122223333`);
    it cannot prove a token random, so generate tokens rather than invent them.
    """
    counts = Counter(token)
    per_char = -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())
    return per_char * len(token)


def others_can_read(path: Path) -> bool:
    """Whether the file's mode lets its group or anyone else read it."""
    return bool(path.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH))


def read_token_file(path: Path) -> str:
    """The bearer token: the first line of `path` (raises OSError / ValueError with a clear reason)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or not lines[0].strip():
        raise ValueError(f"{path}: the token file is empty")
    return lines[0].strip()
