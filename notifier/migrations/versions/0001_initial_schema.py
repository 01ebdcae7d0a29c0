"""The notifier's first schema, as vigil 0.1.0 created it with `metadata.create_all`.

Revision ID: 0001
Revises:
Created: 2026-11-23

Written out table by table on purpose: `notifier/schema.py` changes with later revisions, this must not.
A database created by vigil 0.1.0 (tables, no `alembic_version`) is checked against this revision and
stamped with it instead of running it.
"""

from alembic import op
import sqlalchemy as sa

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "incidents",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("group_key", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("opened_at", sa.Float, nullable=False),
        sa.Column("resolved_at", sa.Float),
        sa.Column("labels", sa.Text, nullable=False),
        sa.Column("title", sa.Text, nullable=False),
    )
    # at most one firing incident per group, even with two notifier processes on one database
    op.create_index("one_firing_incident_per_group", "incidents", ["group_key"], unique=True,
                    sqlite_where=sa.text("status = 'firing'"), postgresql_where=sa.text("status = 'firing'"))
    op.create_table(
        "incident_alerts",
        sa.Column("incident_id", sa.Integer, sa.ForeignKey("incidents.id"), primary_key=True),
        sa.Column("alert_key", sa.Text, primary_key=True),
    )
    op.create_table(
        "notifications",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("dedup_key", sa.String(64), nullable=False, unique=True),
        sa.Column("received_at", sa.Float, nullable=False),
        sa.Column("group_key", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("receiver", sa.Text, nullable=False),
        sa.Column("incident_id", sa.Integer, sa.ForeignKey("incidents.id"), nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
    )
    op.create_table(
        "deliveries",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("notification_id", sa.Integer, sa.ForeignKey("notifications.id"), nullable=False),
        sa.Column("incident_id", sa.Integer, sa.ForeignKey("incidents.id"), nullable=False),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("channel_index", sa.Integer, nullable=False),
        sa.Column("channel_type", sa.String(32), nullable=False),
        sa.Column("page_status", sa.String(16), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_attempt_at", sa.Float, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("sent_at", sa.Float),
        sa.Column("last_error", sa.Text),
        sa.UniqueConstraint("notification_id", "target", "channel_index"),
    )
    op.create_index("deliveries_due", "deliveries", ["state", "next_attempt_at"])
    op.create_table(
        "delivery_attempts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("delivery_id", sa.Integer, sa.ForeignKey("deliveries.id"), nullable=False),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("ok", sa.Boolean, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("duration_s", sa.Float, nullable=False),
    )
    op.create_table(
        "inbox_pages",
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
