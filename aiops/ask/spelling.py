"""Typos and chat shorthand in a question ("hotest", "temprature", "whcih", "rn"), mended before it is read.

A word of four letters or more that vigil does not know is replaced by the one known word a single
slip away: a letter left out, one too many, or two letters swapped (a wrong letter only in words of eight
letters or more, so that a name such as "alice" is not taken for "alive"). When several known words are
that close the word is left as it is (a guess between two words is no mending), unless they are forms of
one word ("powerd": power, powered). The known words are those
of the metric catalog (names, help), the lexicon, the alert names, the worked examples and the words the
question reader itself knows. Shorthand ("rn", "whats") is spelled out from the lexicon's `shorthand`.
"""

from __future__ import annotations

import re
import string

from vigil.exporters.smart import ATA_ATTRIBUTES

from .examples import load_examples
from .knowledge import Knowledge, LEXICON_PATH, stem

_WORD = re.compile(r"[a-z][a-z0-9_']*")
_MIN_LEN = 4
_SUBSTITUTE_LEN = 8
_vocabularies: dict[int, frozenset[str]] = {}


def vocabulary(knowledge: Knowledge, extra: frozenset[str] = frozenset()) -> frozenset[str]:
    """Every word form vigil reads a question with (unstemmed)."""
    key = id(knowledge)
    if key not in _vocabularies:
        found: set[str] = set()
        for doc in knowledge.metrics.values():
            found.update(re.findall(r"[a-z]+", doc.name.lower()))
            found.update(re.findall(r"[a-z]+", doc.help.lower()))
        for name, doc in knowledge.alert_docs.items():
            found.update(w.lower() for w in re.findall(r"[A-Z]?[a-z]+", name))
            found.update(re.findall(r"[a-z]+", doc.help.lower()))
        found.update(re.findall(r"[a-z]+", LEXICON_PATH.read_text(encoding="utf-8").lower()))
        for example in load_examples():
            found.update(re.findall(r"[a-z]+", example.question.lower()))
        for name in ATA_ATTRIBUTES.values():  # "realocated sectors": the SMART attributes' own words
            found.update(re.findall(r"[a-z]+", name.lower()))
        _vocabularies[key] = frozenset(found)
    return _vocabularies[key] | extra


def _near(word: str) -> set[str]:
    """The words one slip away: a letter left out or added, two neighbours swapped (a wrong letter too
    in long words)."""
    letters = string.ascii_lowercase
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    found = {a + b[1:] for a, b in splits if b}
    found |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    found |= {a + c + b for a, b in splits for c in letters}
    if len(word) >= _SUBSTITUTE_LEN:
        found |= {a + c + b[1:] for a, b in splits if b for c in letters}
    return found - {word}


def mend(text: str, knowledge: Knowledge, known: frozenset[str] = frozenset()) -> tuple[str, list[str]]:
    """(the text with shorthand spelled out and typos mended, what was changed: "hotest -> hottest")."""
    words = vocabulary(knowledge, known)
    shorthand = knowledge.lexicon.get("shorthand", {})
    changed: list[str] = []

    def fix(match: re.Match) -> str:
        word = match.group(0)
        if word in shorthand:
            changed.append(f"{word} -> {shorthand[word]}")
            return shorthand[word]
        bare = word[:-2] if word.endswith("'s") else word
        if len(bare) < _MIN_LEN or not bare.isalpha() or bare in words or _plural_known(bare, words):
            return word
        near = _near(bare) & words
        if len({stem(w) for w in near}) != 1:  # "powerd": power or powered, one word either way
            return word
        mended = min(near, key=lambda w: (len(w), w))
        changed.append(f"{bare} -> {mended}")
        return mended + word[len(bare):]
    return _WORD.sub(fix, text), changed


def _plural_known(word: str, words: frozenset[str]) -> bool:
    """'errors', 'throttled', 'reallocations': a known word with a usual ending."""
    for ending in ("s", "es", "ed", "d", "ing", "ions", "ion", "ly"):
        if ending == "d" and not word.endswith("ed"):
            continue  # "throttled" is throttle + d; "powerd" is a slip, not power + d
        if word.endswith(ending) and word[: -len(ending)] in words:
            return True
    return False
