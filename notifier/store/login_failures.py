"""Failed console logins, in the database so every notifier sharing it counts the same (the HA profile's
two notifiers, a restart): all SQL on `login_failures`.

A row is one failed login under one `key`: an account (`user:NAME`, one key however the name was
typed; the API token's login is one account) or a client (`client:ADDRESS`). `recent(key, since)`
counts and dates them; rows older than the window are purged as new ones are written.
"""

from __future__ import annotations

import sqlalchemy as sa

from vigil.notifier.schema import login_failures
from vigil.notifier.store.engine import reading


class LoginFailures:
    def __init__(self, engine: sa.Engine):
        self._engine = engine

    def recent(self, key: str, since: float) -> tuple[int, float | None]:
        """How many failures `key` had after `since`, and the oldest of them."""
        with reading(self._engine) as conn:
            row = conn.execute(sa.select(sa.func.count(), sa.func.min(login_failures.c.at)).where(
                login_failures.c.key == key, login_failures.c.at > since)).one()
        return int(row[0]), row[1]

    def add(self, keys: list[str], now: float, forget_before: float) -> None:
        """A failure under each of `keys` at `now`; failures before `forget_before` are dropped."""
        with self._engine.begin() as conn:
            conn.execute(login_failures.delete().where(login_failures.c.at <= forget_before))
            conn.execute(login_failures.insert(), [{"key": key, "at": now} for key in keys])

    def clear(self, key: str) -> None:
        with self._engine.begin() as conn:
            conn.execute(login_failures.delete().where(login_failures.c.key == key))
