"""The browsers subscribed to a person's Web Push pages (`push_subscriptions`): one row per push
service endpoint, with the keys its pages are encrypted with (RFC 8291).

Revision ID: 0009
Revises: 0008
Created: 2026-12-06 18:10:00

Upgrade only: vigil never downgrades a database (restore a backup to go back).
"""

from alembic import op
import sqlalchemy as sa

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'push_subscriptions',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('person', sa.String(length=200), nullable=False),
        sa.Column('endpoint', sa.String(length=2000), nullable=False),
        sa.Column('p256dh', sa.String(length=200), nullable=False),
        sa.Column('auth', sa.String(length=100), nullable=False),
        sa.Column('device', sa.String(length=300), nullable=False),
        sa.Column('created_at', sa.Float(), nullable=False),
        sa.Column('last_sent_at', sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('endpoint', name='push_subscriptions_endpoint'),
    )
    op.create_index('push_subscriptions_by_person', 'push_subscriptions', ['person'], unique=False)
