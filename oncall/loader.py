"""Load the on-call YAML file, reporting every problem as `file:line: message`, all at once.

The YAML is composed into nodes first so each value keeps its line number; pydantic then validates the
plain data and each of its errors is mapped back to the line of the deepest node its location reaches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from vigil.oncall.model import OncallConfig, UnknownTargets


class OncallConfigError(ValueError):
    """The on-call file is unreadable or invalid; `problems` lists every `file:line: message`."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


def load_oncall(path: str | Path) -> OncallConfig:
    """Read and validate the on-call file at `path`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise OncallConfigError([f"{path}: cannot read on-call config: {exc.strerror or exc}"]) from None
    return parse_oncall(text, str(path))


def parse_oncall(text: str, filename: str = "<oncall>") -> OncallConfig:
    """Validate on-call YAML `text`; `filename` prefixes the error locations."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        reason = getattr(exc, "problem", None) or str(exc)
        raise OncallConfigError([f"{filename}:{line}: invalid YAML: {reason}"]) from None
    if root is None:
        raise OncallConfigError([f"{filename}:1: the on-call config is empty (expected `targets:`)"])
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise OncallConfigError([f"{filename}:{root.start_mark.line + 1}: expected a mapping at top level"])

    problems: list[tuple[int, str]] = list(_unknown_targets(data, root))
    try:
        config = OncallConfig.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        for error in errors:
            if isinstance(error.get("ctx", {}).get("error"), UnknownTargets):
                continue  # already reported with exact lines by _unknown_targets
            if error["type"] == "too_short" and _has_inner_error(error["loc"], errors):
                continue  # pydantic counts only the valid items; the item's own error says more
            loc = _keys_in_file(data, error["loc"])
            where = ".".join(str(part) for part in loc) or "(top level)"
            message = error["msg"].removeprefix("Value error, ")
            problems.append((_line_of(root, loc), f"{where}: {message}"))
        config = None
    if problems:
        problems.sort(key=lambda item: item[0])
        raise OncallConfigError([f"{filename}:{line}: {message}" for line, message in problems])
    return config


def _has_inner_error(loc: tuple, errors: list[dict]) -> bool:
    return any(len(other["loc"]) > len(loc) and other["loc"][:len(loc)] == loc for other in errors)


def _unknown_targets(data: dict, root: yaml.Node) -> list[tuple[int, str]]:
    targets = data.get("targets")
    known = set(targets) if isinstance(targets, dict) else set()
    found = []
    routes = data.get("routes")
    for index, route in enumerate(routes if isinstance(routes, list) else []):
        name = route.get("notify") if isinstance(route, dict) else None
        if isinstance(name, str) and name not in known:
            loc = ("routes", index, "notify")
            found.append((_line_of(root, loc), f"routes.{index}.notify: unknown target {name!r}"))
    default = data.get("default")
    if isinstance(default, str) and default not in known:
        found.append((_line_of(root, ("default",)), f"default: unknown target {default!r}"))
    return found


def _keys_in_file(data: Any, loc: tuple) -> tuple:
    """`loc` without the parts pydantic adds that are not keys of the file (union member tags)."""
    kept = []
    for part in loc:
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


def _line_of(node: yaml.Node, loc: tuple[Any, ...]) -> int:
    """1-based line of the deepest node that `loc` reaches from `node`."""
    line = node.start_mark.line + 1
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == str(part):
                    # an unknown key is best shown at the key itself
                    child = value_node
                    line = key_node.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
            line = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return line
