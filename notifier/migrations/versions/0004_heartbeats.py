"""The heartbeats table: when each heartbeat the notifier watches (the Watchdog's, an external
dead-man's switch) was last heard, and the incident opened while it is missing.

Revision ID: 0004
Revises: 0003
Created: 2026-11-23 19:05:13.666111

Upgrade only: vigil never downgrades a database (restore a backup to go back). Runs in one transaction
with the other pending revisions; on SQLite foreign keys are checked after it, so use
`op.batch_alter_table` for anything ALTER TABLE cannot do there.
"""

from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('heartbeats',
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('watching_since', sa.Float(), nullable=False),
    sa.Column('last_seen_at', sa.Float(), nullable=True),
    sa.Column('beats', sa.Integer(), server_default='0', nullable=False),
    sa.Column('missing_since', sa.Float(), nullable=True),
    sa.Column('incident_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['incident_id'], ['incidents.id'], name='fk_heartbeats_incident'),
    sa.PrimaryKeyConstraint('name')
    )
