"""One-click link uses: all SQL on `link_uses`. A link acts once: its nonce is stored when it does."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from vigil.notifier.schema import link_uses
from vigil.notifier.store.engine import reading


class LinkUses:
    def __init__(self, engine: sa.Engine):
        self._engine = engine

    def claim(self, nonce: str, incident_id: int, action: str, now: float) -> bool:
        """Mark the link with `nonce` used; False if it was used before (by anyone, on any notifier)."""
        try:
            with self._engine.begin() as conn:
                conn.execute(link_uses.insert().values(nonce=nonce, used_at=now, incident_id=incident_id,
                                                       action=action))
            return True
        except IntegrityError:
            return False

    def release(self, nonce: str) -> None:
        """Forget a claim whose action could not run (the server failed): the link may be used again."""
        with self._engine.begin() as conn:
            conn.execute(link_uses.delete().where(link_uses.c.nonce == nonce))

    def used_at(self, nonce: str) -> float | None:
        with reading(self._engine) as conn:
            return conn.execute(sa.select(link_uses.c.used_at).where(link_uses.c.nonce == nonce)).scalar()
