"""The bank of worked examples (`examples.yaml`): question, reasoning steps, PromQL.

Retrieval uses them two ways: the metrics of the examples nearest a question rank higher, and the
nearest example is named in the explanation (and shown to a language model as a worked shot).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from vigil.rules.query import read_query

from .knowledge import words

EXAMPLES_PATH = Path(__file__).with_name("examples.yaml")
_GENERIC = {"gpu", "node", "which", "what", "the", "is", "are", "of", "on", "in", "a", "how", "many"}


@dataclass(frozen=True)
class Example:
    question: str
    reasoning: tuple[str, ...]
    promql: str
    metrics: tuple[str, ...]
    words: frozenset[str]


def _example(entry: dict) -> Example:
    reading = read_query(entry["promql"], lambda name: None)
    metrics = tuple(dict.fromkeys(s.name for s in reading.selectors if s.name))
    return Example(entry["question"], tuple(entry.get("reasoning", ())), entry["promql"], metrics,
                   frozenset(words(entry["question"])) - _GENERIC)


@functools.cache
def load_examples(path: Path = EXAMPLES_PATH) -> tuple[Example, ...]:
    return tuple(_example(entry) for entry in yaml.safe_load(path.read_text(encoding="utf-8"))["examples"])


def nearest(question_words: set[str], examples: tuple[Example, ...], n: int = 3) -> list[tuple[float, Example]]:
    """The `n` examples whose question shares most words with the question (Jaccard), best first."""
    found = set(question_words) - _GENERIC
    scored = [(len(found & ex.words) / len(found | ex.words), ex) for ex in examples if found | ex.words]
    scored.sort(key=lambda item: -item[0])
    return [item for item in scored[:n] if item[0] > 0]
