"""Shared by the `vigil ask` tests: the questions every set already holds (the example bank, the tuning set
and the outside set), so that a test's own questions can be checked to be in none of them; and the check
that a question is answered with one query and no second reading."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from vigil.aiops.ask.answer import ask
from vigil.aiops.ask.examples import load_examples

BENCH = Path(__file__).resolve().parent.parent / "bench" / "ask"


def normal(text: str) -> str:
    """A question as compared across sets: lower case, words only."""
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def questions_in_sets() -> set[str]:
    known = {normal(e.question) for e in load_examples()}
    for name in ("eval_questions.yaml", "outside_questions.yaml"):
        known |= {normal(q["question"]) for q in yaml.safe_load((BENCH / name).read_text())["questions"]}
    return known


def assert_in_no_set(questions: list[str]) -> None:
    assert not questions_in_sets() & {normal(q) for q in questions}


def assert_one_reading(question: str, promql: str) -> None:
    answer = ask(question)
    assert answer.promql == promql, answer.explanation
    assert not answer.readings
