"""The on-call file with the overrides made in the console on top: what every reader of the notifier's
`oncall` sees (the engine choosing whom to page, the console's schedules and who-is-on-call, the API's
shifts and iCal feeds).

`OncallWithOverrides` stands where the file's `OncallConfig` stood and answers its attributes from the
current combination. It reads the overrides again when they changed (`ScheduleOverrides.version()`), at
most every `REFRESH_S`, so a notifier sharing the database sees another's within seconds, and at once
after one made here (`changed()`). Until the store is attached (the app's start) it is the file alone.
"""

from __future__ import annotations

import math
import threading
import time
from datetime import datetime, timezone

from vigil.notifier.core.clock import Clock
from vigil.notifier.store.schedule_overrides import ScheduleOverrides
from vigil.oncall.model import OncallConfig
from vigil.oncall.schedule_model import Override
from vigil.oncall.schedules import with_overrides

REFRESH_S = 2.0  # how stale another notifier's new override may be here
KEPT_S = 31 * 86400.0  # overrides that ended this long ago still show on past days of a schedule


class OncallWithOverrides:
    def __init__(self, base: OncallConfig):
        self._base = base
        self._current = base
        self._store: ScheduleOverrides | None = None
        self._clock: Clock | None = None
        self._version: tuple | None = None
        self._checked = -math.inf
        self._lock = threading.Lock()

    @property
    def file(self) -> OncallConfig:
        """The on-call file alone."""
        return self._base

    def attach(self, overrides: ScheduleOverrides, clock: Clock) -> None:
        self._store, self._clock = overrides, clock
        self.changed()

    def changed(self) -> None:
        """An override was made or cancelled here: read them again at the next look."""
        self._checked = -math.inf

    def current(self) -> OncallConfig:
        """The file with the console's overrides on top, as of at most REFRESH_S ago."""
        if self._store is None or time.monotonic() - self._checked < REFRESH_S:
            return self._current
        with self._lock:
            if time.monotonic() - self._checked < REFRESH_S:
                return self._current
            version = self._store.version()
            if version != self._version:
                self._current = with_overrides(self._base, self._grouped())
                self._version = version
            self._checked = time.monotonic()
        return self._current

    def _grouped(self) -> dict[str, tuple[Override, ...]]:
        grouped: dict[str, list[Override]] = {}
        for row in self._store.live(self._clock() - KEPT_S):
            if row.schedule in self._base.schedules:
                grouped.setdefault(row.schedule, []).append(Override(
                    person=row.person, start=datetime.fromtimestamp(row.start_at, timezone.utc),
                    end=datetime.fromtimestamp(row.end_at, timezone.utc), reason=row.reason or None,
                    by=row.created_by))
        return {name: tuple(found) for name, found in grouped.items()}

    def __getattr__(self, name: str):
        return getattr(self.current(), name)
