"""Shared by the `vigil ask` tests: the questions every set already holds (the example bank, the tuning set
and the outside set), so that a test's own questions can be checked to be in none of them."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

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
