"""One way to load a YAML file: every value keeps its line, mistakes are `file:line: message`, and a key
defined twice is an error naming both lines (`yaml.safe_load` silently keeps the last one).

PyYAML's `compose` gives a node tree whose nodes carry marks; `parse_yaml` turns it into `Located`
values (the plain Python value plus its 1-based line). Validation then points at the exact line of
every mistake: a reader of the tree directly (the rule specs), or pydantic on `plain(root)` with each
error's location mapped back by `line_at` (the on-call file, the stack settings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_MERGE_TAG = "tag:yaml.org,2002:merge"


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
class YamlDocument:
    """A parsed file: its name, its tree (None when unreadable, invalid or empty) and its problems.

    A document with problems but a tree (a duplicate key, say) can still be validated, so that every
    mistake of the file is reported in one run; `readable` is False when there is nothing to validate.
    """

    name: str
    root: Located | None
    problems: list[tuple[int, str]] = field(default_factory=list)
    readable: bool = True

    def messages(self, extra: list[tuple[int, str]] = ()) -> list[str]:
        """Every problem (and `extra` ones) as `name:line: message`, by line."""
        found = sorted(dict.fromkeys([*self.problems, *extra]), key=lambda item: item[0])  # stable within a line
        return [f"{self.name}:{line}: {message}" for line, message in found]


def read_yaml(path: Path, what: str) -> YamlDocument:
    """Read and parse the file at `path`; `what` names it in a read error ("spec file", "on-call config")."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
        return YamlDocument(name, None, [(1, f"cannot read {what}: {reason}")], readable=False)
    return parse_yaml(text, name)


def parse_yaml(text: str, name: str) -> YamlDocument:
    """Parse YAML `text` (named `name` in messages) into a `Located` tree, collecting its problems."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        return YamlDocument(name, None, [(line, f"invalid YAML: {exc.problem or exc.context}")], readable=False)
    except yaml.YAMLError as exc:
        return YamlDocument(name, None, [(1, f"invalid YAML: {exc}")], readable=False)
    document = YamlDocument(name, None)
    if node is not None:
        document.root = _convert(node, yaml.SafeLoader(""), document.problems)
    return document


def _convert(node: yaml.Node, constructor: yaml.SafeLoader, problems: list[tuple[int, str]]) -> Located:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        return _convert_mapping(node, constructor, problems)
    if isinstance(node, yaml.SequenceNode):
        return Located([_convert(item, constructor, problems) for item in node.value], line)
    try:
        value = constructor.construct_object(node, deep=True)
    except (yaml.YAMLError, ValueError, TypeError) as exc:  # an unknown tag, `!!int x`, a bad timestamp
        problems.append((line, f"invalid value: {exc}"))
        value = None
    if not isinstance(value, (str, int, float, bool)) and value is not None:
        value = str(node.value)  # dates and other exotic scalars: keep the text the author wrote
    return Located(value, line)


def _convert_mapping(node: yaml.MappingNode, constructor: yaml.SafeLoader, problems: list[tuple[int, str]]) -> Located:
    result: dict[str, Located] = {}
    key_lines: dict[str, int] = {}
    merged: list[yaml.MappingNode] = []
    for key_node, value_node in node.value:
        key_line = key_node.start_mark.line + 1
        if key_node.tag == _MERGE_TAG:  # `<<: *defaults`: the keys written here win, wherever they stand
            merged += value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            continue
        if not isinstance(key_node, yaml.ScalarNode):
            problems.append((key_line, "mapping keys must be plain strings"))
            continue
        key = str(key_node.value)
        if key in result:
            problems.append((key_line, f"duplicate key {key!r} (first defined on line {key_lines[key]})"))
            continue
        key_lines[key] = key_line
        result[key] = _convert(value_node, constructor, problems)
    for source in merged:
        if not isinstance(source, yaml.MappingNode):
            problems.append((source.start_mark.line + 1, "'<<' merges only mappings"))
            continue
        inherited = _convert_mapping(source, constructor, problems)
        for key, value in inherited.value.items():
            if key not in result:
                result[key], key_lines[key] = value, inherited.key_lines[key]
    return Located(result, node.start_mark.line + 1, key_lines)


def plain(node: Located) -> Any:
    """The plain Python value of a `Located` tree (dicts, lists, scalars), for validation by pydantic."""
    if node.is_map():
        return {key: plain(value) for key, value in node.value.items()}
    if node.is_list():
        return [plain(item) for item in node.value]
    return node.value


def line_at(node: Located, loc: tuple[Any, ...]) -> int:
    """1-based line of the deepest value that the key path `loc` reaches from `node`.

    A path step that is a mapping key points at the key's own line (an unknown or misspelt key is
    best shown there); a path that leaves the tree (a missing key) stops at the last value it reached.
    """
    line = node.line
    for part in loc:
        if node.is_map() and str(part) in node.value:
            line = node.key_lines[str(part)]
            node = node.value[str(part)]
        elif node.is_list() and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.line
        else:
            break
    return line
