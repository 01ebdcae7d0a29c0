"""Indexes for the webhook's reads: a group's latest incident (`incidents (group_key, id)`), read on
every post, and an incident's newest notification (`notifications (incident_id, id)`), read for every
page; both were table scans that grew with the database.

Revision ID: 0003
Revises: 0002
Created: 2026-11-23 16:38:39.328104

Upgrade only: vigil never downgrades a database (restore a backup to go back). Runs in one transaction
with the other pending revisions; on SQLite foreign keys are checked after it, so use
`op.batch_alter_table` for anything ALTER TABLE cannot do there.
"""

from alembic import op
import sqlalchemy as sa

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('incidents', schema=None) as batch_op:
        batch_op.create_index('incidents_of_group', ['group_key', 'id'], unique=False)

    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.create_index('notifications_of_incident', ['incident_id', 'id'], unique=False)

