"""Schedule overrides made in the console ("cover me", "take this shift"): `schedule_overrides`, one
row each, kept when cancelled (who and when), read by every notifier on the database.

Revision ID: 0010
Revises: 0009
Created: 2026-12-06 18:00:00

Upgrade only: vigil never downgrades a database (restore a backup to go back).
"""

from alembic import op
import sqlalchemy as sa

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'schedule_overrides',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('schedule', sa.String(length=200), nullable=False),
        sa.Column('person', sa.String(length=200), nullable=False),
        sa.Column('start_at', sa.Float(), nullable=False),
        sa.Column('end_at', sa.Float(), nullable=False),
        sa.Column('replaces', sa.String(length=200), nullable=True),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('created_by', sa.String(length=200), nullable=False),
        sa.Column('created_at', sa.Float(), nullable=False),
        sa.Column('cancelled_by', sa.String(length=200), nullable=True),
        sa.Column('cancelled_at', sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('schedule_overrides_by_end', 'schedule_overrides', ['end_at'], unique=False)
