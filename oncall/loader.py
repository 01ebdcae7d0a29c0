"""Load the on-call YAML file, reporting every problem as `file:line: message`, all at once.

The shared loader (`vigil.common.yaml_source`) keeps each value's line and refuses a key defined twice
(a target defined twice would otherwise silently lose the first one); pydantic then validates the
plain data and each of its errors is mapped back to the line of the deepest value its location reaches.
Names that point at another section (people, schedules, policies, contacts) are checked on the plain
data by `references.py`, so an unknown name is reported at the line of the reference even when other
parts of the file are invalid too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vigil.common.yaml_source import YamlDocument, line_at, parse_yaml, plain, read_yaml
from vigil.oncall.ical import OverridesIcsError, resolve_overrides_ics
from vigil.oncall.model import OncallConfig, UnknownReferences
from vigil.oncall.references import reference_problems


class OncallConfigError(ValueError):
    """The on-call file is unreadable or invalid; `problems` lists every `file:line: message`."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


def load_oncall(path: str | Path) -> OncallConfig:
    """Read and validate the on-call file at `path`, with each schedule's `overrides_ics` file (relative
    to the on-call file's folder) read into its overrides; a problem in one is reported at the line of
    its `overrides_ics:` key."""
    path = Path(path)
    document = read_yaml(path, "on-call config")
    config = _validate(document)
    try:
        return resolve_overrides_ics(config, path.parent)
    except OverridesIcsError as exc:
        raise OncallConfigError(document.messages([(line_at(document.root, loc), message)
                                                   for loc, message in exc.located])) from None


def parse_oncall(text: str, filename: str = "<oncall>") -> OncallConfig:
    """Validate on-call YAML `text`; `filename` prefixes the error locations."""
    return _validate(parse_yaml(text, filename))


def _validate(document: YamlDocument) -> OncallConfig:
    root = document.root
    if not document.readable:
        raise OncallConfigError(document.messages())
    if root is None:
        raise OncallConfigError(document.messages([(1, "the on-call config is empty (expected `people:` or, first version, `targets:`)")]))
    if not root.is_map():
        raise OncallConfigError(document.messages([(root.line, "expected a mapping at top level")]))
    data = plain(root)
    problems = [(line_at(root, loc), message) for loc, message in reference_problems(data)]
    if "targets" not in data and "people" not in data:
        problems.append((root.line, "targets: Field required (or, the second version of the file, `people:`)"))
    config = None
    try:
        config = OncallConfig.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        for error in errors:
            if isinstance(error.get("ctx", {}).get("error"), UnknownReferences):
                continue  # already reported with exact lines by reference_problems
            if error["type"] == "too_short" and _has_inner_error(error["loc"], errors):
                continue  # pydantic counts only the valid items; the item's own error says more
            loc = _keys_in_file(data, error["loc"])
            where = ".".join(str(part) for part in loc) or "(top level)"
            message = error["msg"].removeprefix("Value error, ")
            problems.append((line_at(root, loc), f"{where}: {message}"))
    if problems or document.problems:
        raise OncallConfigError(document.messages(problems))
    return config


def _has_inner_error(loc: tuple, errors: list[dict]) -> bool:
    return any(len(other["loc"]) > len(loc) and other["loc"][:len(loc)] == loc for other in errors)


def _keys_in_file(data: Any, loc: tuple) -> tuple:
    """`loc` without the parts pydantic adds that are not keys of the file (union member tags)."""
    kept = []
    for part in loc:
        if part == "[key]":
            continue  # pydantic's marker for an invalid mapping key: the key itself is the place
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        elif isinstance(data, (dict, list)) and not _is_union_tag(part):
            pass  # a missing or unknown key: keep it so the message names it
        else:
            continue
        kept.append(part)
    return tuple(kept)


def _is_union_tag(part: Any) -> bool:
    return isinstance(part, str) and (part in ("inbox", "apprise") or part[:1].isupper())
