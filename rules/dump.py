"""Deterministic YAML output: insertion key order, no line wrapping, literal blocks for multi-line text."""

from __future__ import annotations

import yaml


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings as `|` blocks (readable PromQL and descriptions)."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(doc) -> str:
    """`doc` (dicts, lists, strings, numbers) as YAML text; the same input always gives the same bytes."""
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True,
                     width=1_000_000, indent=2)
