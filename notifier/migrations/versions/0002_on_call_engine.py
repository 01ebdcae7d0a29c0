"""The on-call engine (issue 8): escalations, the incident timeline, maintenance windows, one-click
link uses; routing/acknowledgement/SLA columns on incidents; tier and page identity on deliveries.

`deliveries.notification_id` becomes nullable (escalation pages belong to no notification), which on
SQLite rebuilds `deliveries` in batch mode (its rows, ids and unique key are copied).

Revision ID: 0002
Revises: 0001
Created: 2026-11-23 14:24:37.849446

Upgrade only: vigil never downgrades a database (restore a backup to go back). Runs in one transaction
with the other pending revisions; on SQLite foreign keys are checked after it, so use
`op.batch_alter_table` for anything ALTER TABLE cannot do there.
"""

from alembic import op
import sqlalchemy as sa

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('link_uses',
    sa.Column('nonce', sa.String(length=64), nullable=False),
    sa.Column('used_at', sa.Float(), nullable=False),
    sa.Column('incident_id', sa.Integer(), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.PrimaryKeyConstraint('nonce')
    )
    op.create_table('maintenance_windows',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('matchers', sa.Text(), nullable=False),
    sa.Column('starts_at', sa.Float(), nullable=False),
    sa.Column('ends_at', sa.Float(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('created_by', sa.Text(), nullable=True),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('ended_at', sa.Float(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('escalations',
    sa.Column('incident_id', sa.Integer(), nullable=False),
    sa.Column('policy', sa.Text(), nullable=False),
    sa.Column('tier', sa.Integer(), nullable=False),
    sa.Column('repeat', sa.Integer(), nullable=False),
    sa.Column('round', sa.Integer(), nullable=False),
    sa.Column('mode', sa.String(length=16), nullable=False),
    sa.Column('due_at', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['incident_id'], ['incidents.id'], name='fk_escalations_incident'),
    sa.PrimaryKeyConstraint('incident_id')
    )
    with op.batch_alter_table('escalations', schema=None) as batch_op:
        batch_op.create_index('escalations_due', ['due_at'], unique=False)

    op.create_table('incident_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('incident_id', sa.Integer(), nullable=False),
    sa.Column('at', sa.Float(), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('actor', sa.Text(), nullable=True),
    sa.Column('detail', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['incident_id'], ['incidents.id'], name='fk_incident_events_incident'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('incident_events', schema=None) as batch_op:
        batch_op.create_index('incident_events_of_incident', ['incident_id', 'id'], unique=False)

    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.add_column(sa.Column('tier', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('page_key', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('contact', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('digest_of', sa.Integer(), nullable=True))
        batch_op.alter_column('notification_id',
               existing_type=sa.INTEGER(),
               nullable=True)
        batch_op.create_index('deliveries_of_incident', ['incident_id'], unique=False)
        batch_op.create_index('deliveries_page_key', ['page_key'], unique=True)

    with op.batch_alter_table('inbox_pages', schema=None) as batch_op:
        batch_op.add_column(sa.Column('tier', sa.Integer(), nullable=True))

    with op.batch_alter_table('incidents', schema=None) as batch_op:
        batch_op.add_column(sa.Column('priority', sa.String(length=4), nullable=True))
        batch_op.add_column(sa.Column('team', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('policy', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('acknowledged_at', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('acknowledged_by', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('resolved_by', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('ack_due_at', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('resolve_due_at', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('ack_breached_at', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('resolve_breached_at', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('reopened', sa.Integer(), server_default='0', nullable=False))

