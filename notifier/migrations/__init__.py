"""Alembic migrations of the notifier database (run by `vigil.notifier.migrate`, configured in code).

`env.py` and `script.py.mako` are Alembic's hooks; `versions/` holds one module per schema revision.
`python -m vigil.notifier.migrations.new_revision MESSAGE` writes the next revision (docs/notifier.md).
"""
