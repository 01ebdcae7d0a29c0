"""Failed console logins in the database (`login_failures`), so the lockout is shared by every notifier
on it and survives a restart: one row per failure under the account's key and the client's.

Revision ID: 0008
Revises: 0007
Created: 2026-12-06 15:50:00

Upgrade only: vigil never downgrades a database (restore a backup to go back). Runs in one transaction
with the other pending revisions; on SQLite foreign keys are checked after it, so use
`op.batch_alter_table` for anything ALTER TABLE cannot do there.
"""

from alembic import op
import sqlalchemy as sa

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'login_failures',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('key', sa.String(length=300), nullable=False),
        sa.Column('at', sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('login_failures_by_key', 'login_failures', ['key', 'at'], unique=False)
    op.create_index('login_failures_by_time', 'login_failures', ['at'], unique=False)
