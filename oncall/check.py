"""Checking an on-call file before it is used: every mistake, and every coverage gap (a time when a
tier has nobody on call) over the coming weeks, each as FILE:LINE: message. `vigil oncall check` and
`vigil notifier check-oncall` both print this, so the two never disagree."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from vigil.common.yaml_source import line_at, plain, read_yaml
from vigil.oncall.coverage import gaps, salvage
from vigil.oncall.loader import OncallConfigError, load_oncall
from vigil.oncall.model import OncallConfig
from vigil.oncall.schedule_model import zone_named
from vigil.oncall.schedules import moment_at

WEEK_S = 7 * 86400


@dataclass(frozen=True)
class FileCheck:
    config: OncallConfig | None  # None: the file has mistakes
    problems: list[str]  # FILE:LINE: message, each mistake
    gaps: list[str]  # FILE:LINE: message, each coverage gap
    zone: ZoneInfo
    start: float

    @property
    def ok(self) -> bool:
        return not self.problems and not self.gaps

    def summary(self, weeks: int) -> str:
        if self.ok:
            return f"no mistakes, no coverage gaps in {weeks} week(s) from {format_time(self.start, self.zone)}"
        return (f"{len(self.problems)} mistake(s), {len(self.gaps)} coverage gap(s) in {weeks} week(s) "
                f"from {format_time(self.start, self.zone)}")


def check_file(path: Path, from_text: str, now: float, weeks: int) -> FileCheck:
    """Check the on-call file at `path`, the look-ahead starting at `from_text` (`moment_at`'s forms, in
    the file's zone; ValueError when it is none of them) and lasting `weeks`."""
    problems: list[str] = []
    try:
        config = load_oncall(path)
    except OncallConfigError as exc:
        problems += exc.problems
        config = None
    document = read_yaml(path, "on-call config")
    source = config if config is not None else salvage(plain(document.root) if document.root else None)
    zone = zone_named(getattr(source, "timezone", None) or "UTC")
    start = moment_at(from_text, zone, now)
    found = []
    for gap in gaps(source, start, start + weeks * WEEK_S):
        line = line_at(document.root, ("policies", gap.policy, "tiers", gap.tier_index)) if document.root else 1
        found.append(f"{path}:{line}: policy {gap.policy} {tier_label(gap.tier_name, gap.tier_index)} has nobody on call "
                     f"from {format_time(gap.start, zone)} to {format_time(gap.end, zone)}")
    return FileCheck(config, problems, found, zone, start)


def tier_label(name: str, index: int) -> str:
    """`tier N`, with ` (NAME)` unless the tier has no name of its own."""
    return f"tier {index + 1}" + ("" if name == f"tier {index + 1}" else f" ({name})")


def format_time(at: float, zone: ZoneInfo) -> str:
    return datetime.fromtimestamp(at, zone).strftime("%Y-%m-%d %H:%M %Z")
