"""Page delivery: the pipeline (route, outbox), the worker (throttle, send, retry) and one sender per
integration (apprise URLs, the local inbox)."""
