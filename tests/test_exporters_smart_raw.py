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


def test_simulated_disks_pack_194_like_real_ones_and_the_exporter_decodes_it():
    from click.testing import CliRunner
    from prometheus_client.parser import text_string_to_metric_families

    from vigil.cli.node_exporter import node

    result = CliRunner().invoke(node, ["--once", "--simulate", "--sim-disks", "4", "--node", "n1",
                                       "--sysfs-root", "/nonexistent"])
    assert result.exit_code == 0, result.output
    samples = [s for fam in text_string_to_metric_families(result.stdout) for s in fam.samples]

    def by_device(metric, **labels):
        return {s.labels["device"]: s.value for s in samples
                if s.name == metric and labels.items() <= s.labels.items()}

    decoded = by_device("vigil_disk_smart_attribute_raw", attribute_id="194")
    raw = by_device("vigil_disk_smart_attribute_raw_value", attribute_id="194")
    temperature = by_device("vigil_disk_temperature_celsius")
    assert set(decoded) == {"/dev/sda", "/dev/sdb"}  # the ATA ones
    for device, celsius in decoded.items():
        assert celsius == temperature[device] and 20 <= celsius <= 45
        assert raw[device] > 2 ** 32 and int(raw[device]) & 0xFFFF == celsius  # Min/Max packed above
