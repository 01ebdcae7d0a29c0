"""The complete example in docs/oncall.md is a valid on-call file with no coverage gap."""

from __future__ import annotations

import re
from pathlib import Path

import icalendar
from click.testing import CliRunner

from vigil.cli import main

DOC = Path(__file__).parent.parent / "docs" / "oncall.md"


def test_the_documented_example_loads_and_covers_every_tier(tmp_path):
    example = re.search(r"### A complete example\n\n```yaml\n(.*?)```", DOC.read_text(), re.S).group(1)
    (tmp_path / "oncall.yaml").write_text(example)
    (tmp_path / "overrides").mkdir()
    empty = icalendar.Calendar()
    empty.add("version", "2.0")
    empty.add("prodid", "-//vigil tests//EN")
    (tmp_path / "overrides" / "gpu-primary.ics").write_bytes(empty.to_ical())
    result = CliRunner().invoke(main, ["oncall", "check", str(tmp_path / "oncall.yaml"), "--from", "2026-11-23T00:00"])
    assert result.exit_code == 0, result.output
    assert "no mistakes, no coverage gaps" in result.output
