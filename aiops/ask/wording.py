"""The text of a question made regular before it is read (`intent.parse_question`): typos and shorthand
mended (`spelling.py`), a bare "%" spelled "percent", and the ways operators name an XID's number ("XID
code", "by error code" on a question about XIDs) turned into the label's own word, `xid`.
"""

from __future__ import annotations

import re

from .knowledge import Knowledge
from .spelling import mend

_PERCENT = re.compile(r"(\d\s*)?%")
_XID_CODE = re.compile(r"\bxid\s+(?:error\s+)?(?:codes?|numbers?|ids?|types?)\b")
_BY_CODE = re.compile(r"\b(by|per|each|every|which|what)\s+(?:error\s+)?codes?\b")


def regular(question: str, knowledge: Knowledge, known: frozenset[str]) -> tuple[str, list[str]]:
    """(" lowercased text ", what was mended) with the spellings above made regular."""
    text = " " + question.lower().replace("?", " ").replace(",", " ") + " "
    text, mended = mend(text, knowledge, known)
    text = _PERCENT.sub(lambda m: m.group(0) if m.group(1) else " percent ", text)
    text = re.sub(r"\b(?:broken\s+down|grouped|split|aggregated)\s+by\b", "by", text)  # "down" is no state here
    text = re.sub(r"\bbreak\s*down\b(?=.*\bby\b)", " ", text)  # "break down pages by channel": a grouping
    text = re.sub(r"\bon[- ]call\b", "oncall", text)  # the on-call series' own word
    # "each prometheus job": Prometheus's scrape jobs, not the Prometheus component's own target
    text = re.sub(r"\b(each|every|per|all|which|many|what)\s+prometheus\s+(jobs?)\b", r"\1 scrape \2", text)
    text = _XID_CODE.sub("xid", text)
    if re.search(r"\bxids?\b", text):
        text = _BY_CODE.sub(r"\1 xid", text)
    return text, mended
