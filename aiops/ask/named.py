"""The things a question names by name or number, read into label matchers (`intent.parse_question`):
node-N (several: "node-1 vs node-2"), GPU N, XID N, a job's id, a disk or network interface as written, an
alert's name, a team, a component's scrape job.
"""

from __future__ import annotations

import re

from .knowledge import Knowledge

_NODE = re.compile(r"\b(?:node|host)[- ]?(\d+)\b")
_GPU = re.compile(r"\b(?:gpu|card)\s*(?:#|index\s*)?(\d+)\b")
_XID = re.compile(r"\bxid\s*(\d+)\b")
_JOB_ID = re.compile(r"\bjob\s+(?:id\s+)?(\d{3,})\b")
_DEVICE = re.compile(r"(?<![\w/])((?:/dev/)?(?:nvme\d+n\d+|nvme\d+|sd[a-z]|vd[a-z]|mlx\d+_\d+))\b")  # as written
_INTERFACE = re.compile(r"(?<![\w/])((?:eth|ens|enp|eno|ib|bond)\d\w*)\b")  # a network interface, as written


def read_named(text: str, matchers: dict[str, str], knowledge: Knowledge) -> str:
    """Put the things `text` names into `matchers` (label -> value; several values joined by "|"); the text
    without them, a word of what each is left in its place ("GPU 2" -> "gpu")."""
    for pattern, label, value, keep in ((_NODE, "node", "node-{}", " "), (_GPU, "gpu", "{}", " gpu "),
                                        (_XID, "xid", "{}", " xid "), (_JOB_ID, "job_id", "{}", " job "),
                                        (_DEVICE, "device", "{}", " disk "), (_INTERFACE, "device", "{}", " network ")):
        match = pattern.search(text)
        if match and label not in matchers:
            matchers[label] = value.format(match.group(1))
            text = text[:match.start()] + keep + text[match.end():]
            if label == "node":  # "node-2 vs node-1", "hotter than node-1": both of them (a regular expression)
                more = sorted({value.format(m.group(1)) for m in pattern.finditer(text)} - {matchers[label]})
                if more:
                    matchers[label] = "|".join(sorted([matchers[label], *more]))
                    text = re.sub(r"\b(?:vs\.?|versus|compared (?:to|with))\s", " ", pattern.sub(keep, text))
    for name in knowledge.alerts:
        if re.search(rf"\b{name.lower()}\b", text):
            matchers["alertname"] = name
            text = text.replace(name.lower(), " alert ")
    for team in sorted(knowledge.teams, key=lambda t: (-len(t), t)):  # longest first; any text, so escaped
        name = re.escape(team.lower())
        match = re.search(rf"\b(?:team\s+{name}|{name}\s+team|team\s*=\s*{name})(?!\w)", text)
        if match:
            matchers["team"] = team
            text = text[:match.start()] + " " + text[match.end():]
    for job in ("node-exporter", "prometheus", "alertmanager", "vigil-gpu", "vigil-aiops", "vigil-notifier",
                "vigil-node-health"):
        match = re.search(rf"(?<!does )(?<!do )(?<!did )\b(?:the\s+)?{job}\s+(?:job|target|scrape)", text)
        if match:
            matchers["job"] = job
            text = text[:match.start()] + " target " + text[match.end():]
    return text
