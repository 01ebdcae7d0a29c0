"""Page delivery as stages behind one interface (`stage.py`), assembled in `pipeline.py`:

route (at ingest: who is paged, in which steps; escalation plugs in here) → outbox → mute → dedup →
throttle → send (apprise, or the local inbox) → retry → record, run by the outbox `worker`.
"""
