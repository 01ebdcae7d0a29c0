"""A unit file as data and its text: sections of `Key=value` lines, each with an optional comment.

`exec_line` turns an argv into an `ExecStart=` value with systemd's quoting: a literal word has `%` and
`$` escaped and is quoted when it holds a blank; a `Raw` word (`${VIGIL_LISTEN}`, `$VIGIL_ARGS`,
`%d/webhook-token`) is written as it is, for systemd to expand.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

_NEEDS_QUOTES = re.compile(r"[\s\"'\\;]")


class Raw(str):
    """An `Exec*=` word written unescaped: an environment expansion or a specifier."""


@dataclass(frozen=True)
class Line:
    """One `key=value` line of a section; `why` is written as `# ...` comment lines above it."""

    key: str
    value: str
    why: str = ""

    def __post_init__(self):
        if "\n" in self.value:
            raise ValueError(f"{self.key}=: a unit-file value is one line, got {self.value!r}")


@dataclass(frozen=True)
class UnitFile:
    """Sections in order, each a list of lines; `header` is the comment block at the top."""

    header: list[str] = field(default_factory=list)
    sections: dict[str, list[Line]] = field(default_factory=dict)


def quote_word(word: str) -> str:
    """A literal argument: specifiers (`%`) and expansions (`$`) escaped, quoted when it holds a blank."""
    if isinstance(word, Raw):
        return str(word)
    word = word.replace("%", "%%").replace("$", "$$")
    if not word or _NEEDS_QUOTES.search(word):
        return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return word


def environment_line(key: str, value: str) -> str:
    """An `Environment=` value: specifiers (`%`) escaped, quoted when it holds a blank (no `$` expansion there)."""
    text = f"{key}={value}".replace("%", "%%")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"' if _NEEDS_QUOTES.search(text) else text


def exec_line(argv: list[str]) -> str:
    """argv as an `ExecStart=` value."""
    return " ".join(quote_word(word) for word in argv)


def _comment(text: str) -> list[str]:
    return [f"# {part}" for part in textwrap.wrap(text, width=100)]


def render(unit: UnitFile) -> str:
    """The unit file's text: header comments, then each section with its lines (comments above)."""
    out = [line for text in unit.header for line in (_comment(text) or ["#"])]
    for name, lines in unit.sections.items():
        if out:
            out.append("")
        out.append(f"[{name}]")
        for line in lines:
            out += _comment(line.why)
            out.append(f"{line.key}={line.value}")
    return "\n".join(out) + "\n"
