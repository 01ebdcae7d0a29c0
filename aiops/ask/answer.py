"""The Text2PromQL pipeline: question -> intent -> retrieval -> composition -> validation -> (run)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from vigil.common.prometheus_api import PrometheusClient

from .compose import compose
from .examples import load_examples, nearest
from .intent import parse_question
from .knowledge import Knowledge, load_knowledge
from .retrieve import Unanswerable, best_metric
from .validate import InvalidQuery, validate

MAX_QUESTION = 500


@dataclass
class Answer:
    promql: str
    metrics: list[str]
    explanation: str

    def as_json(self) -> dict:
        return {"promql": self.promql, "metrics": self.metrics, "explanation": self.explanation}


# a request to change something, not a question: PromQL only reads, so any query would answer something else
COMMAND = re.compile(r"(?:please\s+)?(delete|drop|remove|erase|wipe|purge|truncate|reset|restart|reboot|kill|"
                     r"stop|shut\s*down|disable|enable|drain|cancel|silence|acknowledge|ack|resolve|clear)\b", re.I)


def check_question(question: object) -> str:
    if not isinstance(question, str) or not question.strip():
        raise Unanswerable("the question is empty")
    if len(question) > MAX_QUESTION:
        raise Unanswerable(f"the question is longer than {MAX_QUESTION} characters")
    command = COMMAND.match(question.strip())
    if command:
        raise Unanswerable(f"'{command.group(1).lower()}' asks to change something; vigil ask only reads metrics "
                           "with PromQL (to act on the fleet: vigil incidents, vigil maintenance, vigil chaos)")
    return question.strip()


def ask(question: str, knowledge: Knowledge | None = None) -> Answer:
    """Answer offline; raises `Unanswerable` (with the reason) when no metric fits."""
    question = check_question(question)
    knowledge = knowledge or load_knowledge()
    examples = load_examples()
    intent = parse_question(question, knowledge)
    near = nearest(set(intent.words), examples)
    match = best_metric(intent.words, knowledge, near, frozenset(intent.filter_words))
    composed = compose(intent, match, knowledge)
    try:
        metrics = validate(composed.promql, knowledge)
    except InvalidQuery as exc:  # a composition bug: say so rather than answer with a broken query
        raise Unanswerable(f"could not compose a valid query: {exc}") from None
    steps = list(composed.steps)
    alike = [example for _, example in near if set(example.metrics) & set(metrics)]
    if alike:
        steps.append(f"closest worked example: {alike[0].question!r} -> {alike[0].promql}")
    return Answer(composed.promql, metrics, "; ".join(steps))


def run_query(promql: str, prometheus_url: str, at: float | None = None) -> list[dict]:
    """The instant result of `promql` as [{"labels": {...}, "value": v}] (raises PrometheusUnavailable)."""
    samples = PrometheusClient(prometheus_url, timeout=30).query(promql, at=at)
    return [{"labels": sample.labels, "value": sample.value} for sample in samples]
