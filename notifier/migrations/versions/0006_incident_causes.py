"""Causes and symptoms: an incident that joined the incident of its cause (`cause_id`, no page of its
own), how long a symptom's first page is held for a cause that may still fire (`held_until`), and when a
resolution that waits out `incidents.resolve_after` takes effect (`resolving_at`).

Revision ID: 0006
Revises: 0005
Created: 2026-12-06 12:10:00

Upgrade only: vigil never downgrades a database (restore a backup to go back). Runs in one transaction
with the other pending revisions; on SQLite foreign keys are checked after it, so use
`op.batch_alter_table` for anything ALTER TABLE cannot do there.
"""

from alembic import op
import sqlalchemy as sa

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('incidents', schema=None) as batch_op:
        batch_op.add_column(sa.Column('cause_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('held_until', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('resolving_at', sa.Float(), nullable=True))
        batch_op.create_index('incidents_held', ['held_until'], unique=False)
        batch_op.create_index('incidents_of_cause', ['cause_id'], unique=False)
        batch_op.create_index('incidents_resolving', ['resolving_at'], unique=False)
