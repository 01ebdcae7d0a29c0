"""Counting what a transaction did only once it has committed.

A metric counted inside a transaction (a tier paged, an SLA breach) stays counted if that transaction
rolls back, and work that is run again after a rollback (a webhook batch on SQLite whose member failed
is stored again post by post) would count it twice. So the work records its counts here, and whoever
commits the transaction runs them after the COMMIT returns; a rolled-back transaction's counts are
dropped with it.
"""

from __future__ import annotations

from typing import Callable


class AfterCommit:
    """Calls to make once the transaction they were recorded in has committed."""

    def __init__(self) -> None:
        self._calls: list[Callable[[], None]] = []

    def add(self, call: Callable[[], None]) -> None:
        self._calls.append(call)

    def extend(self, other: "AfterCommit") -> None:
        """Take over `other`'s calls (a SAVEPOINT's, released into its transaction)."""
        self._calls.extend(other._calls)
        other._calls = []

    def run(self) -> None:
        """Make the calls, once: the transaction committed."""
        calls, self._calls = self._calls, []
        for call in calls:
            call()
