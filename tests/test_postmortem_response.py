"""The postmortem's Response section read the way its reader reads it: each fact a list item of its own,
the time to acknowledge taken from what happened, the tiers named as people count them, and each
page's fate in accurate words."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from vigil.notifier.postmortem import render_postmortem
from test_postmortem import seeded  # noqa: F401  (fixture: escalated, acknowledged, then resolved)

LIST_LABELS = ("Duration", "Affected nodes", "Affected GPUs", "Affected jobs", "First alert", "Incident opened",
               "First visible sign in the metrics", "Time to detect", "Paged", "Time to acknowledge",
               "Time to resolve", "Escalations", "SLA", "Pages delivered late or failed")


def test_every_list_item_of_the_markdown_is_a_line_of_its_own(seeded):  # noqa: F811
    text = render_postmortem(seeded["detail"], seeded["others"], "md", now=seeded["now"])[0].decode()
    lines = text.splitlines()
    for label in LIST_LABELS:
        starting = [line for line in lines if line.startswith(f"- {label}: ") or line.startswith(f"- {label} (")]
        assert len(starting) == 1, (label, starting)
    # no item glued onto the end of another: `…: 16m- Escalations: …`
    assert not [line for line in lines if re.search(r"\S- [A-Z][A-Za-z ]+: ", line)]
    tokens = MarkdownIt("commonmark").parse(text)
    items = [tokens[i + 2].content for i, t in enumerate(tokens) if t.type == "list_item_open"]
    response = items[items.index(next(i for i in items if i.startswith("Paged: "))):][:6]
    assert [item.split(":")[0] for item in response] == ["Paged", "Time to acknowledge", "Time to resolve",
                                                         "Escalations", "SLA", "Pages delivered late or failed"]
    assert "Time to resolve: 16m" in response[2] and "escalated to tier 2 by carol" in response[3]
