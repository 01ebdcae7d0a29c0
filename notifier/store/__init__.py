"""Durable storage of the notifier, one module per concern, each holding all SQL on its tables:

- `notifications.py`: notifications and incidents (the webhook's ingest transaction);
- `outbox.py`: deliveries waiting to be sent and their send attempts;
- `inbox.py`: pages that arrived in the local inbox;
- `timeline.py`: the incident timeline (`incident_events`);
- `escalations.py`: pending escalations (the on-call engine's clock-driven steps);
- `incident_state.py`: the engine's incident columns (routing, acknowledgement, SLA);
- `heartbeats.py`: when each watched heartbeat was last heard, and its incident while missing;
- `console_sessions.py`: the web console's logins;
- `push_subscriptions.py`: the browsers subscribed to Web Push pages;
- `schedule_overrides.py`: schedule overrides made in the console.

SQLAlchemy Core, so one set of statements serves SQLite (default, WAL, synchronous=FULL: a commit is
on disk before the webhook is answered) and PostgreSQL (`postgresql://…`, driver psycopg 3).
Times are stored as UNIX seconds (float) and shown as RFC 3339 UTC. Tables: `notifier/schema.py`.
"""

from __future__ import annotations

from vigil.notifier.migrate import upgrade_database
from vigil.notifier.store.console_sessions import ConsoleSessions
from vigil.notifier.store.login_failures import LoginFailures
from vigil.notifier.store.engine import engine_for
from vigil.notifier.store.escalations import Escalations
from vigil.notifier.store.heartbeats import Heartbeats
from vigil.notifier.store.inbox import Inbox
from vigil.notifier.store.notifications import RECONCILED_PREFIX, IngestResult, Notifications
from vigil.notifier.store.outbox import Outbox
from vigil.notifier.store.push_subscriptions import PushSubscriptions
from vigil.notifier.store.schedule_overrides import ScheduleOverrides
from vigil.notifier.store.timeline import Timeline

__all__ = ["RECONCILED_PREFIX", "IngestResult", "Store", "engine_for"]


class Store:
    """The notifier's database: one engine, and a repository per concern sharing it."""

    def __init__(self, url: str):
        self.engine = engine_for(url)
        upgrade_database(self.engine)  # tables created or migrated to this vigil's schema
        self.outbox = Outbox(self.engine)
        self.notifications = Notifications(self.engine, self.outbox)
        self.inbox = Inbox(self.engine, self.outbox, self.notifications)
        self.timeline = Timeline(self.engine)
        self.escalations = Escalations(self.engine)
        self.heartbeats = Heartbeats(self.engine)
        self.console_sessions = ConsoleSessions(self.engine)
        self.login_failures = LoginFailures(self.engine)
        self.push_subscriptions = PushSubscriptions(self.engine)
        self.schedule_overrides = ScheduleOverrides(self.engine)

    def close(self) -> None:
        self.engine.dispose()
