"""True values of packed ATA SMART raw values.

An ATA attribute's raw value is 48 bits (`raw.value` in `smartctl --json`) whose layout is the vendor's:
a Seagate ST33000650NS reports attribute 194 as 68,719,476,772 (0x10_0000_0024: 36 °C in the low word,
other fields above it) and 188 as 1,228,379,455,780 (three 16-bit counters 286 287 292). smartctl
formats the raw value per attribute and drive model (`-v ID,FORMAT`, its drive database) into
`raw.string`, e.g. `36 (0 16 0 0 0)`, but leaves `raw.value` undecoded.

`decode(attribute_id, raw_value, raw_string)` returns the true value under one rule per attribute:

| id  | rule            | true value                                                                   |
|-----|-----------------|------------------------------------------------------------------------------|
| 190, 194 | temperature | `raw.string`'s leading number (smartctl's `tempminmax`), else the low 16 bits |
| 188 | lowest16        | the lowest 16-bit field (smartctl `-v 188,raw16` prints it last)              |
| 9   | hours           | `raw.string`'s leading number (`raw48`, `min2hour`, `msec24hour32` all start  |
|     |                 | with hours), else the low 32 bits                                            |
| 5, 187, 197, 198 | count | `raw.string`'s leading number (smartctl's `raw16(raw16)` puts the count  |
|     |                 | first, extra words in parentheses; the last one for a bare `raw16`/`raw8`     |
|     |                 | list), else the raw value                                                    |
| any other | raw       | the raw value unchanged (e.g. Seagate's 1, 7, 195 are error *rates* packing a |
|     |                 | count and a total; vigil does not publish them)                              |

The undecoded raw value stays available next to the decoded one (`SmartAttribute.raw`).
"""

from __future__ import annotations

import re
from typing import Callable, NamedTuple

_LEADING = re.compile(r"\s*(-?\d+)")
_INTEGER_LIST = re.compile(r"\s*\d+(\s+\d+)+\s*$")  # smartctl raw16 / raw8: "286 287 292", words high to low
# a temperature outside this range is not a temperature: the field is something else
_PLAUSIBLE_CELSIUS = range(-60, 200)


class SmartAttribute(NamedTuple):
    """One ATA attribute as published: name, true value, the undecoded 48-bit raw value, the rule used."""

    name: str
    value: int
    raw: int
    rule: str


def leading_int(string: str | None) -> int | None:
    """The integer `string` starts with (smartctl's raw strings: "36 (Min/Max 26/55)", "20836h+12m")."""
    match = _LEADING.match(string or "")
    return int(match.group(1)) if match else None


def temperature(raw: int, string: str | None) -> int:
    """Celsius: smartctl's decoded reading (it knows the vendor layout), cross-checked against the low word."""
    lead = leading_int(string)
    if lead is not None and lead in _PLAUSIBLE_CELSIUS:
        return lead
    low16 = raw & 0xFFFF
    return low16 if low16 in _PLAUSIBLE_CELSIUS else raw & 0xFF


def lowest16(raw: int, string: str | None) -> int:
    """The lowest 16-bit field: Seagate packs three command-timeout counters into attribute 188."""
    return raw & 0xFFFF


def hours(raw: int, string: str | None) -> int:
    """Power-on hours: smartctl's formats all print hours first; undecoded, the low 32 bits hold them
    (msec24hour32 keeps milliseconds in the upper bits)."""
    lead = leading_int(string)
    if lead is not None and 0 <= lead <= raw:
        return lead
    return raw & 0xFFFFFFFF


def count(raw: int, string: str | None) -> int:
    """A sector or error count: smartctl's formatted count when it formatted one, else the raw value."""
    if string and _INTEGER_LIST.match(string):
        return int(string.split()[-1])  # raw16/raw8 list the words from the most significant one
    lead = leading_int(string)
    if lead is not None and 0 <= lead <= raw:
        return lead
    return raw


def unchanged(raw: int, string: str | None) -> int:
    return raw


Rule = Callable[[int, "str | None"], int]
RULES: dict[int, tuple[str, Rule]] = {
    5: ("count", count),
    9: ("hours", hours),
    187: ("count", count),
    188: ("lowest16", lowest16),
    190: ("temperature", temperature),
    194: ("temperature", temperature),
    197: ("count", count),
    198: ("count", count),
}


def decode(attribute_id: int, raw: int, string: str | None) -> tuple[int, str]:
    """(true value, rule name) of attribute `attribute_id` with raw value `raw` and smartctl's `string`."""
    name, rule = RULES.get(attribute_id, ("raw", unchanged))
    return rule(raw, string), name
