"""Write the next schema revision after a change to notifier/schema.py (a developer's tool).

    python -m vigil.notifier.migrations.new_revision "add escalation tiers"

Upgrades a scratch in-memory SQLite database to the newest revision, lets Alembic compare it with
`vigil.notifier.schema.metadata`, and writes `versions/NNNN_<message>.py` (NNNN: the next number) with
the differences as batch operations, which run on SQLite as well as PostgreSQL. Read what it wrote
before committing: autogenerate sees a rename as a drop and an add, and moves no data.
"""

from __future__ import annotations

import sys
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from vigil.notifier.migrate import MIGRATIONS, alembic_config, upgrade_database


def next_revision_id(migrations: Path = MIGRATIONS) -> str:
    script = ScriptDirectory.from_config(alembic_config(migrations))
    numbers = [int(revision.revision) for revision in script.walk_revisions() if revision.revision.isdigit()]
    return f"{max(numbers, default=0) + 1:04d}"


def write_revision(message: str, metadata: sa.MetaData, migrations: Path = MIGRATIONS) -> Path | None:
    """The new revision's file, or None when `metadata` already matches the newest revision."""
    scratch = sa.create_engine("sqlite://")
    try:
        upgrade_database(scratch, migrations)
        with scratch.connect() as conn:
            differences = compare_metadata(MigrationContext.configure(conn), metadata)
            if not differences:
                return None
            _refuse_unnamed_constraints(differences)
            config = alembic_config(migrations, connection=conn, target_metadata=metadata)
            written = command.revision(config, message, autogenerate=True, rev_id=next_revision_id(migrations))
            return Path(written.path)
    finally:
        scratch.dispose()


def _refuse_unnamed_constraints(differences: list) -> None:
    """A constraint added to an existing table needs a name: SQLite's batch mode cannot create (or
    later drop) an unnamed one, so the revision would fail there."""
    unnamed = [f"{constraint.table.name}({', '.join(column.name for column in constraint.columns)})"
               for kind, constraint, *_ in (d for d in differences if isinstance(d, tuple))
               if kind in ("add_fk", "add_constraint") and constraint.name is None]
    if unnamed:
        raise ValueError(f"name the new constraint(s) on {', '.join(unnamed)} in notifier/schema.py "
                         "(e.g. sa.ForeignKey(..., name=\"fk_<table>_<column>\")): batch mode needs names")


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].strip():
        print(__doc__.strip(), file=sys.stderr)
        return 2
    from vigil.notifier.schema import metadata

    try:
        path = write_revision(argv[0].strip(), metadata)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if path is None:
        print("notifier/schema.py matches the newest revision: nothing to write")
        return 0
    print(f"wrote {path}: read it, test it (tests/test_notifier_migrations.py), commit it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
