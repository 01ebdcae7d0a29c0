"""YAML loading that remembers line numbers, and an error collector that reports `file:line: message`.

PyYAML's `compose` gives a node tree whose nodes carry marks; we turn it into `Located` values (the
plain Python value plus its 1-based line) so that validation can point at the exact line of every
mistake. Duplicate mapping keys, which `yaml.safe_load` silently merges, are reported as errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


@dataclass
class Located:
    """A YAML value and where it starts.

    `value` is a `dict[str, Located]` for mappings, a `list[Located]` for sequences and a plain
    scalar (str, int, float, bool, None) otherwise. `key_lines` maps each mapping key to its line.
    """

    value: Any
    line: int
    key_lines: dict[str, int] = field(default_factory=dict)

    def is_map(self) -> bool:
        return isinstance(self.value, dict)

    def is_list(self) -> bool:
        return isinstance(self.value, list)

    def is_scalar(self) -> bool:
        return not self.is_map() and not self.is_list()


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
    """Parse one YAML file into a `Located` tree; on failure record the error and return None."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        errors.add(name, 1, f"cannot read spec file: {exc.strerror if isinstance(exc, OSError) else exc}")
        return None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        errors.add(name, line, f"invalid YAML: {exc.problem or exc.context}")
        return None
    except yaml.YAMLError as exc:
        errors.add(name, 1, f"invalid YAML: {exc}")
        return None
    if root is None:
        errors.add(name, 1, "the spec file is empty")
        return None
    constructor = yaml.SafeLoader("")
    return _convert(root, name, constructor, errors)


def _convert(node: yaml.Node, name: str, constructor: yaml.SafeLoader, errors: ErrorLog) -> Located:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        result: dict[str, Located] = {}
        key_lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                errors.add(name, key_line, "mapping keys must be plain strings")
                continue
            key = str(key_node.value)
            if key in result:
                errors.add(name, key_line, f"duplicate key {key!r} (first defined on line {key_lines[key]})")
                continue
            key_lines[key] = key_line
            result[key] = _convert(value_node, name, constructor, errors)
        return Located(result, line, key_lines)
    if isinstance(node, yaml.SequenceNode):
        return Located([_convert(item, name, constructor, errors) for item in node.value], line)
    try:
        value = constructor.construct_object(node, deep=True)
    except yaml.YAMLError as exc:  # e.g. an invalid timestamp or an unknown tag
        errors.add(name, line, f"invalid value: {exc}")
        value = None
    if not isinstance(value, (str, int, float, bool)) and value is not None:
        value = str(node.value)  # dates and other exotic scalars: keep the text the author wrote
    return Located(value, line)
