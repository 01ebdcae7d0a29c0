"""The harness's simulated now: what VIGIL_TEST_NOW may say, and what it refuses."""

from __future__ import annotations

import pytest

from sim_clock import DEFAULT_NOW, read_now


@pytest.mark.parametrize("text, now", [
    (None, DEFAULT_NOW), ("", DEFAULT_NOW), ("1800000000", 1_800_000_000.0),
    ("2027-01-15T08:00:00Z", 1_800_000_000.0), ("2027-01-15T09:00:00+01:00", 1_800_000_000.0),
    ("2027-01-15T08:00:00", 1_800_000_000.0),  # no offset: UTC, as vigil.common.times.parse_time reads it
])
def test_the_now_is_unix_seconds_or_rfc_3339(text, now):
    assert read_now(text) == now


@pytest.mark.parametrize("text", ["garbage", "next friday", "0001-01-01T00:00:00Z"])
def test_anything_else_is_refused_naming_the_variable(text):
    with pytest.raises(ValueError, match=f"VIGIL_TEST_NOW='{text}' is neither an RFC 3339 time"):
        read_now(text)
