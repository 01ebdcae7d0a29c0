"""Spec files as `Located` trees, and an error collector that reports `file:line: message`.

The YAML itself is loaded by the shared loader (`vigil.common.yaml_source`: lines kept, duplicate keys
refused); this module adds what the rule specs need on top: errors collected across every file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from vigil.common.yaml_source import Located, read_yaml

__all__ = ["ErrorLog", "Located", "SpecError", "load_located"]


@dataclass
class ErrorLog:
    """Collects every problem found in the spec files; reports them by file (in load order), then line."""

    entries: list[tuple[str, int, str]] = field(default_factory=list)

    def add(self, file: str, line: int, message: str) -> None:
        self.entries.append((file, line, message))

    @property
    def messages(self) -> list[str]:
        file_order = {f: i for i, f in reversed(list(enumerate(e[0] for e in self.entries)))}
        ordered = sorted(self.entries, key=lambda e: (file_order[e[0]], e[1]))  # stable: same line keeps order
        return [f"{file}:{line}: {message}" for file, line, message in ordered]

    def __bool__(self) -> bool:
        return bool(self.entries)


class SpecError(Exception):
    """Raised when one or more spec files are invalid; `.errors` holds every `file:line: message`."""

    def __init__(self, errors: list[str]):
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


def load_located(path: Path, errors: ErrorLog) -> Located | None:
    """Parse one YAML file into a `Located` tree; record its problems in `errors` (None: nothing to read)."""
    document = read_yaml(path, "spec file")
    for line, message in document.problems:
        errors.add(document.name, line, message)
    if document.readable and document.root is None:
        errors.add(document.name, 1, "the spec file is empty")
    return document.root
