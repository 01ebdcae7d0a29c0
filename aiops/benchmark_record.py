"""Writing figures into `docs/benchmarks.md`, a file several people write: only our own section,
delimited by `<!-- section:NAME -->` and `<!-- /section:NAME -->`, is ever replaced."""

from __future__ import annotations

import argparse
import os
import platform
from datetime import datetime, timezone
from pathlib import Path


def machine_summary() -> str:
    """`x86_64, <cpu model>, N cores` for the benchmark tables."""
    model = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.machine()}, {model}, {os.cpu_count()} cores"


def add_record_option(parser) -> None:
    """`--record`: write the figures into docs/benchmarks.md; without it a benchmark only prints them.

    (`--no-write`, the old way to ask for printing only, is still accepted and changes nothing.)
    """
    parser.add_argument("--record", action="store_true",
                        help="write the figures into docs/benchmarks.md (default: print them only)")
    parser.add_argument("--no-write", action="store_true", help=argparse.SUPPRESS)


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- section:{name} -->", f"<!-- /section:{name} -->"


def read_section(path: Path, name: str) -> str | None:
    """The text between the section markers, or None when the file or section does not exist."""
    if not path.exists():
        return None
    text = path.read_text(encoding="utf-8")
    start, end = _markers(name)
    if start not in text or end not in text:
        return None
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")


def write_section(path: Path, name: str, body: str) -> None:
    """Replace (or append) section `name` of the file, creating it with a `# Benchmarks` heading."""
    start, end = _markers(name)
    block = f"{start}\n{body.rstrip()}\n{end}"
    # re-read just before writing: others write their own sections of this file too
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        after = rest.split(end, 1)[1]
        text = before + block + after
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def append_table_row(path: Path, name: str, preamble: str, header: list[str], row: list[str]) -> None:
    """Add one row to the table of section `name` (kept as a history), creating it when missing."""
    existing = read_section(path, name)
    rows: list[str] = []
    if existing:
        rows = [line for line in existing.splitlines() if line.startswith("| ") and not line.startswith("| Date")]
    rows.append("| " + " | ".join(row) + " |")
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *rows]
    write_section(path, name, preamble.rstrip() + "\n\n" + "\n".join(table))
