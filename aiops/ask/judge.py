"""Execution accuracy: two queries answer a question alike when their results, evaluated at the same
instant against the same Prometheus, are the same (docs/ask.md "How accuracy is judged").

- the metric name (`__name__`) is left out of each label set (functions drop it, a selector keeps it);
- when both results hold exactly one series, only the values are compared (one number answers alike
  whatever labels an aggregation kept);
- otherwise both must hold the same label sets, each with a value within a relative 1e-6 (NaN equals NaN);
  the order of the series (`sort_desc`, `topk`) is not compared; label sets that differ only by labels one
  side dropped are matched on the labels both carry, when those tell every series apart on both sides
  (`sum by (tier) (x)` answers as `x` does when x's series differ only by tier);
- two empty results count as the same answer only when both queries read the same metrics (an empty
  answer from the wrong metric is wrong).

A question marked `ambiguous` (it has two readings: bench/ask/outside_questions.yaml) is answered right
when `vigil ask` says so and one of the readings it offers gives the result of the gold query or of one
of its `also` queries; a question that is not ambiguous is judged by the main answer alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable

from .answer import ask
from .knowledge import Knowledge
from .retrieve import Unanswerable
from .validate import validate

REL_TOL = 1e-6


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-9)


def _keyed(result: list[dict]) -> dict[frozenset, float]:
    return {frozenset((k, v) for k, v in row["labels"].items() if k != "__name__"): row["value"] for row in result}


def same_answer(gold: list[dict], predicted: list[dict], gold_metrics: set[str] | None = None,
                predicted_metrics: set[str] | None = None) -> tuple[bool, str]:
    """(alike, why not) for two instant results as [{"labels": {...}, "value": v}, ...]."""
    if not gold and not predicted:
        same = gold_metrics == predicted_metrics
        return same, "" if same else "both empty, but they read different metrics"
    if len(gold) == 1 and len(predicted) == 1:
        same = _close(gold[0]["value"], predicted[0]["value"])
        return same, "" if same else f"value {predicted[0]['value']} != {gold[0]['value']}"
    want, got = _keyed(gold), _keyed(predicted)
    if set(want) != set(got):
        matched = _on_shared_labels(gold, predicted)
        if matched is None:
            return False, f"{len(got)} series != {len(want)} expected ({len(set(got) - set(want))} unexpected)"
        want, got = matched
    wrong = [key for key in want if not _close(want[key], got[key])]
    return not wrong, "" if not wrong else f"{len(wrong)} values differ"


def _on_shared_labels(gold: list[dict], predicted: list[dict]) -> tuple[dict, dict] | None:
    """Both results keyed by the labels every series of both carries, when those labels tell each side's
    series apart and name the same series: `sum by (tier) (x)` and `x` where x's series differ only by
    tier (the rest, one target's `instance` and `job`, is the same on all) are one answer. None otherwise."""
    shared = set.intersection(*(set(row["labels"]) - {"__name__"} for row in gold + predicted))
    if not shared:
        return None
    want = {frozenset((k, row["labels"][k]) for k in shared): row["value"] for row in gold}
    got = {frozenset((k, row["labels"][k]) for k in shared): row["value"] for row in predicted}
    if len(want) != len(gold) or len(got) != len(predicted) or set(want) != set(got):
        return None
    return want, got


@dataclass(frozen=True)
class Outcome:
    question: str
    category: str
    split: str
    gold: str
    predicted: str | None  # None: the question was refused
    correct: bool
    why: str
    gold_series: int = -1  # how many series the gold query returned (-1: not run)
    asked_back: bool = False  # the answer offered several readings (docs/ask.md "Asking back")


def load_questions(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["questions"]


def _rows(client: PrometheusClient, promql: str, at: float) -> list[dict]:
    return [{"labels": s.labels, "value": s.value} for s in client.query(promql, at=at)]


def judge_one(entry: dict, client: PrometheusClient, at: float, knowledge: Knowledge) -> Outcome:
    """Answer one evaluation question offline and compare its result with the gold query's at `at`."""
    gold, question, category, split = entry["gold"], entry["question"], entry.get("category", ""), entry.get("split", "")
    try:
        answer = ask(question, knowledge)
    except Unanswerable as exc:
        return Outcome(question, category, split, gold, None, False, f"refused: {exc}")
    gold_rows = _rows(client, gold, at)
    asked_back = len(answer.readings) > 1
    if entry.get("ambiguous"):
        return _judge_readings(entry, answer, client, at, knowledge, gold_rows)
    try:
        rows = _rows(client, answer.promql, at)
    except PrometheusUnavailable as exc:
        return Outcome(question, category, split, gold, answer.promql, False, f"Prometheus refused it: {exc}",
                       len(gold_rows), asked_back)
    correct, why = same_answer(gold_rows, rows, set(validate(gold, knowledge)), set(answer.metrics))
    return Outcome(question, category, split, gold, answer.promql, correct, why, len(gold_rows), asked_back)


def _judge_readings(entry: dict, answer, client: PrometheusClient, at: float, knowledge: Knowledge,
                    gold_rows: list[dict]) -> Outcome:
    """An ambiguous question: right when the answer offers readings and one of them gives a gold result."""
    gold, question, category, split = entry["gold"], entry["question"], entry.get("category", ""), entry.get("split", "")
    shown = " | ".join(reading.promql for reading in answer.readings) or answer.promql
    if len(answer.readings) < 2:
        return Outcome(question, category, split, gold, shown, False, "two readings, but it answered one without "
                       "saying so", len(gold_rows))
    golds = [(gold, gold_rows)] + [(other, _rows(client, other, at)) for other in entry.get("also", ())]
    for reading in answer.readings:
        try:
            rows = _rows(client, reading.promql, at)
        except PrometheusUnavailable:
            continue
        for promql, wanted in golds:
            if same_answer(wanted, rows, set(validate(promql, knowledge)), set(reading.metrics))[0]:
                return Outcome(question, category, split, gold, shown, True, "", len(gold_rows), True)
    return Outcome(question, category, split, gold, shown, False, "asked back, but no reading gives a gold result",
                   len(gold_rows), True)
