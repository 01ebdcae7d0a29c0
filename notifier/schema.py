"""Table definitions of the notifier database (the statements that use them are in `notifier/store/`).

Constraints added after revision 0001 carry explicit names: SQLite's batch mode can only create (and
later drop) named ones. Revision 0002 adds the on-call engine's tables and columns (design §3); 0003 the
indexes the webhook's reads need; 0004 the heartbeats table; 0005 the console's sessions;
0006 an incident's cause, the hold of a symptom's first page and a resolution's wait; 0007 makes every
row id and reference to one 64-bit on PostgreSQL (SQLite's already are), as the API accepts ids to 2^63-1;
0008 the failed console logins; 0009 the browsers subscribed to Web Push; 0010 the schedule overrides
made in the console.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()
# a row id, or a reference to one: BIGINT (PostgreSQL's INTEGER stops at 2^31-1 and answers larger ids with
# an error); SQLite's INTEGER is 64-bit already and must stay INTEGER for its rowid primary keys
RowId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

incidents = sa.Table(
    "incidents", metadata,
    sa.Column("id", RowId, primary_key=True),
    sa.Column("group_key", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("opened_at", sa.Float, nullable=False),
    sa.Column("resolved_at", sa.Float),
    sa.Column("labels", sa.Text, nullable=False),
    sa.Column("title", sa.Text, nullable=False),
    # the on-call engine (revision 0002): routing, acknowledgement, SLA; state shown to people is
    # resolved (status) > acknowledged (acknowledged_at) > triggered
    sa.Column("priority", sa.String(4)),
    sa.Column("team", sa.Text),
    sa.Column("policy", sa.Text),
    sa.Column("acknowledged_at", sa.Float),
    sa.Column("acknowledged_by", sa.Text),
    sa.Column("resolved_by", sa.Text),
    sa.Column("ack_due_at", sa.Float),
    sa.Column("resolve_due_at", sa.Float),
    sa.Column("ack_breached_at", sa.Float),
    sa.Column("resolve_breached_at", sa.Float),
    sa.Column("reopened", sa.Integer, nullable=False, server_default="0"),
    # causes and symptoms (revision 0006): the incident of the cause this one joined (no page of its
    # own), and until when a symptom's first page waits for its cause (engine/causes.py)
    sa.Column("cause_id", RowId),
    sa.Column("held_until", sa.Float),
    # a resolution waiting out `incidents.resolve_after` (flap damping, revision 0006; core/incidents.py)
    sa.Column("resolving_at", sa.Float),
    sa.Index("incidents_held", "held_until"),
    sa.Index("incidents_resolving", "resolving_at"),
    sa.Index("incidents_of_cause", "cause_id"),
    # a cause resolved in the last 15 minutes, looked for on a symptom's post (revision 0011)
    sa.Index("incidents_resolved", "resolved_at"),
    # at most one firing incident per group, even with two notifier processes on one database
    sa.Index("one_firing_incident_per_group", "group_key", unique=True,
             sqlite_where=sa.text("status = 'firing'"), postgresql_where=sa.text("status = 'firing'")),
    # the group's latest incident, read by every webhook post (revision 0003; before it, a table scan)
    sa.Index("incidents_of_group", "group_key", "id"),
)

incident_alerts = sa.Table(
    "incident_alerts", metadata,
    sa.Column("incident_id", RowId, sa.ForeignKey("incidents.id"), primary_key=True),
    sa.Column("alert_key", sa.Text, primary_key=True),  # fingerprint@startsAt: one firing of one alert
)

notifications = sa.Table(
    "notifications", metadata,
    sa.Column("id", RowId, primary_key=True),
    sa.Column("dedup_key", sa.String(64), nullable=False, unique=True),
    sa.Column("received_at", sa.Float, nullable=False),
    sa.Column("group_key", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("receiver", sa.Text, nullable=False),
    sa.Column("incident_id", RowId, sa.ForeignKey("incidents.id"), nullable=False),
    sa.Column("payload", sa.Text, nullable=False),
    # an incident's newest notification (what its pages say; revision 0003)
    sa.Index("notifications_of_incident", "incident_id", "id"),
)

deliveries = sa.Table(
    "deliveries", metadata,
    sa.Column("id", RowId, primary_key=True),
    # null for escalation pages (the engine sends them, not a notification)
    sa.Column("notification_id", RowId, sa.ForeignKey("notifications.id"), nullable=True),
    sa.Column("incident_id", RowId, sa.ForeignKey("incidents.id"), nullable=False),
    sa.Column("target", sa.Text, nullable=False),  # the person key
    sa.Column("channel_index", sa.Integer, nullable=False),
    sa.Column("channel_type", sa.String(32), nullable=False),
    sa.Column("page_status", sa.String(16), nullable=False),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),  # pending | sent | failed
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", sa.Float, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("sent_at", sa.Float),
    sa.Column("last_error", sa.Text),
    sa.Column("tier", sa.Integer),  # 0-based escalation tier; null for legacy pages
    # one row per (incident, round, tier, repeat, person, contact): two notifiers never enqueue one page twice
    sa.Column("page_key", sa.Text),
    sa.Column("contact", sa.Text),  # the contact's name in the person's `contacts`
    sa.Column("digest_of", RowId),  # this row was folded into digest delivery N
    sa.UniqueConstraint("notification_id", "target", "channel_index"),
    sa.Index("deliveries_due", "state", "next_attempt_at"),
    sa.Index("deliveries_page_key", "page_key", unique=True),
    sa.Index("deliveries_of_incident", "incident_id"),
)

delivery_attempts = sa.Table(
    "delivery_attempts", metadata,
    sa.Column("id", RowId, primary_key=True),
    sa.Column("delivery_id", RowId, sa.ForeignKey("deliveries.id"), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Column("ok", sa.Boolean, nullable=False),
    sa.Column("error", sa.Text),
    sa.Column("duration_s", sa.Float, nullable=False),
)

inbox_pages = sa.Table(
    "inbox_pages", metadata,
    sa.Column("id", RowId, primary_key=True),
    sa.Column("delivery_id", RowId, sa.ForeignKey("deliveries.id"), unique=True),
    sa.Column("time", sa.Float, nullable=False),
    sa.Column("recipient", sa.Text, nullable=False),
    sa.Column("channel", sa.String(32), nullable=False),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("incident_id", RowId, sa.ForeignKey("incidents.id")),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("labels", sa.Text, nullable=False),
    sa.Column("tier", sa.Integer),
)

escalations = sa.Table(
    "escalations", metadata,
    sa.Column("incident_id", RowId, sa.ForeignKey("incidents.id", name="fk_escalations_incident"),
              primary_key=True),
    sa.Column("policy", sa.Text, nullable=False),
    sa.Column("tier", sa.Integer, nullable=False),
    sa.Column("repeat", sa.Integer, nullable=False),
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("mode", sa.String(16), nullable=False),  # escalate | repage
    sa.Column("due_at", sa.Float, nullable=False),
    sa.Index("escalations_due", "due_at"),
)

incident_events = sa.Table(
    "incident_events", metadata,
    sa.Column("id", RowId, primary_key=True),
    sa.Column("incident_id", RowId, sa.ForeignKey("incidents.id", name="fk_incident_events_incident"),
              nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("actor", sa.Text),
    sa.Column("detail", sa.Text, nullable=False),  # a JSON object
    sa.Index("incident_events_of_incident", "incident_id", "id"),
)

maintenance_windows = sa.Table(
    "maintenance_windows", metadata,
    sa.Column("id", RowId, primary_key=True),
    sa.Column("matchers", sa.Text, nullable=False),  # JSON object label -> value
    sa.Column("starts_at", sa.Float, nullable=False),
    sa.Column("ends_at", sa.Float, nullable=False),
    sa.Column("reason", sa.Text),
    sa.Column("created_by", sa.Text),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("ended_at", sa.Float),
)

link_uses = sa.Table(
    "link_uses", metadata,
    sa.Column("nonce", sa.String(64), primary_key=True),
    sa.Column("used_at", sa.Float, nullable=False),
    sa.Column("incident_id", RowId, nullable=False),
    sa.Column("action", sa.String(16), nullable=False),
)

# one row per heartbeat the notifier watches (revision 0004; `store/heartbeats.py`, `engine/heartbeat.py`)
heartbeats = sa.Table(
    "heartbeats", metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("watching_since", sa.Float, nullable=False),  # first watched: the deadline counts from here until a beat
    sa.Column("last_seen_at", sa.Float),
    sa.Column("beats", sa.Integer, nullable=False, server_default="0"),
    sa.Column("missing_since", sa.Float),  # the deadline that passed unheard (the incident's start); null: alive
    sa.Column("incident_id", RowId, sa.ForeignKey("incidents.id", name="fk_heartbeats_incident")),
)

# the web console's logins (revision 0005; `store/console_sessions.py`): the cookie holds a random token,
# the table only its SHA-256, so a copy of the database logs nobody in; a deleted row is a revoked session
console_sessions = sa.Table(
    "console_sessions", metadata,
    sa.Column("token_sha256", sa.String(64), primary_key=True),
    sa.Column("username", sa.Text, nullable=False),
    sa.Column("csrf", sa.String(64), nullable=False),  # the session's CSRF token, in every console form
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("last_seen_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Index("console_sessions_expiry", "expires_at"),
)

# failed console logins (revision 0008; `store/login_failures.py`), one row each under an account's key
# (`user:NAME`) and the client's (`client:ADDRESS`), shared by every notifier on the database
login_failures = sa.Table(
    "login_failures", metadata,
    sa.Column("id", RowId, primary_key=True),
    sa.Column("key", sa.String(300), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Index("login_failures_by_key", "key", "at"),
    sa.Index("login_failures_by_time", "at"),
)


# browsers subscribed to a person's Web Push pages (revision 0009; `store/push_subscriptions.py`): the
# push service's endpoint and the keys the page is encrypted with (RFC 8291), one row per endpoint
push_subscriptions = sa.Table(
    "push_subscriptions", metadata,
    sa.Column("id", RowId, primary_key=True),
    sa.Column("person", sa.String(200), nullable=False),
    sa.Column("endpoint", sa.String(2000), nullable=False),
    sa.Column("p256dh", sa.String(200), nullable=False),
    sa.Column("auth", sa.String(100), nullable=False),
    sa.Column("device", sa.String(300), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("last_sent_at", sa.Float),
    sa.UniqueConstraint("endpoint", name="push_subscriptions_endpoint"),
    sa.Index("push_subscriptions_by_person", "person"),
)


# schedule overrides made in the console (revision 0010; `store/schedule_overrides.py`): `person` covers
# `schedule` from `start_at` to `end_at` (UNIX seconds), instead of `replaces`; cancelled ones are kept
schedule_overrides = sa.Table(
    "schedule_overrides", metadata,
    sa.Column("id", RowId, primary_key=True),
    sa.Column("schedule", sa.String(200), nullable=False),
    sa.Column("person", sa.String(200), nullable=False),
    sa.Column("start_at", sa.Float, nullable=False),
    sa.Column("end_at", sa.Float, nullable=False),
    sa.Column("replaces", sa.String(200)),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("created_by", sa.String(200), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("cancelled_by", sa.String(200)),
    sa.Column("cancelled_at", sa.Float),
    sa.Index("schedule_overrides_by_end", "end_at"),
)
