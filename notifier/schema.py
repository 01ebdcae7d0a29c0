"""Table definitions of the notifier database (the statements that use them are in store.py)."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

incidents = sa.Table(
    "incidents", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("group_key", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("opened_at", sa.Float, nullable=False),
    sa.Column("resolved_at", sa.Float),
    sa.Column("labels", sa.Text, nullable=False),
    sa.Column("title", sa.Text, nullable=False),
    # at most one firing incident per group, even with two notifier processes on one database
    sa.Index("one_firing_incident_per_group", "group_key", unique=True,
             sqlite_where=sa.text("status = 'firing'"), postgresql_where=sa.text("status = 'firing'")),
)

incident_alerts = sa.Table(
    "incident_alerts", metadata,
    sa.Column("incident_id", sa.Integer, sa.ForeignKey("incidents.id"), primary_key=True),
    sa.Column("alert_key", sa.Text, primary_key=True),  # fingerprint@startsAt: one firing of one alert
)

notifications = sa.Table(
    "notifications", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("dedup_key", sa.String(64), nullable=False, unique=True),
    sa.Column("received_at", sa.Float, nullable=False),
    sa.Column("group_key", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("receiver", sa.Text, nullable=False),
    sa.Column("incident_id", sa.Integer, sa.ForeignKey("incidents.id"), nullable=False),
    sa.Column("payload", sa.Text, nullable=False),
)

deliveries = sa.Table(
    "deliveries", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("notification_id", sa.Integer, sa.ForeignKey("notifications.id"), nullable=False),
    sa.Column("incident_id", sa.Integer, sa.ForeignKey("incidents.id"), nullable=False),
    sa.Column("target", sa.Text, nullable=False),
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
    sa.UniqueConstraint("notification_id", "target", "channel_index"),
    sa.Index("deliveries_due", "state", "next_attempt_at"),
)

delivery_attempts = sa.Table(
    "delivery_attempts", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("delivery_id", sa.Integer, sa.ForeignKey("deliveries.id"), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Column("ok", sa.Boolean, nullable=False),
    sa.Column("error", sa.Text),
    sa.Column("duration_s", sa.Float, nullable=False),
)

inbox_pages = sa.Table(
    "inbox_pages", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("delivery_id", sa.Integer, sa.ForeignKey("deliveries.id"), unique=True),
    sa.Column("time", sa.Float, nullable=False),
    sa.Column("recipient", sa.Text, nullable=False),
    sa.Column("channel", sa.String(32), nullable=False),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("incident_id", sa.Integer, sa.ForeignKey("incidents.id")),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("labels", sa.Text, nullable=False),
)
