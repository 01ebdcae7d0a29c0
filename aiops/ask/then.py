"""Now against then: "utilization now minus what it was 6 hours ago", "power compared to an hour ago" is
the answer less the same answer at that offset (docs/ask.md). The offset is read on the raw series a
record computes from (records keep samples only since their rule was loaded).
"""

from __future__ import annotations

import re

from vigil.common.durations import format_duration

from .knowledge import Knowledge
from .reader_words import UNITS, number_of
from .records import inline_records

_THEN = re.compile(r"\b(?:now\s+)?(?:minus|vs\.?|versus|compared\s+(?:to|with)|than|against|from)\s+"
                   r"(?:(?:what|where|how\s+\w+)\s+(?:it|they)\s+(?:was|were)\s+|the\s+same\s+|the\s+value\s+)?"
                   r"(\d+|a|an|one|two|three|four|five|six|seven|ten|twelve)\s*"
                   r"(minutes?|mins?|hours?|h|days?|d|weeks?|w)\s+ago\b")
# a metric's selector, its range if it has one ("x{a="b"}[5m]"); label names and keywords are no metrics
_SELECTOR = re.compile(r"(?<![\w:\"'])([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?(\[[^\]]*\])?(?!\s*\()")


def read_then(text: str) -> tuple[int | None, str]:
    """(seconds ago the question compares with, the text without those words)."""
    match = _THEN.search(text)
    if not match:
        return None, text
    return number_of(match.group(1), 1) * UNITS[match.group(2)], text[:match.start()] + " " + text[match.end():]


def against_then(expr: str, seconds: int, knowledge: Knowledge, steps: list[str]) -> str:
    """`expr` less itself `seconds` ago, the earlier one read on the raw series of any record."""
    offset = format_duration(seconds)
    earlier = inline_records(expr, knowledge) or expr

    def shifted(match: re.Match) -> str:
        if match.group(1) not in knowledge.metrics:
            return match.group(0)  # a label name, a keyword
        return match.group(0) + f" offset {offset}"
    steps.append(f"now against {offset} ago: the answer less itself at offset {offset}")
    compared = re.search(r"[<>]|[=!]=", expr) is not None  # "x > 0.8" binds tighter than "-": grouped
    return f"{_grouped(expr) if compared else expr} - {_grouped(_SELECTOR.sub(shifted, earlier))}"


def _grouped(expr: str) -> str:
    """`expr` in parentheses, unless one pair already holds all of it."""
    depth = 0
    for index, char in enumerate(expr):
        depth += (char == "(") - (char == ")")
        if depth == 0 and index < len(expr) - 1:
            return f"({expr})"
    return expr if expr.startswith("(") else f"({expr})"
