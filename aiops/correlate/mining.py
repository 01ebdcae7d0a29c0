"""Mine alert history for pairs that fire together and propose Alertmanager inhibition rules.

For a candidate rule "source S inhibits target T" (S, T are alertnames) on the `equal` labels:

- a T firing is *covered* by an S firing with the same values of the `equal` labels when T starts
  while S is firing, or up to `window_s` before S starts (rule evaluation does not start both at
  the same instant);
- support = number of covered T firings; confidence(T => S) = support / number of T firings: how
  often T only ever appears together with S. That is the figure that makes an inhibition safe: an
  inhibited T is lost information only when T fires *without* its cause;
- reverse confidence(S => T) = share of S firings that cover a T firing (reported, not required);
- lag = median of (T start - S start) over covered firings.

`equal` is the topology labels (`cluster`, `node`, `gpu`, `job_id`) carried by every firing of both
alerts. A candidate qualifies when support >= min_support and confidence >= min_confidence; it is
proposed unless unsafe (`aiops.correlate.safety`: an always-firing or info source, a less severe
source, a parent-level target, no `equal` label); when both directions are safe and qualify, the
earlier one is the source; a pair never inhibits both ways. Left-out candidates are counted by reason.
"""

from __future__ import annotations

import statistics
from bisect import bisect_right
from dataclasses import dataclass

from vigil.aiops.correlate.alerts import Firing
from vigil.aiops.correlate.safety import always_firing, history_span, unsafe_reason

TOPOLOGY_LABELS = ("cluster", "node", "gpu", "job_id")


@dataclass(frozen=True)
class PairEvidence:
    """Evidence for "source inhibits target"."""

    source: str
    target: str
    equal: tuple[str, ...]
    support: int
    target_firings: int
    source_firings: int
    confidence: float  # target => source
    reverse_confidence: float  # source => target
    median_lag_s: float


def _topology(firings: list[Firing]) -> set[str]:
    return set.intersection(*({k for k, _ in f.labels if k in TOPOLOGY_LABELS} for f in firings))


def _key(firing: Firing, equal: tuple[str, ...]) -> tuple:
    return tuple(firing.label(name) for name in equal)


def pair_evidence(sources: list[Firing], targets: list[Firing], equal: tuple[str, ...], window_s: float) -> PairEvidence:
    """Support, confidences and lag of "sources inhibit targets" (lists of one alertname each)."""
    by_key: dict[tuple, list[Firing]] = {}
    for s in sorted(sources, key=lambda f: f.start):
        by_key.setdefault(_key(s, equal), []).append(s)
    starts = {key: [s.start for s in group] for key, group in by_key.items()}
    covered, lags, used_sources = 0, [], set()
    for t in targets:
        key = _key(t, equal)
        group = by_key.get(key, [])
        # sources that started no later than window_s after the target started; the latest of
        # them that is still firing when the target starts (or starts after it) covers it
        last = bisect_right(starts.get(key, []), t.start + window_s)
        match = next((i for i in range(last - 1, -1, -1) if group[i].start > t.start or group[i].active_at(t.start)), None)
        if match is not None:
            covered += 1
            lags.append(t.start - group[match].start)
            used_sources.add((key, match))
    return PairEvidence(
        source=sources[0].alertname,
        target=targets[0].alertname,
        equal=equal,
        support=covered,
        target_firings=len(targets),
        source_firings=len(sources),
        confidence=covered / len(targets),
        reverse_confidence=len(used_sources) / len(sources),
        median_lag_s=float(statistics.median(lags)) if lags else 0.0,
    )


@dataclass(frozen=True)
class MiningResult:
    """Proposed rules (strongest evidence first) and the qualifying candidates left out, by reason."""

    rules: list[PairEvidence]
    left_out: dict[str, int]  # safety.REASONS key -> number of candidates
    always_firing: tuple[str, ...]  # alertnames found to fire (almost) all the time


def mine(
    firings: list[Firing], min_support: int = 3, min_confidence: float = 0.95, window_s: float = 300.0,
    span: tuple[float, float] | None = None,
) -> MiningResult:
    """Mine `firings`; `span` (start, end) is the history looked at (default: first to last firing)."""
    by_name: dict[str, list[Firing]] = {}
    for f in firings:
        by_name.setdefault(f.alertname, []).append(f)
    topology = {name: _topology(group) for name, group in by_name.items()}
    always = always_firing(by_name, span or history_span(firings))
    qualifying: dict[tuple[str, str], PairEvidence] = {}
    left_out: dict[str, int] = {}
    for source, source_firings in by_name.items():
        for target, target_firings in by_name.items():
            if source == target:
                continue
            equal = tuple(sorted(topology[source] & topology[target], key=TOPOLOGY_LABELS.index))
            evidence = pair_evidence(source_firings, target_firings, equal, window_s)
            if evidence.support < min_support or evidence.confidence < min_confidence:
                continue
            # a GPU-level alert never inhibits the node-level alert above it
            reason = unsafe_reason(source_firings, target_firings, always, topology[target] < topology[source], equal)
            if reason is None:
                qualifying[(source, target)] = evidence
            else:
                left_out[reason] = left_out.get(reason, 0) + 1
    chosen = []
    for (source, target), evidence in qualifying.items():
        reverse = qualifying.get((target, source))
        if reverse is not None and _prefer(reverse, evidence):
            left_out["opposite_direction"] = left_out.get("opposite_direction", 0) + 1
            continue
        chosen.append(evidence)
    rules = sorted(chosen, key=lambda e: (-e.confidence, -e.support, e.source, e.target))
    return MiningResult(rules, left_out, tuple(sorted(always)))


def mine_inhibitions(
    firings: list[Firing], min_support: int = 3, min_confidence: float = 0.95, window_s: float = 300.0
) -> list[PairEvidence]:
    """Proposed rules, strongest evidence first (`mine(...).rules`)."""
    return mine(firings, min_support, min_confidence, window_s).rules


def _prefer(a: PairEvidence, b: PairEvidence) -> bool:
    """Whether rule `a` beats the opposite rule `b` (same pair, both qualifying)."""
    # (a parent-level target was left out earlier) the cause is taken to be the one that fires first
    if (a.median_lag_s > 0) != (b.median_lag_s > 0):
        return a.median_lag_s > 0
    if a.confidence != b.confidence:
        return a.confidence > b.confidence
    return a.source < b.source
