"""Vectorised robust statistics the baseline classes and models share (numpy only, no Python loops)."""

from __future__ import annotations

import numpy as np

# Scale factor that makes the median absolute deviation estimate the standard deviation of a normal law.
MAD_TO_SIGMA = 1.4826
DAY_S = 86_400.0
WEEK_S = 7 * DAY_S


def robust_sigma(x: np.ndarray) -> float:
    """1.4826 × median absolute deviation from the median (0 for fewer than 2 values)."""
    if x.size < 2:
        return 0.0
    return float(MAD_TO_SIGMA * np.median(np.abs(x - np.median(x))))


def grouped_quantile(groups: np.ndarray, values: np.ndarray, q: float, n_groups: int) -> np.ndarray:
    """The `q` quantile (linear interpolation, as numpy's default) of `values` within each group 0…n_groups-1.

    One sort for all groups; groups without values get NaN.
    """
    order = np.lexsort((values, groups))
    v = values[order]
    counts = np.bincount(groups, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    out = np.full(n_groups, np.nan)
    has = counts > 0
    pos = starts[has] + q * (counts[has] - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.ceil(pos).astype(np.int64)
    frac = pos - lo
    out[has] = v[lo] + frac * (v[hi] - v[lo])
    return out


def block_medians(t: np.ndarray, x: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Medians of consecutive blocks of `block` grid points, skipping NaN and empty blocks.

    Returns (block times, block medians, block index of every input point).
    """
    n = x.size
    nb = -(-n // block)
    index = np.arange(n) // block
    finite = np.isfinite(x)
    med = grouped_quantile(index[finite], x[finite], 0.5, nb)
    counts = np.bincount(index, minlength=nb)
    centre = np.bincount(index, weights=t, minlength=nb) / np.maximum(counts, 1)
    keep = np.isfinite(med)
    return centre[keep], med[keep], index


def three_group_line(t: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    """Tukey's resistant line: (intercept at t=0 of centred time, slope) from medians of the outer thirds.

    Linear time and immune to outliers in up to a sixth of the points; time is centred on the median
    sample time by the caller's convention (see `fit_line`).
    """
    n = x.size
    if n < 3:
        return (float(np.median(x)) if n else 0.0), 0.0
    third = n // 3
    t1, t3 = np.median(t[:third]), np.median(t[-third:])
    if t3 == t1:
        return float(np.median(x)), 0.0
    slope = (np.median(x[-third:]) - np.median(x[:third])) / (t3 - t1)
    intercept = np.median(x - slope * t)
    return float(intercept), float(slope)


def best_split(y: np.ndarray) -> tuple[int, float]:
    """Index k splitting y into y[:k], y[k:] with the least total squared error, and that error.

    Both parts keep at least one value; uses cumulative sums, so it is linear time.
    """
    n = y.size
    if n < 2:
        return 0, float(np.sum((y - y.mean()) ** 2)) if n else 0.0
    c1 = np.cumsum(y)
    c2 = np.cumsum(y * y)
    k = np.arange(1, n)
    left = c2[:-1] - c1[:-1] ** 2 / k
    right = (c2[-1] - c2[:-1]) - (c1[-1] - c1[:-1]) ** 2 / (n - k)
    sse = left + right
    i = int(np.argmin(sse))
    return i + 1, float(max(sse[i], 0.0))


def two_cut_sse(y: np.ndarray) -> float:
    """Squared error left by a greedy segmentation into at most three levels (best split, then best
    split of one side). Catches a level that changes and comes back, which one split explains poorly.
    """
    if y.size < 4:
        return best_split(y)[1]
    k, sse = best_split(y)
    left, right = y[:k], y[k:]
    sse_left = float(np.sum((left - left.mean()) ** 2))
    sse_right = float(np.sum((right - right.mean()) ** 2))
    candidates = [sse]
    if left.size >= 2:
        candidates.append(best_split(left)[1] + sse_right)
    if right.size >= 2:
        candidates.append(sse_left + best_split(right)[1])
    return min(candidates)
