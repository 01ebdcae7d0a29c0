"""Typed, error-collecting access to one YAML mapping of a spec.

Each getter validates one key, records a `file:line: message` error on failure and returns None, so
validation goes on and every mistake of a spec is reported in one run. Keys that no getter asked for
are reported by `unknown_keys()` (this catches typos such as `severty:`).
"""

from __future__ import annotations

from vigil.common.durations import parse_prometheus_duration
from vigil.common.yaml_source import plain

from .located import ErrorLog, Located
from .promql import COMPARISONS, LABEL_NAME, METRIC_NAME, format_number


class Reader:
    def __init__(self, node: Located, file: str, errors: ErrorLog, what: str, line: int | None = None):
        self.node = node
        self.start_line = node.line if line is None else line  # where "missing key" errors point
        self.file = file
        self.errors = errors
        self.what = what  # e.g. "alert GpuOverheating", used in messages
        self.seen: set[str] = set()

    def has(self, key: str) -> bool:
        return key in self.node.value

    def line(self, key: str | None = None) -> int:
        if key is not None and key in self.node.key_lines:
            return self.node.key_lines[key]
        return self.start_line

    def error(self, key: str | None, message: str) -> None:
        self.errors.add(self.file, self.line(key), message)

    def raw(self, key: str, required: bool = False) -> Located | None:
        self.seen.add(key)
        item = self.node.value.get(key)
        if item is None and required:
            self.error(None, f"{self.what}: missing required key {key!r}")
        return item

    def text(self, key: str, required: bool = False) -> str | None:
        item = self.raw(key, required)
        if item is None:
            return None
        if not isinstance(item.value, str) or not item.value.strip():
            number = isinstance(item.value, (int, float)) and not isinstance(item.value, bool)
            hint = f", got {item.value!r}: quote it, like \"{item.value}\"" if number else ""
            self.errors.add(self.file, item.line, f"{self.what}: {key!r} must be a non-empty string{hint}")
            return None
        return item.value

    def choice(self, key: str, options: tuple[str, ...], required: bool = False) -> str | None:
        value = self.text(key, required)
        if value is not None and value not in options:
            self.error(key, f"{self.what}: {key!r} is {value!r}; expected one of {', '.join(options)}")
            return None
        return value

    def op(self, key: str, required: bool = True) -> str | None:
        return self.choice(key, COMPARISONS, required)

    def number(self, key: str, required: bool = False) -> str | None:
        """The number at `key`, already formatted as PromQL text."""
        item = self.raw(key, required)
        if item is None:
            return None
        if isinstance(item.value, bool) or not isinstance(item.value, (int, float)):
            self.errors.add(self.file, item.line, f"{self.what}: {key!r} must be a number, got {plain(item)!r}")
            return None
        try:
            return format_number(item.value)
        except ValueError as exc:
            self.errors.add(self.file, item.line, f"{self.what}: {key!r}: {exc}")
            return None

    def duration(self, key: str, required: bool = False) -> str | None:
        item = self.raw(key, required)
        if item is None:
            return None
        if not isinstance(item.value, str):
            self.errors.add(self.file, item.line,
                            f"{self.what}: {key!r} must be a duration string like 5m, got {plain(item)!r}")
            return None
        try:
            parse_prometheus_duration(item.value)
        except ValueError as exc:
            self.errors.add(self.file, item.line, f"{self.what}: {key!r}: {exc}")
            return None
        return item.value

    def metric(self, key: str, required: bool = True) -> str | None:
        value = self.text(key, required)
        if value is not None and not METRIC_NAME.match(value):
            self.error(key, f"{self.what}: {key!r} {value!r} is not a valid metric name")
            return None
        return value

    def string_map(self, key: str, label_keys: bool = True) -> dict[str, str] | None:
        """A mapping of label name to string (numbers are accepted and written as text)."""
        item = self.raw(key)
        if item is None:
            return {}
        if not item.is_map():
            self.errors.add(self.file, item.line, f"{self.what}: {key!r} must be a mapping of label: value")
            return None
        out: dict[str, str] = {}
        ok = True
        for name, value in item.value.items():
            line = item.key_lines.get(name, item.line)
            if label_keys and not LABEL_NAME.match(name):
                self.errors.add(self.file, line, f"{self.what}: {name!r} is not a valid label name")
                ok = False
            elif isinstance(value.value, bool) or not isinstance(value.value, (str, int, float)):
                self.errors.add(self.file, line, f"{self.what}: label {name!r} must have a string value")
                ok = False
            else:
                out[name] = value.value if isinstance(value.value, str) else format_number(value.value)
        return out if ok else None

    def name_list(self, key: str, required: bool = False, pattern=LABEL_NAME, what: str = "label name",
                  item: Located | None = None) -> list[str] | None:
        """A list of names (label names by default); `item` reads a value that is not at `key`."""
        if item is None:
            item = self.raw(key, required)
        if item is None:
            return None
        if isinstance(item.value, str):  # a single name is fine too
            item = Located([item], item.line)
        if not item.is_list() or not item.value:
            self.errors.add(self.file, item.line, f"{self.what}: {key!r} must be a non-empty list of {what}s")
            return None
        names = []
        for entry in item.value:
            if not isinstance(entry.value, str) or not pattern.match(entry.value):
                self.errors.add(self.file, entry.line, f"{self.what}: {entry.value!r} is not a valid {what}")
                return None
            names.append(entry.value)
        return names

    def unknown_keys(self) -> None:
        for key in self.node.value:
            if key not in self.seen:
                self.error(key, f"{self.what}: unknown key {key!r}")
