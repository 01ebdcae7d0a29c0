"""Prometheus-style durations: `30s`, `5m`, `1h`, `14d`, `2w`, `1h30m`, or plain seconds."""

from __future__ import annotations

import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0, "w": 604_800.0, "y": 31_536_000.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")


def parse_duration(text: str) -> float:
    """Seconds in `text`; raise ValueError with the accepted forms for anything else."""
    text = str(text).strip()
    try:
        seconds = float(text)
    except ValueError:
        pos, seconds = 0, 0.0
        for match in _PART.finditer(text):
            if match.start() != pos:
                break
            seconds += float(match.group(1)) * _UNITS[match.group(2)]
            pos = match.end()
        if pos != len(text) or not text:
            raise ValueError(f"{text!r} is not a duration (examples: 300, 30s, 5m, 1h, 14d, 2w, 1h30m)") from None
    if not seconds > 0:
        raise ValueError(f"{text!r}: a duration must be positive")
    return seconds
