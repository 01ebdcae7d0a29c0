"""How a question asks for its answer, beside what it measures (docs/ask.md "How it works", third round):
an order ("biggest first", "sorted from low to high"), a unit ("in days", "in GiB", "kWh"), things named in
the plural ("the node-2 GPUs": one figure each), label values said in several words ("SW power cap"), two
values of one label side by side ("corrected vs uncorrected"), how long ago ("seconds ago"), and a value
reached at some point of a window ("dropped to 0 % at some point in the last day").
Pure regular expressions over the lower-cased question; `intent.py` puts the pieces on the intent.
"""

from __future__ import annotations

import re

from .knowledge import Knowledge

# "biggest first", "sorted by temperature", "from high to low": every series, in that order (no aggregation)
_ORDER = re.compile(r"\b(?:(?:highest|largest|biggest|hottest|busiest|most|greatest|heaviest|worst|warmest|max|"
                    r"slowest|longest|oldest|lowest|smallest|least|coolest|coldest|idlest|min|fastest|shortest|newest)"
                    r"\s+(?:first|on top)|sort(?:ed)?(?:\s+by)?|"
                    r"order(?:ed)?\s+by|rank(?:ed)?\s+by|in\s+(?:descending|ascending|decreasing|increasing)\s+order|"
                    r"descending|ascending|(?:from\s+)?(?:high(?:est)?|most|largest|biggest)\s+to\s+"
                    r"(?:low(?:est)?|least|smallest)|"
                    r"(?:from\s+)?(?:low(?:est)?|least|smallest)\s+to\s+(?:high(?:est)?|most|largest|biggest))\b")
_ORDER_UP = re.compile(r"\b(?:lowest|smallest|least|coolest|coldest|idlest|min|fastest|shortest|newest)\s+(?:first|on top)|ascending|increasing|"
                       r"\b(?:from\s+)?(?:low(?:est)?|least|smallest)\s+to\b")
# things named in the plural ("pcie replays/sec on the node-2 gpus"): a figure for each, not their sum, unless
# the question aggregates ("total", "how many", "across all")
_EACH_ONE = re.compile(r"(?<!all )(?<!across )(?<!across the )(?<!of all )(?<!of all the )\b(?:gpus|cards|disks|drives)\b")
_UNIT_OUT = re.compile(r"\b(?:in|as|how many)\s+(minutes|hours|days|weeks|kb|mb|gb|tb|kib|mib|gib|tib|gigabytes|megabytes|"
                       r"terabytes|mhz|ghz|kwh|wh|mwh|kj|mj|kw|kilowatts|megawatts)\b")
_UNIT_NAMES = {"gigabytes": "gb", "megabytes": "mb", "terabytes": "tb", "kilowatts": "kw", "megawatts": "mw"}
# an energy unit names the measure as well as the unit ("how many kWh did the GPUs use")
_ENERGY_UNIT = re.compile(r"\b(kwh|wh|mwh|kilowatt[- ]hours?|watt[- ]hours?)\b")
_ENERGY_NAMES = {"kilowatt-hour": "kwh", "kilowatt hour": "kwh", "kilowatt-hours": "kwh", "kilowatt hours": "kwh",
                 "watt-hour": "wh", "watt hour": "wh", "watt-hours": "wh", "watt hours": "wh"}


def read_order(text: str) -> str | None:
    """`sort_desc` or `sort` when the question asks for every series in an order; None otherwise."""
    if not _ORDER.search(text):
        return None
    return "sort" if _ORDER_UP.search(text) else "sort_desc"


def read_unit(text: str) -> tuple[str | None, str]:
    """(the unit the answer is asked in, the text without it; an energy unit leaves the word "energy")."""
    unit_out = None
    unit = _UNIT_OUT.search(text)
    if unit:
        unit_out = _UNIT_NAMES.get(unit.group(1), unit.group(1))
        said = " energy " if unit_out in ("kwh", "wh", "mwh", "kj", "mj") else " "
        text = text[:unit.start()] + said + text[unit.end():]
    energy = _ENERGY_UNIT.search(text)
    if energy:
        unit_out = unit_out or _ENERGY_NAMES.get(energy.group(1), energy.group(1))
        text = text[:energy.start()] + " energy " + text[energy.end():]
    return unit_out, text


def names_each_one(text: str) -> bool:
    """The question names the things in the plural, not all of them ("the node-2 GPUs")."""
    return bool(_EACH_ONE.search(text))


def value_phrases(text: str, knowledge: Knowledge) -> list[tuple[str, str, tuple[str, ...] | None]]:
    """Label values said in several words (lexicon `value_phrases`: "SW power cap", "thermal throttling" of
    the violation time), each (label, value, the only metrics it applies to). Unlike one-word values their
    words still choose the metric."""
    found = []
    for entry in knowledge.lexicon.get("value_phrases", ()):
        if re.search(entry["phrase"], text):
            only = tuple(entry["only"]) if entry.get("only") else None
            found += [(label, value, only) for label, value in entry["labels"].items()]
    return found


_AGE = re.compile(r"\bago\b|\bhow long since\b|\bsince (?:the |its |their )?last\b|\bhow old\b|\bage of\b|"
                  r"\bstale(?:ness)?\b|\b(?:seconds|secs|minutes|mins|hours|time)\s+since\b")
_SIDE_BY_SIDE = re.compile(r"\b([a-z_]+)(?:\s+(?:vs\.?|versus|and|or|compared (?:to|with))\s+|\s*/\s*)([a-z_]+)\b")


def asks_age(text: str) -> bool:
    """"How many seconds ago", "how long since the last heartbeat": now minus a recorded time."""
    return bool(_AGE.search(text))


def contrasted_label(text: str, value_words: list[tuple[str, str, tuple[str, ...] | None]]) -> str | None:
    """The label two of the question's values, side by side, both set ("corrected vs uncorrected ECC
    errors": error_type): a figure per value is asked, not a filter on one of them nor a fraction."""
    def said(token: str, label: str) -> bool:  # "uncorrectable" says the value "uncorrected"
        return any(known == label and (token == value or token.startswith(value[:6]))
                   for known, value, _ in value_words)
    for pair in _SIDE_BY_SIDE.finditer(text):
        for label, _, only in value_words:
            if said(pair.group(1), label) and said(pair.group(2), label):
                return label
    return None


# "dropped to 0 % at some point in the last day", "ever above 90 %": the window's extreme, not its average
_AT_SOME_POINT = re.compile(r"\b(?:at (?:some|any) (?:point|time|moment)|at times|any ?time|ever)\b")
_DROPPED = re.compile(r"\b(?:dropped|dropping|drops|drop|fell|falls|fall|went|go|goes|sank|sunk)\s+(?:down\s+)?to"
                      r"(?=\s+-?\d)")
_REACHED = re.compile(r"\b(?:hit|hits|hitting|reached|reaches|reach|touched|touches)(?:\s+(?:up\s+)?to)?(?=\s+(-?\d+))")


def at_some_point(text: str) -> tuple[bool, str]:
    """(the question asks whether a value was reached at some point, the text with "dropped to" read as
    "at" and the "at some point" words taken out)."""
    text = _DROPPED.sub("at", text)
    text = _REACHED.sub(lambda m: "at" if float(m.group(1)) == 0 else "at least", text)  # "hit 0 %"; "reached 90 %"
    if not _AT_SOME_POINT.search(text):
        return False, text
    return True, _AT_SOME_POINT.sub(" ", text)
