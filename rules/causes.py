"""The causal links of a spec entry: `symptom_of: {Cause: [labels]}` (its causes; `inhibited_by` is the
older spelling) and `inhibits: {Symptom: [labels]}` (what it causes; `"*"` every other alert).

Each link is an Alertmanager inhibition (the cause mutes the symptom while both fire with equal labels)
and, written on the symptom as its `symptom_of` annotation (`generate.symptom_annotations`), the
notifier's grouping of the symptom with its cause's incident (docs/rules.md, "Causes and symptoms").
"""

from __future__ import annotations

from .model import Inhibition
from .reader import Reader

CAUSE_KEYS = ("symptom_of", "inhibited_by")
KEYS = ("inhibits", *CAUSE_KEYS)


def read_links(r: Reader, names: list[str], keys: tuple[str, ...] = KEYS) -> list[tuple[int, Inhibition]]:
    """The links of `keys` on the entry `r` reads, for each alert of `names` (an SLO's two alerts share
    its links), with the line each was written on."""
    links: list[tuple[int, Inhibition]] = []
    for key in keys:
        item = r.raw(key)
        if item is None:
            continue
        if not item.is_map() or not item.value:
            r.errors.add(r.file, item.line, f"{r.what}: {key!r} must map alert names to the labels "
                         "that must be equal, e.g. {{GpuFallenOffBus: [node, gpu]}}")
            continue
        for other, labels in item.value.items():
            line = item.key_lines[other]
            equal = r.name_list(key, item=labels)
            if equal is None:
                continue
            for name in names:
                if key == "inhibits":
                    links.append((line, Inhibition(source=name, target=other, equal=tuple(equal))))
                else:
                    links.append((line, Inhibition(source=other, target=name, equal=tuple(equal))))
    return links
