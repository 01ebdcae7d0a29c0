"""Incidents by resolution time (`incidents_resolved`): a symptom with no firing cause looks for a cause
resolved in the last 15 minutes (engine/causes.py) on every post; without the index that read walked
every incident the store ever kept.

Revision ID: 0011
Revises: 0010
Created: 2026-12-07 06:00:00

Upgrade only: vigil never downgrades a database (restore a backup to go back).
"""

from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('incidents_resolved', 'incidents', ['resolved_at'], unique=False)
