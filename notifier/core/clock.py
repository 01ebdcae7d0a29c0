"""The notifier's clock: everything that reads the time takes one, so tests can drive time by hand.

A clock is any callable returning the current time in UNIX seconds. `system_clock` is the only place
in the notifier that reads the real time; a test passes `lambda: now[0]` and moves `now[0]` itself.
"""

from __future__ import annotations

import time
from typing import Callable

Clock = Callable[[], float]


def system_clock() -> float:
    """The real time, UNIX seconds."""
    return time.time()
