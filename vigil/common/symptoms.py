"""The `symptom_of` annotation: which alerts are the cause of an alert, carried by the alert itself.

The rule generator (`vigil.rules.generate`) writes it on every alert that the specs declare a symptom of
another (`symptom_of`, `inhibited_by`, or the cause's `inhibits`); the notifier reads it from the webhook
(`vigil.notifier.engine.causes`) to join a symptom to its cause's open incident instead of paging for it.
A hand-written rule may carry it too. Its value is JSON:

    {"causes": [{"alertname": "GpuFallenOffBus", "equal": ["node", "gpu"]}], "wait": 105}

- `causes`: the alerts this one is a symptom of; `equal` the labels both must share (an empty list: any
  firing alert of that name);
- `wait`: seconds the notifier holds this alert's first page when no incident of a cause is open, in case
  the cause fires later (it usually waits longer on its `for`); 0 pages at once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

ANNOTATION = "symptom_of"


@dataclass(frozen=True)
class Cause:
    alertname: str
    equal: tuple[str, ...] = ()

    def matches(self, symptom_labels: dict[str, str], cause_labels: dict[str, str]) -> bool:
        """Whether an alert labelled `cause_labels` is this cause of the alert labelled `symptom_labels`."""
        return (cause_labels.get("alertname") == self.alertname
                and all(cause_labels.get(label) == symptom_labels.get(label) is not None for label in self.equal))


@dataclass(frozen=True)
class SymptomOf:
    causes: tuple[Cause, ...]
    wait_s: float = 0.0


def encode(symptom: SymptomOf) -> str:
    """The annotation's value (compact JSON, causes in the given order)."""
    wait = int(symptom.wait_s) if float(symptom.wait_s).is_integer() else symptom.wait_s
    return json.dumps({"causes": [{"alertname": c.alertname, "equal": list(c.equal)} for c in symptom.causes],
                       "wait": wait}, separators=(",", ":"))


def decode(text: str | None) -> SymptomOf | None:
    """The annotation read back; None when absent or not in this shape (a malformed hand-written one is
    ignored: the alert then pages as any other)."""
    if not text:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("causes"), list):
        return None
    causes = []
    for item in doc["causes"]:
        if not isinstance(item, dict) or not isinstance(item.get("alertname"), str):
            return None
        equal = item.get("equal", [])
        if not isinstance(equal, list) or not all(isinstance(label, str) for label in equal):
            return None
        causes.append(Cause(item["alertname"], tuple(equal)))
    wait = doc.get("wait", 0)
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not 0 <= wait <= 86400:
        return None
    return SymptomOf(tuple(causes), float(wait)) if causes else None
