"""The notifier's HTTP API, one router per concern: `webhook`, `incidents` (and notifications),
`inbox`, `health` (and metrics). Request bodies are parsed in `parse.py` only; `deps.py` hands each
route what it needs; `auth.py` guards every `/api/` route with the bearer token."""
