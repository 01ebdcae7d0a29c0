"""The web console's sessions: one row per login (the SHA-256 of the cookie's token, the user, the
session's CSRF token, when it expires); logout and expiry delete the row, which revokes the cookie.

Revision ID: 0005
Revises: 0004
Created: 2026-11-23 21:48:52.628355

Upgrade only: vigil never downgrades a database (restore a backup to go back). Runs in one transaction
with the other pending revisions; on SQLite foreign keys are checked after it, so use
`op.batch_alter_table` for anything ALTER TABLE cannot do there.
"""

from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('console_sessions',
    sa.Column('token_sha256', sa.String(length=64), nullable=False),
    sa.Column('username', sa.Text(), nullable=False),
    sa.Column('csrf', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('last_seen_at', sa.Float(), nullable=False),
    sa.Column('expires_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('token_sha256')
    )
    with op.batch_alter_table('console_sessions', schema=None) as batch_op:
        batch_op.create_index('console_sessions_expiry', ['expires_at'], unique=False)

