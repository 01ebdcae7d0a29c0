"""Every row id and reference to one is 64-bit on PostgreSQL: its INTEGER stops at 2^31-1, while the API
(and the signed links) take ids to 2^63-1, so an id from 2^31 was a database error (a 500) on nine routes.
SQLite's INTEGER is 64-bit already: nothing changes there.

Revision ID: 0007
Revises: 0006
Created: 2026-12-06 15:40:00

Upgrade only: vigil never downgrades a database (restore a backup to go back). Runs in one transaction
with the other pending revisions; on SQLite foreign keys are checked after it, so use
`op.batch_alter_table` for anything ALTER TABLE cannot do there.
"""

from alembic import op
import sqlalchemy as sa

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

# (table, column): the row ids and the references to them (notifier/schema.py's RowId columns)
ID_COLUMNS = (
    ('incidents', 'id'), ('incidents', 'cause_id'), ('incident_alerts', 'incident_id'),
    ('notifications', 'id'), ('notifications', 'incident_id'),
    ('deliveries', 'id'), ('deliveries', 'notification_id'), ('deliveries', 'incident_id'), ('deliveries', 'digest_of'),
    ('delivery_attempts', 'id'), ('delivery_attempts', 'delivery_id'),
    ('inbox_pages', 'id'), ('inbox_pages', 'delivery_id'), ('inbox_pages', 'incident_id'),
    ('escalations', 'incident_id'), ('incident_events', 'id'), ('incident_events', 'incident_id'),
    ('maintenance_windows', 'id'), ('link_uses', 'incident_id'), ('heartbeats', 'incident_id'),
)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != 'postgresql':
        return
    for table, column in ID_COLUMNS:
        op.alter_column(table, column, type_=sa.BigInteger(), existing_type=sa.Integer())
        if column == 'id':  # its sequence too: a serial's sequence is `AS integer`, capped at 2^31-1
            sequence = bind.exec_driver_sql(f"SELECT pg_get_serial_sequence('{table}', 'id')").scalar()
            if sequence:
                op.execute(f"ALTER SEQUENCE {sequence} AS bigint")
