"""The web console's sessions: all SQL on `console_sessions`.

The cookie carries a random token; the table keeps its SHA-256 only. A session lives `ttl_s` from login
and ends earlier when the user logs out (the row is deleted, so the cookie is worthless at once) or stays
idle longer than `idle_s`. Expired rows are purged at each login.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

import sqlalchemy as sa

from vigil.notifier.schema import console_sessions
from vigil.notifier.store.engine import reading

TOUCH_EVERY_S = 60.0  # last_seen_at is written at most once a minute per session, not on every request


@dataclass(frozen=True)
class Session:
    username: str
    csrf: str
    expires_at: float


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ConsoleSessions:
    def __init__(self, engine: sa.Engine, ttl_s: float = 12 * 3600, idle_s: float = 2 * 3600):
        self._engine = engine
        self.ttl_s, self.idle_s = ttl_s, idle_s

    def create(self, username: str, now: float) -> tuple[str, Session]:
        """A new session for `username`: (the cookie's token, the session)."""
        token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        session = Session(username, csrf, now + self.ttl_s)
        with self._engine.begin() as conn:
            conn.execute(console_sessions.delete().where(console_sessions.c.expires_at <= now))
            conn.execute(console_sessions.insert().values(token_sha256=_digest(token), username=username, csrf=csrf,
                                                          created_at=now, last_seen_at=now,
                                                          expires_at=session.expires_at))
        return token, session

    def get(self, token: str, now: float) -> Session | None:
        """The live session of `token` (None: unknown, logged out, expired or idle too long)."""
        key = _digest(token)
        with reading(self._engine) as conn:
            row = conn.execute(sa.select(console_sessions).where(console_sessions.c.token_sha256 == key)).first()
        if row is None or row.expires_at <= now or row.last_seen_at + self.idle_s <= now:
            return None
        if now - row.last_seen_at >= TOUCH_EVERY_S:
            with self._engine.begin() as conn:
                conn.execute(console_sessions.update().where(console_sessions.c.token_sha256 == key)
                             .values(last_seen_at=now))
        return Session(row.username, row.csrf, row.expires_at)

    def delete(self, token: str) -> None:
        with self._engine.begin() as conn:
            conn.execute(console_sessions.delete().where(console_sessions.c.token_sha256 == _digest(token)))

    def count(self, now: float) -> int:
        with reading(self._engine) as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(console_sessions)
                                .where(console_sessions.c.expires_at > now)).scalar()
