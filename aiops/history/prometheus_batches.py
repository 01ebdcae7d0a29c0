"""A fleet's history from Prometheus, a bounded batch of series at a time.

One `query_range` of a selector that matches the whole fleet answers every series at once: 712 GPU
series × 14 days at 5 minutes (2.9 million points) took a training process to 1.1 GiB, growing with the
fleet. `BatchedHistory` lists the series first (`/api/v1/series`: labels only), sorted by identity, and
reads them a batch at a time with a selector that names exactly the batch (`promql_selectors`), each
batch still split in time chunks of at most `max_points` per series. Iterating yields the series one by
one and drops each batch before reading the next, so a consumer that keeps only what it derives (a
model) holds one batch of history at most.

A batch is `batch_size` series (64) when one label tells the listed series apart (the GPU series'
`uuid`), read with one regex alternation over it; otherwise `UNION_BATCH_SERIES` (8), read with an
`or` of one selector per series, whose cost on Prometheus grows with the square of its length.

The series come in the order the whole-selector query gave them (per selector, sorted by identity), with
the same points, so training gives the same models. A `--match` that is not a plain series selector
(`rate(x[5m])`, `x offset 1h`, `a or b`) cannot be listed: it is read as before, in one query per time
chunk, and its series are not counted in advance.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from vigil.aiops.history.prometheus import PrometheusReader
from vigil.aiops.history.promql_selectors import (
    SeriesKey,
    alternation_selector,
    identifying_label,
    selector_matchers,
    union_selector,
)
from vigil.aiops.history.series import Series

DEFAULT_BATCH_SERIES = 64  # 64 × 4,033 points (14 days at 5 minutes): about 6 MB of JSON per request
UNION_BATCH_SERIES = 8
# Prometheus' default lookback: a range query's first step sees a sample up to 5 minutes before it, so
# the listing starts that much earlier to name every series the query would return.
LOOKBACK_DELTA_S = 300.0


@dataclass(frozen=True)
class Listed:
    """One `--match` selector: its series (None for a query that cannot be listed) and how to batch them."""

    selector: str
    keys: list[SeriesKey] | None
    matchers: list[str]
    label: str | None  # tells the series apart: batches select on it (None: batches of `or`)


class BatchedHistory:
    """The series of `selectors` between `start` and `end` at `step`, listed at construction (so `count`
    is known before any history is read) and read a batch at a time when iterated."""

    def __init__(self, reader: PrometheusReader, selectors: Iterable[str], start: float, end: float, step: float,
                 batch_size: int = DEFAULT_BATCH_SERIES):
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.reader, self.start, self.end, self.step, self.batch_size = reader, start, end, step, batch_size
        self.plan = [self._list(selector) for selector in selectors]

    def _list(self, selector: str) -> Listed:
        matchers = selector_matchers(selector)
        if matchers is None:
            return Listed(selector, None, [], None)
        keys = self.reader.list_series(selector, self.start - LOOKBACK_DELTA_S, self.end)
        return Listed(selector, keys, matchers, identifying_label(keys))

    @property
    def count(self) -> int | None:
        """Series listed (an upper bound: a listed series without a sample in the window is not read);
        None when a selector is a query, whose series are known only once read."""
        if any(listed.keys is None for listed in self.plan):
            return None
        return sum(len(listed.keys) for listed in self.plan)

    def batches(self) -> Iterator[list[Series]]:
        """Lists of at most `batch_size` series, in identity order (a query's series come as one list)."""
        for listed in self.plan:
            if listed.keys is None:
                yield self.reader.query_range(listed.selector, self.start, self.end, self.step)
                continue
            size = self.batch_size if listed.label else min(self.batch_size, UNION_BATCH_SERIES)
            for first in range(0, len(listed.keys), size):
                keys = listed.keys[first:first + size]
                query = alternation_selector(listed.matchers, listed.label, keys) if listed.label \
                    else union_selector(keys)
                yield self.reader.query_range(query, self.start, self.end, self.step, keep=set(keys))

    def __iter__(self) -> Iterator[Series]:
        for batch in self.batches():
            batch.reverse()
            while batch:  # hand each series over and keep no reference to it
                yield batch.pop()
