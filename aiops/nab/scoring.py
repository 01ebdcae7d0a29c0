"""NAB scoring, written from the benchmark's published description.

Per file (n rows, windows as inclusive row ranges):

* the first `min(floor(0.15 n), 750)` rows are a probationary period and are not scored at all;
* a detection at row i inside a window [l, r] is worth `tpWeight * σ(y) / σ(-1)` with
  `y = -(r - i + 1) / (r - l + 1)` and `σ(y) = 2 / (1 + e^{5y}) - 1`; only the best (earliest)
  detection of a window counts, and a window with none costs `-fnWeight`;
* a detection outside windows costs `fpWeight * σ(y)` (σ is negative there) with y its distance past
  the end of the previous window divided by that window's length minus one, and `y >= 3` or no previous
  window meaning -fpWeight in full.

A detection is a score >= threshold. One threshold serves a whole set of files: `ThresholdCurve` gives
the total raw score for every distinct threshold at once (sorting all points by score and accumulating
each point's change to the total), so choosing the best threshold is exact rather than a search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: threshold that detects nothing (scores are in [0, 1])
NO_DETECTION = 1.1


def scaled_sigmoid(position: np.ndarray) -> np.ndarray:
    """σ(y) = 2/(1+e^{5y}) - 1 for y < 3, exactly -1 from 3 on (far past a window)."""
    position = np.asarray(position, dtype=float)
    with np.errstate(over="ignore"):
        value = 2.0 / (1.0 + np.exp(5.0 * position)) - 1.0
    return np.where(position >= 3.0, -1.0, value)


def probation_length(n_rows: int) -> int:
    return min(math.floor(0.15 * n_rows), 750)


@dataclass(frozen=True)
class FileWeights:
    """What a detection at each scorable row of one file would be worth, and which window it is in."""

    rows: np.ndarray  # indices of scorable rows
    worth: np.ndarray  # weighted sweep score of a detection at that row
    window: np.ndarray  # window number within the file, -1 outside every window
    n_windows: int  # windows that have at least one scorable row (only those count)


def file_weights(n_rows: int, windows: list[tuple[int, int]], cost: dict[str, float]) -> FileWeights:
    idx = np.arange(n_rows)
    worth = np.full(n_rows, -float(cost["fpWeight"]))  # before any window: far from everything
    window = np.full(n_rows, -1)
    max_tp = float(scaled_sigmoid(-1.0))
    for k, (left, right) in enumerate(windows):
        width = right - left + 1
        inside = slice(left, right + 1)
        worth[inside] = scaled_sigmoid(-(right - idx[inside] + 1) / width) * cost["tpWeight"] / max_tp
        window[inside] = k
        stop = windows[k + 1][0] if k + 1 < len(windows) else n_rows
        after = slice(right + 1, stop)
        if width > 1:
            worth[after] = scaled_sigmoid(np.abs(idx[after] - right) / (width - 1)) * cost["fpWeight"]
    start = probation_length(n_rows)
    counted = {int(w) for w in window[start:] if w >= 0}
    return FileWeights(idx[start:], worth[start:], window[start:], len(counted))


class ThresholdCurve:
    """Total raw NAB score of a set of files as a function of one shared threshold."""

    def __init__(self, per_file: list[tuple[np.ndarray, FileWeights]], cost: dict[str, float]):
        fn = float(cost["fnWeight"])
        scores, deltas = [], []
        self.n_windows = 0
        for file_scores, weights in per_file:
            s = np.asarray(file_scores, dtype=float)[weights.rows]
            outside = weights.window < 0
            scores.append(s[outside])
            deltas.append(weights.worth[outside])  # every false positive adds its (negative) worth
            # a window's part is max(-fn, best worth detected so far): walk its rows by falling score
            ins = ~outside
            wid, ws, ww = weights.window[ins], s[ins], weights.worth[ins]
            order = np.lexsort((-ws, wid))
            wid, ws, ww = wid[order], ws[order], ww[order]
            offset = (wid - wid.min()) * 10.0 if len(wid) else wid  # keeps the running max per window
            best = np.maximum(np.maximum.accumulate(ww + offset) - offset, -fn)
            first = np.ones(len(wid), dtype=bool)
            first[1:] = wid[1:] != wid[:-1]
            previous = np.where(first, -fn, np.concatenate(([-fn], best[:-1])))
            scores.append(ws)
            deltas.append(best - previous)
            self.n_windows += weights.n_windows
        all_scores = np.concatenate(scores) if scores else np.empty(0)
        all_deltas = np.concatenate(deltas) if deltas else np.empty(0)
        order = np.argsort(-all_scores, kind="stable")
        all_scores, totals = all_scores[order], np.cumsum(all_deltas[order])
        base = -fn * self.n_windows
        # the total at threshold t includes every point with score >= t: the last of each run of ties
        last_of_run = np.ones(len(all_scores), dtype=bool)
        last_of_run[:-1] = all_scores[:-1] != all_scores[1:]
        self.thresholds = np.concatenate(([NO_DETECTION], all_scores[last_of_run]))
        self.raw = np.concatenate(([base], base + totals[last_of_run]))
        self.cost = dict(cost)

    def best(self) -> tuple[float, float]:
        """(threshold, raw score) with the highest score; the highest such threshold on ties."""
        k = int(np.argmax(self.raw))
        return float(self.thresholds[k]), float(self.raw[k])

    def raw_at(self, threshold: float) -> float:
        """Raw score when detecting every point with score >= threshold."""
        # thresholds are descending: count those >= threshold, take the last of them
        k = int(np.searchsorted(-self.thresholds, -threshold, side="right")) - 1
        return float(self.raw[max(k, 0)])

    def normalise(self, raw: float) -> float:
        """100 * (S - S_null) / (S_perfect - S_null): 0 for no detections, 100 for a perfect detector."""
        null = -float(self.cost["fnWeight"]) * self.n_windows
        perfect = float(self.cost["tpWeight"]) * self.n_windows
        return 100.0 * (raw - null) / (perfect - null)
