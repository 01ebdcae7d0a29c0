"""When `evt` ends a flagged stretch before `max_hold_s`: the held level is stale, not the values.

A flagged point is not learned, so while a stretch lasts the detector keeps the level it had before
the stretch began. That is what keeps a level shift flagged for as long as it lasts, and it is wrong in
two cases, each seen on the synthetic KPI benchmark's tune half:

* **The stretch changed sides.** Its last `flip_points` points all lie on the other side of the
  prediction from the stretch's points before them (and it has lasted at least twice that long): the
  anomaly ended, and the normal moved while it was held (a periodic curve's weekend eased in under a
  level shift), so the values now sit off the stale level the other way. The level becomes the median
  of those last points' observed levels.
* **The values came back to a level of the last hours.** The median observed level of the stretch's
  last `return_points` points lies within `near` noise units of a level the detector had learned in the
  last `snapshots` hours, while the held level is more than `far` units from it: the level had followed
  a change the flags missed (a ramp that Holt's trend followed, a shift learned in on a noisy curve), and
  the stretch is the return to normal, not a new shift. The level goes back to that snapshot. Snapshots
  are hourly and forgotten when a periodic curve's profile is refitted (levels before a refit are on
  another scale).

Either way the point that shows it is not flagged and is learned; the stretch is over.
"""

from __future__ import annotations

from collections import deque
from statistics import median


class HeldStretch:
    """The current flagged stretch's recent deviations and levels, and hourly snapshots of the level."""

    def __init__(self, flip_points: int, return_points: int, snapshots: int, snapshot_every: int,
                 near: float, far: float):
        self._flip_points, self._return_points = flip_points, return_points
        self._near, self._far = near, far
        self._deviations: deque[float] = deque(maxlen=max(flip_points, 1))
        self._levels: deque[float] = deque(maxlen=max(flip_points, return_points, 1))
        self._side = 0.0  # sum of the stretch's deviations before its last `flip_points`
        self._length = 0
        self._snapshots: deque[float] = deque(maxlen=max(snapshots, 1) if return_points else 1)
        self._every, self._since = max(snapshot_every, 1), 0

    def learned(self, level: float) -> None:
        """A point was learned (the stretch, if any, is over); `level` is the level after it."""
        self._length = 0
        self._since += 1
        if self._since >= self._every:
            self._snapshots.append(level)
            self._since = 0

    def forget_levels(self) -> None:
        """The profile was refitted: earlier levels are not comparable with later ones."""
        self._snapshots.clear()
        self._since = 0

    def flagged(self, deviation: float, observed_level: float) -> None:
        """A flagged point: its deviation from the prediction in noise units, and its observed level."""
        if self._length == 0:
            self._side = 0.0
            self._deviations.clear()
            self._levels.clear()
        if len(self._deviations) == self._deviations.maxlen:
            self._side += self._deviations[0]
        self._deviations.append(deviation)
        self._levels.append(observed_level)
        self._length += 1

    def release_level(self, held_level: float, unit: float) -> float | None:
        """The level to take up if the stretch is over (see the module docstring), else None.
        `held_level` is the detector's level, `unit` one noise unit on the level's scale."""
        if self._return_points and self._length > self._return_points and self._snapshots:
            now = median(list(self._levels)[-self._return_points:])
            near = [s for s in self._snapshots
                    if abs(now - s) <= self._near * unit and abs(held_level - s) > self._far * unit]
            if near:
                return min(near, key=lambda s: abs(now - s))
        if (self._flip_points and self._length > 2 * self._flip_points
                and all(d * self._side < 0 for d in self._deviations)):
            return median(list(self._levels)[-self._flip_points:])
        return None
