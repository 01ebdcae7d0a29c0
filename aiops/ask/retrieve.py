"""Rank the catalog's metrics (and the lexicon's derived measures) for a question's content words.

A metric scores the inverse document frequency of each question word found in its name (twice) or its
help and unit, synonyms counting a little less; the metrics of the nearest worked examples get a boost.
A question none of whose words a metric explains is refused rather than answered with a guess.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from .examples import Example
from .knowledge import ALERT_LABELS, Knowledge, MetricDoc, stem

# words every question about the fleet uses; they decide nothing alone (stemmed, as the question's words are)
_WEAK = frozenset(stem(word) for word in {
         "gpu", "node", "vigil", "total", "time", "second", "count", "number", "state", "ratio", "byte",
         "level", "much", "many", "high", "low", "get", "see", "status", "right", "cluster", "fleet",
         "highest", "lowest", "most", "least", "top", "bottom",
         "average", "avg", "mean", "max", "maximum", "min", "minimum", "peak", "sum", "largest", "smallest",
         "worst", "rate", "fraction", "percent", "percentage", "share", "ratio", "each", "above", "below",
         "one", "card", "host", "machine", "server", "up", "currently", "overall", "combined", "typical",
         "whole", "entire", "wide", "altogether", "proportion", "relative", "versus", "vs",  # scope words (scope.py)
         "user", "tenant"})  # whose: a grouping through the job's info (lexicon `joins`), not a measurement
SYNONYM_WEIGHT = 0.8
EXAMPLE_WEIGHT = 2.0
MIN_COVERAGE = 0.5


@dataclass(frozen=True)
class Match:
    name: str  # a metric name, or a measure's name
    score: float
    matched: frozenset[str]
    measure: dict | None = None
    alert: str | None = None  # the name of the alert whose firing series (ALERTS) answer


class Unanswerable(ValueError):
    """No metric of vigil's catalog answers the question; the message says why."""


def expand(word_list: list[str], knowledge: Knowledge) -> dict[str, float]:
    """{catalog word: weight} for the question's words and their synonyms."""
    synonyms = knowledge.lexicon["synonyms"]
    found: dict[str, float] = {}
    for word in word_list:
        found[word] = max(found.get(word, 0), 1.0)
        for synonym in synonyms.get(word, ()):
            found[synonym] = max(found.get(synonym, 0), SYNONYM_WEIGHT)
    return found


def _score(doc: MetricDoc, terms: dict[str, float], weights: dict[str, float]) -> tuple[float, frozenset[str]]:
    score, matched = 0.0, set()
    for term, weight in terms.items():
        w = weights.get(term, 0.0) * weight
        if term in doc.name_words:
            score, matched = score + 2 * w, matched | {term}
        elif term in doc.help_words:
            score, matched = score + w, matched | {term}
    unmatched = len(doc.name_words - set(terms) - {"vigil", "total", "bytes", "byte", "seconds", "second"})
    return score / (1 + 0.15 * unmatched), frozenset(matched)


def rank(content: list[str], knowledge: Knowledge, near: list[tuple[float, Example]],
         allowed: Callable[[str], bool] | None = None) -> list[Match]:
    """The metrics and measures (those `allowed` only) by score, best first."""
    weights = knowledge.idf
    terms = expand(content, knowledge)
    boosts: Counter[str] = Counter()
    for similarity, example in near:
        for metric in example.metrics:
            boosts[metric] = max(boosts[metric], similarity * EXAMPLE_WEIGHT)
    matches = []
    for doc in knowledge.metrics.values():
        if allowed is not None and not allowed(doc.name):
            continue
        score, matched = _score(doc, terms, weights)
        if score > 0:
            matches.append(Match(doc.name, score + boosts[doc.name] * (1 if matched - _WEAK else 0), matched))
    for measure in knowledge.lexicon.get("measures", ()):
        met = [group for group in (measure["needs"], *measure["needs_any"]) if set(group) <= set(terms)]
        wanted = met and set(measure["words"]) & set(content)
        if wanted and not set(measure["not"]) & set(content) and (allowed is None or allowed(measure["metrics"][0])):
            names = set().union(*(knowledge.metrics[m].name_words for m in measure["metrics"] if m in knowledge.metrics))
            matched = frozenset(measure["needs"]) | (set(measure["words"]) | names | set().union(*measure["needs_any"])) \
                & set(terms)
            named = max(len(group) for group in met)  # the more of its needs the question names, the surer
            matches.append(Match(measure["name"], 1e6 + named, matched, measure))
    matches.sort(key=lambda m: (-m.score, len(m.name)))
    return matches


def best_metric(content: list[str], knowledge: Knowledge, near: list[tuple[float, Example]],
                filters: frozenset[str] = frozenset(), allowed: Callable[[str], bool] | None = None,
                labels_wanted: frozenset[str] = frozenset(), ranked: bool = False) -> Match:
    """The best match, or `Unanswerable` when the question's own words are not about any metric.
    `filters`: words that set a label value ("sms", "muted"), which need no metric of their own;
    `allowed`: the metrics that may answer (those of a component or with a person label).
    An alert whose name or summary explains more of the question than the best metric answers instead:
    a state only a rule defines ("which jobs are hung": JobHung) is read from the alert, not guessed;
    but not when the question filters on a label no alert carries (`labels_wanted`: "XID 79": xid), nor when
    it ranks (`ranked`: "which 3 GPUs are most likely to fail": an alert's series are all 1)."""
    strong = [w for w in dict.fromkeys(content) if w not in _WEAK and w not in filters and not w.isdigit()] or [
        # nothing else said: a filter word that also names a metric ("what is firing": an alert; "GPU mem":
        # memory, a value only of the temperature's sensor and the clock) still does
        w for w in dict.fromkeys(content)
        if w in ("up", "rate")
        or w in filters and (w in knowledge.lexicon["synonyms"] or w in _restricted_values(knowledge))]
    matches = rank(content, knowledge, near, allowed)
    if not matches or not strong:
        raise Unanswerable("no metric in vigil's catalog matches the question"
                           + (f" (words: {', '.join(strong)})" if strong else " (it names no measurement)"))
    best = matches[0]
    unknown = _unexplained(best.matched, strong, knowledge)
    orphans = _orphans(unknown, knowledge)
    alerts_carry = labels_wanted <= ALERT_LABELS and not ranked
    if orphans and (allowed is None or allowed("ALERTS")) and alerts_carry:  # a word only a rule's alert may explain
        alert = _best_alert(content, strong, knowledge)
        left = _unexplained(alert.matched, strong, knowledge) if alert else unknown
        if alert is not None and set(orphans) - set(left) and len(left) <= len(unknown):
            best, unknown = alert, left
    synonyms = knowledge.lexicon["synonyms"]
    explained = [w for w in dict.fromkeys(content) if (w in strong or w in filters)
                 and (w in best.matched or set(synonyms.get(w, ())) & best.matched)]
    if len(explained) < MIN_COVERAGE * (len(explained) + len(unknown)) or not explained:
        raise Unanswerable(f"no metric in vigil's catalog measures {', '.join(repr(w) for w in unknown)} "
                           f"(closest: {best.name}, which matches only {', '.join(sorted(best.matched)) or 'nothing'})")
    return best


def _restricted_values(knowledge: Knowledge) -> set[str]:
    """The words that fix a label's value only on some metrics (lexicon `values` with `only`): on others
    they are words of the measurement ("memory": the HBM sensor, the memory clock, and GPU memory)."""
    values = knowledge.lexicon.get("values", {})
    return {stem(word) for word, found in values.items()
            if all(entry.get("only") for entry in ([found] if isinstance(found, dict) else found))}


def _unexplained(matched: frozenset[str], strong: list[str], knowledge: Knowledge) -> list[str]:
    synonyms = knowledge.lexicon["synonyms"]
    return [w for w in strong if w not in matched and not set(synonyms.get(w, ())) & matched]


def _orphans(unknown: list[str], knowledge: Knowledge) -> list[str]:
    """The unexplained words that are no word of any metric's name or help ("hung", "hanging")."""
    return [w for w in unknown if w not in knowledge.idf]


def _best_alert(content: list[str], strong: list[str], knowledge: Knowledge) -> Match | None:
    """The alert explaining most of the question's strong words (a rule's state), by score on a tie."""
    terms = expand(content, knowledge)
    scored = []
    for name, doc in knowledge.alert_docs.items():
        score, matched = _score(doc, terms, knowledge.idf)
        if matched - _WEAK:
            explained = len(strong) - len(_unexplained(matched, strong, knowledge))
            scored.append((explained, score, name, matched))
    if not scored:
        return None
    explained, score, name, matched = max(scored, key=lambda item: item[:2])
    return Match("ALERTS", score, matched, alert=name)
