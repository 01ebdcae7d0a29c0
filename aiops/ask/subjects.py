"""Things a question names that are neither a metric nor a label value the lexicon knows:

- a **component** of the stack ("the notifier", "Alertmanager"): its scrape job (`up{job=...}` answers
  whether it is healthy) and the catalog sources of its own series (the metrics of other components do not
  answer a question about it);
- a **person** ("how many pages did ana get", "pages sent to ana"): a word no metric, synonym or stop
  word knows, in the place of a person; it becomes a matcher on the per-person label of the metric
  (`person`, `user`), and a question about a metric without one is refused, not answered for everyone;
- an **XID by what it means** ("fell off the bus" is XID 79): the words of the XID catalogue's names
  (`vigil.rules.xid_catalog`) fix the `xid` label of the XID counter;
- a **SMART attribute by its name** ("reallocated sectors" is attribute 5, "pending sectors" 197): the
  words of the exporter's attribute names (`vigil.exporters.smart.ATA_ATTRIBUTES`) fix `attribute_id` of
  the SMART attribute gauge, on a question about disks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vigil.exporters.smart import ATA_ATTRIBUTES
from vigil.exporters.smart_raw import RULES as SMART_RULES
from vigil.rules.xid_catalog import XID_CATALOG

from .knowledge import Knowledge, stem, words


@dataclass(frozen=True)
class Component:
    job: str  # its scrape job
    sources: tuple[str, ...]  # prefixes of the catalog sources of its own series
    words: tuple[str, ...]  # the (stemmed) question words that named it


def find_component(text: str, knowledge: Knowledge) -> Component | None:
    """The component the question names (the longest name found), or None."""
    found: list[tuple[int, Component]] = []
    for entry in knowledge.lexicon.get("components", ()):
        for name in entry["names"]:
            if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text):
                found.append((len(name), Component(entry["job"], tuple(entry["sources"]), tuple(words(name)))))
    return max(found, key=lambda item: item[0])[1] if found else None


def owner(metric: str, knowledge: Knowledge) -> str | None:
    """The scrape job of the component whose own series `metric` is (None: shared, a record, ALERTS)."""
    info = knowledge.catalog.get(metric)
    if info is None:
        return None
    for entry in knowledge.lexicon.get("components", ()):
        if info.source.startswith(tuple(entry["sources"])):
            return entry["job"]
    return None


# where a person stands in a question: "did ana get", "was ana paged", "pages sent to ana", "ana's pages"
_PERSON_SLOTS = (
    re.compile(r"\b(?:did|does|has|have|was|is|will)\s+([a-z][a-z0-9._-]*)\s+(?:get|got|receive|see|have|been|be|"
               r"paged|called|notified|run|own|start|submit|using|holding|hogging|occupying|running)\b"),
    re.compile(r"\b(?:to|for|user|person)\s+([a-z][a-z0-9._-]*)(?:\s*$|\s+(?:in|over|during|since|today|this|"
               r"per|by|on)\b)"),
    re.compile(r"\b([a-z][a-z0-9._-]*)'s\b"),
    re.compile(r"\bpaged\s+([a-z][a-z0-9._-]*)\b"),
)
_NOT_NAMES = set("""a an the it its this that these those each every any all our my your their his her him them
    someone anyone everyone nobody somebody me us we you they i what which who whom how when where why now
    there here today yesterday week day hour minute second node gpu gpus nodes anything something nothing
    anybody got gotten""".split())


def find_person(text: str, knowledge: Knowledge) -> str | None:
    """A word in the place of a person that is no word of vigil's metrics, lexicon or English glue."""
    for pattern in _PERSON_SLOTS:
        for match in pattern.finditer(text):
            name = match.group(1)
            if name not in _NOT_NAMES and not name.endswith("ly") and not _known(name, knowledge):
                return name
    return None


def _known(word: str, knowledge: Knowledge) -> bool:
    lexicon = knowledge.lexicon
    stemmed = stem(word)
    known = (stemmed in knowledge.idf or stemmed in lexicon["synonyms"] or word in lexicon.get("values", {})
             or stemmed in lexicon["group_labels"] or word in lexicon.get("glue", ()))
    # "to evaluate": a form of a known word ("evaluation") is no name
    kin = len(word) >= 7 and any(other.startswith(word[:7]) for other in knowledge.idf)
    return known or kin or any(part.isdigit() for part in re.split(r"[._-]", word))


def person_label(labels: frozenset[str] | None, knowledge: Knowledge) -> str | None:
    """The label of a metric that names a person (`person`, `user`), if it has one."""
    for label in knowledge.lexicon.get("person_labels", ()):
        if labels is not None and label in labels:
            return label
    return None


_XID_GLUE = {"gpu", "has", "the", "error", "of", "or", "a", "an", "was", "is", "rate", "high"}


def find_xid(question_words: list[str], knowledge: Knowledge) -> tuple[str, frozenset[str]] | None:
    """(xid, the question words that described it) when the question describes an XID of the catalogue
    in words: at least two of its name's own words, and at least two thirds of them."""
    synonyms = knowledge.lexicon["synonyms"]
    seen = {w: {w, *synonyms.get(w, ())} for w in question_words}
    best: tuple[int, float, str, frozenset[str]] | None = None
    for xid, entry in XID_CATALOG.items():
        own = set(words(entry.name)) - _XID_GLUE
        used = frozenset(w for w, forms in seen.items() if forms & own)
        hit = len({form for w in used for form in seen[w]} & own)
        if hit >= 2 and hit >= 2 / 3 * len(own):
            score = (hit, hit / len(own), str(xid), used)
            best = max(best, score) if best else score
    return (best[2], best[3]) if best else None


_SMART_GLUE = {"count", "celsius", "on"}
# words that put a question on disks, where a SMART attribute's words mean that attribute
_DISK_WORDS = {"disk", "drive", "sector", "smart", "ssd", "hdd", "sata", "device"}


@dataclass(frozen=True)
class SmartAttribute:
    attribute_id: str
    words: frozenset[str]  # the question words that named it
    counts: bool  # its value counts events (sectors, errors, timeouts): "disks with ..." are those above 0


def find_smart_attribute(question_words: list[str], knowledge: Knowledge) -> SmartAttribute | None:
    """The SMART attribute the question names by its words ("reallocated sectors": 5), on a question about
    disks (or in words no metric uses): at least two of the name's own words, and two thirds of them."""
    seen = set(question_words)
    best: tuple[int, float, int, frozenset[str]] | None = None
    for attribute_id, name in ATA_ATTRIBUTES.items():
        own = set(words(name.replace("_", " "))) - _SMART_GLUE
        used = frozenset(own & seen)
        if len(used) >= 2 and len(used) >= 2 / 3 * len(own):
            score = (len(used), len(used) / len(own), attribute_id, used)
            best = max(best, score) if best else score
    if best is None:
        return None
    _, _, attribute_id, used = best
    if not (seen & _DISK_WORDS or any(word not in knowledge.idf for word in used)):
        return None
    counts = SMART_RULES.get(attribute_id, ("",))[0] in ("count", "lowest16")
    return SmartAttribute(str(attribute_id), used, counts)
