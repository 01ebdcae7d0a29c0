"""What a grouping word means on the chosen series ("per job", "by XID code", "each GPU").

- a label the series carries is grouped by as it is;
- a label it lacks may be reached by a join (lexicon `joins`): "per job" on per-GPU series is the training
  job, through the series that says which job holds each GPU (`vigil_gpu_job`, on node and GPU);
- or it is read as another label the series has (lexicon `label_alternatives`): "per job" on `up` or
  `scrape_duration_seconds`, which no training job owns, is Prometheus's scrape job (`job`);
- otherwise it is dropped, and the explanation says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .knowledge import Knowledge, stem

_GROUP = re.compile(r"\b(per|by|for each|for every|each|every)\s+(each\s+|every\s+)?(?!each\b|every\b)([a-z_]+)"
                    r"(?=(?:\s+([a-z_]+))?)")
# "held by jobs", "used by processes": a relation, not a grouping (which says "by each job")
_PASSIVE = re.compile(r"(?:\w+ed|held|run|taken|owned|seen|used)\s+(?:\w+\s+)?$")
_TIME_UNITS = ("second", "sec", "minute", "hour", "day")


def read_grouping(text: str, knowledge: Knowledge, entities: set[str],
                  scrape_jobs: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(labels to group by, "per X" words the lexicon does not know: perhaps a label of the metric) of
    every "per X" / "by X" / "each X" / "every X" (`scrape_jobs`: "job" is the scrape job's label)."""
    group_by: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    group_labels = knowledge.lexicon["group_labels"]
    for match in _GROUP.finditer(text):
        intro, each, word, after = match.groups()
        if re.search(r"\bnot\s+$", text[:match.start()]):
            continue  # "summed over the node's cards, not per card"
        if intro == "by" and not each and word.endswith("s") and word in entities \
                and _PASSIVE.search(text[:match.start()]):
            continue
        if intro == "by" and word in ("a", "an", "any", "one", "some", "no", "the", "its", "their") \
                and _PASSIVE.search(text[:match.start()]):
            continue  # "held by any job", "occupied by a job": a relation
        labels = group_labels.get(stem(word)) or group_labels.get(word)
        if not labels and after and (after in entities or stem(word) not in _TIME_UNITS):
            labels = group_labels.get(stem(after))  # "each training job", "each on-call person": the word after
        if labels and scrape_jobs:
            labels = ["job" if label == "job_id" else label for label in labels]
        if labels:
            group_by = tuple(dict.fromkeys(group_by + tuple(labels)))
        elif stem(word) not in _TIME_UNITS:
            unknown += (word,)
    for listed in knowledge.lexicon.get("value_lists", ()):
        if re.search(listed["phrase"], text):  # "which driver versions": one row per value of the label
            group_by = tuple(dict.fromkeys(group_by + (listed["label"],)))
    return group_by, unknown


@dataclass(frozen=True)
class Grouping:
    labels: tuple[str, ...]
    join: tuple[str, tuple[str, ...], str] | None = None  # (series, on labels, label brought in)
    why: tuple[str, ...] = ()


def resolve(wanted: tuple[str, ...], labels: frozenset[str] | None, knowledge: Knowledge) -> Grouping:
    """The labels to group by on a series with `labels` (None: unknown, every label allowed)."""
    if labels is None:
        return Grouping(wanted)
    joins = knowledge.lexicon.get("joins", {})
    alternatives = knowledge.lexicon.get("label_alternatives", {})
    kept: list[str] = []
    join = None
    why: list[str] = []
    for label in wanted:
        if label in labels:
            kept.append(label)
            continue
        spec = joins.get(label)
        if spec and set(spec["on"]) <= labels and join is None:
            join = (spec["series"], tuple(spec["on"]), label)
            kept.append(label)
            why.append(f"'{label}' through {spec['series']} (on {', '.join(spec['on'])})")
            continue
        other = next((alt for alt in alternatives.get(label, ()) if alt in labels), None)
        if other:
            kept.append(other)
            why.append(f"'{label}' is not on these series: grouped by '{other}' instead")
        else:
            why.append(f"'{label}' is not on these series: not grouped by it")
    return Grouping(tuple(dict.fromkeys(kept)), join, tuple(why))


def joined(expr: str, grouping: Grouping) -> str:
    """`expr` with the label the grouping needs brought in from its join series."""
    if grouping.join is None:
        return expr
    series, on, label = grouping.join
    return f"{expr} * on ({', '.join(on)}) group_left ({label}) {series}"
