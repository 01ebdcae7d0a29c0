"""Decoding rules for packed ATA raw values, on the raw strings smartctl prints in each of its formats
(`man smartctl`, `-v ID,FORMAT`)."""

import pytest

from vigil.exporters.smart_raw import RULES, decode


def words(*fields: int) -> int:
    """A 48-bit raw value from 16-bit fields, least significant first."""
    return sum(f << (16 * i) for i, f in enumerate(fields))


@pytest.mark.parametrize("attr, raw, string, expected, rule", [
    # tempminmax: current temperature, Min/Max in the upper words
    (194, words(36, 0, 16), "36 (0 16 0 0 0)", 36, "temperature"),
    (194, words(26, 13, 41), "26 (Min/Max 13/41)", 26, "temperature"),
    (194, words(41), "41", 41, "temperature"),
    # smartctl told to print raw48 (or no string at all): the low word still holds the temperature
    (194, words(36, 0, 16), str(words(36, 0, 16)), 36, "temperature"),
    (190, words(36, 14106, 1346), None, 36, "temperature"),
    # Seagate's three command-timeout counters: the lowest field counts, as raw48 or as smartctl's raw16
    (188, words(292, 287, 286), "1228379455780", 292, "lowest16"),
    (188, words(292, 287, 286), "286 287 292", 292, "lowest16"),
    # power-on hours in smartctl's raw48, msec24hour32 and min2hour formats
    (9, 20836, "20836", 20836, "hours"),
    (9, (1234 << 32) | 20836, "20836h+00m+01.234s", 20836, "hours"),
    (9, 60 * 100 + 7, "100h+07m", 100, "hours"),
    (9, (1234 << 32) | 20836, None, 20836, "hours"),
    # counts: raw16(raw16) (default for 5) prints the count first, then the nonzero upper words
    (5, words(7, 2, 1), "7 (1 2)", 7, "count"),
    (5, 3, "3", 3, "count"),
    (197, words(7, 2, 1), "1 2 7", 7, "count"),  # bare raw16: most significant word first
    (198, 12, None, 12, "count"),
    # anything else is left as it is (Seagate's error rates 1, 7, 195 pack a count and a total)
    (7, 30646360733, "30646360733", 30646360733, "raw"),
])
def test_decode(attr, raw, string, expected, rule):
    assert decode(attr, raw, string) == (expected, rule)


def test_every_published_attribute_has_a_rule():
    from vigil.exporters.smart import ATA_ATTRIBUTES

    assert set(ATA_ATTRIBUTES) == set(RULES)
