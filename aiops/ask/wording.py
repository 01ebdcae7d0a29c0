"""The text of a question made regular before it is read (`intent.parse_question`): typos and shorthand
mended (`spelling.py`), a bare "%" spelled "percent", and the ways operators name an XID's number ("XID
code", "by error code" on a question about XIDs) turned into the label's own word, `xid`. And the parts of a
question that say why it is asked rather than what (`without_purpose`, `question_parts`, for `answer.py`).
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
    # "(the MemAvailable way, not free)", "per host, not per GPU": an aside saying what is not meant
    question = re.sub(r"(?:,\s*|\bbut\s+|\brather\s+)not\s+(?:the\s+)?[\w-]+(?:\s+[\w-]+)?\s*(?=\)|$|[.;?])", " ",
                      question.lower())
    text = " " + question.replace("?", " ").replace(",", " ") + " "
    text, mended = mend(text, knowledge, known)
    text = _PERCENT.sub(lambda m: m.group(0) if m.group(1) else " percent ", text)
    text = re.sub(r"\(\s*(\d+(?:\.\d+)?)\s*(?:%|percent)", r" at \1 percent", text)  # "doing nothing (0% util)"
    text = re.sub(r"\b(?:broken\s+down|grouped|split|aggregated)\s+by\b", "by", text)  # "down" is no state here
    text = re.sub(r"\bbreak\s*down\b(?=.*\bby\b)", " ", text)  # "break down pages by channel": a grouping
    text = re.sub(r"#\s*of\b", "number of", text)  # "# of alerts firing"
    text = re.sub(r"\bburn(?:ed|t|s)?\s+through\b", "consumed", text)  # energy, not an error budget's burn
    if re.search(r"\b(?:energy|kwh|joules?|electricity)\b", text):
        text = re.sub(r"\bburn(?:ed|t|s)?\b", "consumed", text)
    # "clocks held down/back", "slowed down by the power cap": throttled, no state of a thing down
    text = re.sub(r"\b(?:held|holding|holds|hold|slowed|clocked|throttled)\s+(?:down|back)\b", "throttled", text)
    text = re.sub(r"\bfor (?:whatever|any|some) reason\b", " ", text)
    text = re.sub(r"\b(?:the )?most idle\b", "idlest", text)  # the least busy, as "idlest" is
    text = re.sub(r"\b(?:the )?strag+lers?\b", "the idlest gpu", text)  # a straggler: the least busy GPU
    text = re.sub(r"\bload\s+averages?\b", "load", text)  # the host's load average is a name, not an average
    idle = next((e for e in knowledge.lexicon.get("two_readings", ()) if e.get("name") == "idle gpus"), None)
    if idle and not re.search(idle["unless"], text):  # "idle GPUs", "free GPUs": no job holds them (and asked back)
        text = re.sub(r"\b(?:idle|free|unused|unallocated|spare)\s+(gpus|cards)\b", r"\1 without a job", text)
        text = re.sub(r"\b(gpus|cards)\s+(are|is)\s+(?:idle|free|unused|unallocated|spare)\b", r"\1 \2 without a job",
                      text)
    # "what fraction of the last 30 minutes was each GPU up / throttled": a share of time, per second of it
    text = re.sub(r"\b(?:what\s+)?(?:fraction|share|percentage|percent|proportion|portion)\s+of\s+(?:the\s+)?"
                  r"((?:last|past)\s+(?:\d+\s*\w+|an?\s+\w+|hour|day|minute))\b", r"rate over the \1", text)
    text = re.sub(r"\bwho(?:'s|s| is| are)\s+(?:running|using|on)(?:\s+(?:stuff|things|jobs?|anything|something|"
                  r"workloads?))?(?:\s+on)?\b", "which users are running jobs on", text)
    text = re.sub(r"\bon[- ]call\b", "oncall", text)  # the on-call series' own word
    # "each prometheus job": Prometheus's scrape jobs, not the Prometheus component's own target
    text = re.sub(r"\b(each|every|per|all|which|many|what)\s+prometheus\s+(jobs?)\b", r"\1 scrape \2", text)
    text = re.sub(r"\bprometheus(?:'s)?\s+(?:scrape\s+)?(targets?)\b", r"scrape \1", text)  # every target's `up`
    text = _XID_CODE.sub("xid", text)
    if re.search(r"\bxids?\b", text):
        text = _BY_CODE.sub(r"\1 xid", text)
    return text, mended


# why the question is asked, after it ("…, need to know where a 40G model still fits", "Looking for idle ones.")
_PURPOSE = re.compile(r"\s*[,;:-]\s*(?:i |we )?(?:need|want|trying|looking|so that|so we|so i|because|to see|to know|"
                      r"to check|to find|to spot)\b.*$|\s+for (?:the|our|a|my) (?:\w+ ){0,3}(?:report|review|retro|"
                      r"meeting|dashboard|slides?|deck|discussion)\b.*$", re.I)
_ASKING = re.compile(r"^\s*(?:how|what|which|who|when|where|is|are|do|does|did|has|have|show|list|give|tell|count|"
                     r"any)\b|\?\s*$", re.I)


# a sentence saying why, after the question ("Looking for idle ones.", "Trying to spot a stuck exporter.")
_WHY_SENTENCE = re.compile(r"(?<=[.!?])\s+(?:i'?m |we'?re |i |we )?"
                           r"(?:looking|trying|need|want|so that|because|just|thanks|"
                           r"thank you|cheers)\b[^.!?]*[.!?]?\s*$", re.I)


def without_purpose(question: str) -> str:
    """The question without trailing sentences that say why it is asked (they name no measurement)."""
    while True:
        shorter = _WHY_SENTENCE.sub("", question)
        if shorter == question or not shorter.strip():
            return question
        question = shorter


def question_parts(question: str) -> list[str]:
    """The parts of a refused question that may be the question itself, most likely first: the question
    without a clause saying why it is asked; then, of several sentences, those that ask (a question word,
    a question mark), then the rest, longest first."""
    parts = [_PURPOSE.sub("", question)] if _PURPOSE.search(question) else []
    if ":" in question:  # "need the energy number for the report: kWh used per node over 24h"
        parts.append(question.rsplit(":", 1)[1].strip())
    for splitter, fewest in ((r"\s+[-–—]\s+", 1),  # "thinking of raising the threshold - what was the peak ..."
                             (r"(?<=[.!?])\s+", 3)):  # "Pages went missing. How many failed per channel?"
        pieces = [part.strip() for part in re.split(splitter, question) if len(part.split()) >= fewest]
        if len(pieces) > 1:  # those that ask first, then the longest
            parts += sorted(pieces, key=lambda part: (not _ASKING.search(part), -len(part)))
    return [part for part in dict.fromkeys(parts) if part and part != question]
