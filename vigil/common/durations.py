"""Durations: one parser for what users type, one strict parser for Prometheus files, one formatter.

- `parse_duration` takes a number of seconds (`10`, `0.5`) or a Prometheus duration (`30s`, `5m`,
  `1h30m`, `500ms`, `2d`, `1w`, `1y`): every command-line flag that takes a duration accepts these.
- `parse_prometheus_duration` takes only what Prometheus itself accepts in a rule or config file
  (units largest first, each at most once), so a rule spec never holds a value promtool would refuse.
- `format_duration` writes seconds as the canonical Prometheus duration (`1m30s`, `500ms`, `0s`).
"""

from __future__ import annotations

import re

# Prometheus durations: units in decreasing order, each at most once, e.g. "1h30m", "500ms"
_PROMETHEUS = re.compile(r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$")
_SECONDS = re.compile(r"^(?:\d+(?:\.\d*)?|\.\d+)$")
_UNIT_SECONDS = (("y", 365 * 86400), ("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1))

PROMETHEUS_EXAMPLES = "like 30s, 5m, 1h30m"
EXAMPLES = "seconds like 10 or 0.5, or a Prometheus duration like 30s, 5m, 1h30m, 2d"


def parse_prometheus_duration(text: str) -> float:
    """Seconds in a Prometheus duration such as `5m` or `1h30m`; ValueError if Prometheus would refuse it."""
    match = _PROMETHEUS.match(text) if isinstance(text, str) and text else None
    if match is None:
        raise ValueError(f"{text!r} is not a Prometheus duration ({PROMETHEUS_EXAMPLES})")
    parts = [int(g) if g else 0 for g in match.groups()]
    seconds = sum(count * unit for count, (_, unit) in zip(parts[:6], _UNIT_SECONDS))
    return seconds + parts[6] / 1000


def parse_duration(text: str | int | float) -> float:
    """Seconds in `text`: a number of seconds or a Prometheus duration; ValueError naming both forms.

    Zero is a duration; a caller that needs a positive one says so (see `click_types.Duration`).
    """
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a duration ({EXAMPLES})")
    if isinstance(text, (int, float)):
        if not 0 <= text < float("inf"):
            raise ValueError(f"{text!r} is not a duration ({EXAMPLES})")
        return float(text)
    value = str(text).strip()
    if _SECONDS.match(value):
        return float(value)
    try:
        return parse_prometheus_duration(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a duration ({EXAMPLES})") from None


def format_duration(seconds: float) -> str:
    """The canonical Prometheus duration for `seconds` (largest units first, milliseconds last; `0s` for zero)."""
    millis = round(seconds * 1000)
    if millis <= 0:
        return "0s"
    out = []
    whole, millis = divmod(millis, 1000)
    for suffix, unit in _UNIT_SECONDS:
        count, whole = divmod(whole, unit)
        if count:
            out.append(f"{count}{suffix}")
    if millis:
        out.append(f"{millis}ms")
    return "".join(out)
