"""Alembic's environment hook: run the migrations on the connection `vigil.notifier.migrate` hands over.

The caller holds the transaction (and the lock around it), so Alembic adds none of its own. Only the
new-revision helper passes `target_metadata`, for autogenerate; the running notifier never imports
the current table definitions here.
"""

from alembic import context

attributes = context.config.attributes
context.configure(connection=attributes["connection"], target_metadata=attributes.get("target_metadata"),
                  render_as_batch=True, compare_type=True)
with context.begin_transaction():
    context.run_migrations()
