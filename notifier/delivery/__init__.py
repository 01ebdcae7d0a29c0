"""Page delivery: what the outbox holds goes out through the stages of `stages.py` (mute → dedup →
storm → throttle → send → retry → fallback → record), assembled in `pipeline.py`, run by the outbox
`worker`; the senders (apprise, the local inbox) are in `channels.py`. Who is paged, and when, is the
engine's (`notifier/engine/`): delivery never imports it.
"""
