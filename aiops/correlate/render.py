"""Proposed inhibition rules as Alertmanager YAML, with the evidence and topology groups as comments.

The rules are built as data and dumped with PyYAML; only the `#` comment lines are formatted text.
"""

from __future__ import annotations

from datetime import datetime, timezone

import yaml

from vigil.aiops.correlate.alerts import Firing
from vigil.aiops.correlate.mining import PairEvidence
from vigil.aiops.correlate.safety import REASONS
from vigil.aiops.correlate.topology import AlertGroup


def matcher(name: str, value: str) -> str:
    """An Alertmanager matcher string `name="value"` with the value escaped."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'{name}="{escaped}"'


def inhibit_rules(evidence: list[PairEvidence]) -> list[dict]:
    """Alertmanager `inhibit_rules` entries, one per proposed rule, in the given order."""
    rules = []
    for e in evidence:
        rule = {
            "source_matchers": [matcher("alertname", e.source)],
            "target_matchers": [matcher("alertname", e.target)],
        }
        if e.equal:
            rule["equal"] = list(e.equal)
        rules.append(rule)
    return rules


def _time(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _describe(firing: Firing) -> str:
    labels = ",".join(f"{k}={firing.label(k)}" for k in ("node", "gpu", "job_id") if firing.label(k) is not None)
    return f"{firing.alertname}{{{labels}}}"


def render_suggestions(evidence: list[PairEvidence], groups: list[AlertGroup], firings: int, max_groups: int = 20,
                       left_out: dict[str, int] | None = None, always_firing: tuple[str, ...] = ()) -> str:
    """The full output of `vigil aiops suggest-inhibitions`: comments, then `inhibit_rules:` YAML.

    `left_out` counts the candidates that met support and confidence but were not proposed, by reason."""
    lines = [
        f"# vigil aiops suggest-inhibitions: {len(evidence)} rule(s) from {firings} alert firing(s)",
        "# confidence = share of target firings that came while the source was firing (target => source);",
        "# reverse = share of source firings that came with a target firing (source => target).",
    ]
    if left_out:
        lines.append("#")
        lines.append(f"# left out {sum(left_out.values())} candidate(s) that met support and confidence:")
        lines += [f"#   {left_out[key]:>4} {key}: {text}" for key, text in REASONS.items() if left_out.get(key)]
    if always_firing:
        lines.append(f"# always firing, never a source: {', '.join(always_firing)}")
    if evidence:
        lines.append("#")
        lines.append(f"# {'rule':<4} {'source':<28} {'target':<28} {'equal':<14} {'support':>7} {'confidence':>10} {'reverse':>7} {'lag_s':>7}")
        for index, e in enumerate(evidence, 1):
            lines.append(
                f"# {index:<4} {e.source:<28} {e.target:<28} {','.join(e.equal) or '-':<14} "
                f"{e.support:>7d} {e.confidence:>10.3f} {e.reverse_confidence:>7.3f} {e.median_lag_s:>7.0f}"
            )
    if groups:
        lines.append("#")
        lines.append(f"# {len(groups)} topology group(s) (node -> GPUs, same job, close in time); first {min(len(groups), max_groups)}:")
        for index, group in enumerate(groups[:max_groups], 1):
            parents = ", ".join(_describe(p) for p in group.parents) or "-"
            members = ", ".join(_describe(f) for f in group.firings if f not in group.parents)
            lines.append(f"# group {index} at {_time(group.start)}: {len(group.firings)} firings; parent {parents}; members {members}")
    body = yaml.safe_dump({"inhibit_rules": inhibit_rules(evidence)}, sort_keys=False, default_flow_style=False)
    return "\n".join(lines) + "\n" + body
