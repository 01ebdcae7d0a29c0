"""`Rejected`: a request the notifier will never accept, answered with a 4xx and its reason (never a 5xx:
Alertmanager retries a 5xx). Raised by the request parsing, the routes, the console and the read models
they share; `api/errors.py` turns it into the answer."""

from __future__ import annotations


class Rejected(Exception):
    def __init__(self, status: int, reason: str, message: str):
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message
