"""Runbook entries: every alert's `runbook_url` must lead to a section that exists.

A runbook base that is a path (the default `docs/runbooks.md`) is read relative to the current
directory, else to vigil's own source tree; its anchors are the GitHub-style slugs of its headings
(`## GpuOverheating` -> `#gpuoverheating`). A base that is a URL (`https://wiki/...`) cannot be read
here and is not checked, nor is a path found in neither place (an installed vigil has no docs/ folder:
the shipped specs' runbooks are checked in vigil's own tests).
"""

from __future__ import annotations

import re
from pathlib import Path

_SOURCE_ROOT = Path(__file__).resolve().parent.parent
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


class RunbookIndex:
    """Anchors of the runbook files named by the specs, read once each."""

    def __init__(self, roots: tuple[Path, ...] | None = None):
        self._roots = roots if roots is not None else (Path.cwd(), _SOURCE_ROOT)
        self._anchors: dict[str, set[str] | None] = {}

    def _read(self, base: str) -> set[str] | None:
        if base not in self._anchors:
            found = next((root / base for root in self._roots if (root / base).is_file()), None)
            if found is None:
                self._anchors[base] = None
            else:
                lines = found.read_text(encoding="utf-8").splitlines()
                self._anchors[base] = {slug(m.group(1)) for m in map(_HEADING.match, lines) if m}
        return self._anchors[base]

    def problem(self, runbook_url: str) -> str | None:
        """Why `runbook_url` leads nowhere, or None when its section exists (or it is a URL)."""
        if "://" in runbook_url:
            return None
        base, _, anchor = runbook_url.partition("#")
        anchors = self._read(base)
        if anchors is None:  # nothing to check against here
            return None
        if anchor and anchor not in anchors:
            return (f"no runbook entry: {base} has no section #{anchor}; add one headed with the alert's "
                    "name (## AlertName) or point 'runbook' at an existing section")
        return None
