"""The notifier's HTTP API, one router per concern: `incidents` (and notifications), `inbox`,
`heartbeats`, `maintenance`, `schedules`, `reports`, `links`, `health` (and metrics); the webhook's route
is `vigil.notifier.ingest.webhook`. The bodies people send are parsed in `bodies.py` (with the checks
of `ingest/parse.py`); `deps.py` hands each route what it needs; `auth.py` guards every `/api/` route
with the bearer token."""
