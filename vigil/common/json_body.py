"""Decode an untrusted JSON request body into plain data, or say exactly why it cannot be.

`json.loads` alone lets through what breaks a server later, as a 500 instead of a 400: documents nested
so deep that parsing or serialising them overflows the stack, integers of more digits than Python
converts (4,300), lone UTF-16 surrogates (`"\\ud800"`)
that no UTF-8 encoder (SQLite, PostgreSQL, a log file) accepts, NUL characters that PostgreSQL refuses
in text, and the non-standard `NaN`/`Infinity`. Each is refused here with a reason a sender can act on.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 32  # an Alertmanager notification nests 3 levels (body → alerts → alert → labels)


class BodyRejected(ValueError):
    """The body is not acceptable JSON; `reason` is a short machine-readable word, str() the message."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def _no_constants(name: str) -> Any:
    raise BodyRejected("invalid_json", f"body is not valid JSON: {name} is not a JSON number")


def decode_json_body(raw: bytes, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of `raw` (UTF-8), checked as described above; raises `BodyRejected`."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyRejected("invalid_json", f"body is not UTF-8: {exc.reason} at byte {exc.start}") from None
    try:
        value = json.loads(text, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise BodyRejected("invalid_json", f"body is not valid JSON: {exc}") from None
    except RecursionError:
        raise BodyRejected("too_deep", f"JSON nested deeper than {max_depth} levels") from None
    except BodyRejected:  # NaN or Infinity, said by _no_constants
        raise
    except ValueError:  # Python's cap on the digits of an integer it converts (4,300): no field needs one
        raise BodyRejected("invalid_json", "body is not acceptable JSON: a number has more digits than any "
                                           "field takes") from None
    if _SUSPECT_ESCAPE.search(text) is not None or not _shallow(text, value, max_depth):
        check_plain_json(value, max_depth)  # names what is wrong, and where
    return value


# a NUL or a lone surrogate in the decoded value can only come from a `\u` escape (json.loads refuses raw
# control characters, and the UTF-8 decoder encoded surrogates); without one, only the depth needs a look
_SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


def plain_json_text(text: str) -> bool:
    """True when `text` (decoded UTF-8) has nothing `decode_json_body` refuses other than bad syntax and
    depth: no `NaN`/`Infinity` (not even inside a string: the answer may be a cautious False) and no
    `\\u` escape of a NUL or a surrogate. For a caller that parses such text with another JSON parser
    (pydantic's) and bounds the depth itself."""
    return "NaN" not in text and "Infinity" not in text and _SUSPECT_ESCAPE.search(text) is None


def _shallow(text: str, value: Any, max_depth: int) -> bool:
    """No container of `value` (decoded from `text`) nested deeper than `max_depth`: at once when `text` has
    fewer brackets than that (each container opens with one), else by the cheap walk (containers only)."""
    if text.count("{") + text.count("[") < max_depth:
        return True
    level, depth = ([value] if isinstance(value, (dict, list)) else []), 1
    while level:
        nested = [c for item in level for c in (item.values() if isinstance(item, dict) else item)
                  if isinstance(c, (dict, list))]
        if nested and depth >= max_depth:
            return False
        level = nested
        depth += 1
    return True


def check_plain_json(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Walk `value` without recursion: depth, and every key and string encodable and NUL-free."""
    pending: list[tuple[Any, int, str]] = [(value, 1, "body")]
    while pending:
        item, depth, where = pending.pop()
        if isinstance(item, dict):
            if depth > max_depth:
                raise BodyRejected("too_deep", f"JSON nested deeper than {max_depth} levels (at {where})")
            for key, child in item.items():
                _check_string(key, f"{where}: a key")
                pending.append((child, depth + 1, f"{where}.{_short(key)}"))
        elif isinstance(item, list):
            if depth > max_depth:
                raise BodyRejected("too_deep", f"JSON nested deeper than {max_depth} levels (at {where})")
            pending.extend((child, depth + 1, f"{where}[{index}]") for index, child in enumerate(item))
        elif isinstance(item, str):
            _check_string(item, where)


def _check_string(text: str, where: str) -> None:
    if "\x00" in text:
        raise BodyRejected("invalid_text", f"{where}: NUL characters (\\u0000) are not allowed in text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BodyRejected("invalid_text",
                           f"{where}: a lone UTF-16 surrogate (\\ud800-\\udfff) is not valid Unicode text") from None


def _short(key: str) -> str:
    safe = key.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
    return safe if len(safe) <= 40 else safe[:37] + "..."
