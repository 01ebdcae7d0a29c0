"""The list of shipped alerts in docs/rules.md, generated from a `RuleSet` (one table per rule group).

`alert_list_markdown(ruleset)` is pure; `replace_generated(doc_text, table)` swaps it in between the two
marker comments of the page. tests/test_rules_catalog.py keeps the page current
(`VIGIL_UPDATE_GOLDEN=1` rewrites it).
"""

from __future__ import annotations

from .model import ALL_OTHER_ALERTS, Alert, Group, RuleSet

BEGIN = "<!-- BEGIN generated alert list: from rules/specs by rules.alert_list; do not edit by hand -->"
END = "<!-- END generated alert list -->"
HEADER = ("| alert | severity | notifies | expression | for | symptom of (equal labels) |", "|---|---|---|---|---|---|")


def _cell(text: str) -> str:
    """One line of table-cell text: whitespace collapsed, `|` escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _for(alert: Alert) -> str:
    text = alert.for_ or "—"
    if alert.keep_firing_for:
        text += f", keep firing {alert.keep_firing_for}"
    return text


def _muted_by(alert: Alert, ruleset: RuleSet) -> str:
    """The causes that can mute `alert` (`RuleSet.causes_of`), and what it mutes itself if it is a `*` cause."""
    sources = [f"{inh.source} ({', '.join(inh.equal)})" for inh in ruleset.causes_of(alert)]
    text = "; ".join(sources) or "—"
    for inh in ruleset.inhibitions:
        if inh.source == alert.name and inh.target == ALL_OTHER_ALERTS:
            text += f" (mutes every other alert of its {', '.join(inh.equal)})"
    return text


def _group_table(group: Group, ruleset: RuleSet) -> list[str]:
    source = f"`rules/specs/{group.file.rsplit('/', 1)[-1]}`"
    records = (f" Recording rules: {', '.join(f'`{r.name}`' for r in group.records)}."
               if group.records else "")
    if not group.alerts:
        return [f"### `{group.name}`", "", f"No alerts in {source}.{records}", ""]
    teams = sorted({dict(a.labels).get("team", "—") for a in group.alerts})
    lines = [f"### `{group.name}`", "",
             f"{len(group.alerts)} alert{'' if len(group.alerts) == 1 else 's'} from {source}, "
             f"team {', '.join(teams)}.{records}", "", *HEADER]
    for alert in group.alerts:
        lines.append(f"| `{alert.name}` | {alert.severity} | {alert.notify or 'page'} | `{_cell(alert.expr)}` | {_for(alert)} | "
                     f"{_muted_by(alert, ruleset)} |")
    return lines + [""]


def alert_list_markdown(ruleset: RuleSet) -> str:
    """Every alert of `ruleset` as Markdown tables, one per group, between the marker comments."""
    lines = [BEGIN, "", f"{len(ruleset.alerts)} alerts in {len(ruleset.groups)} groups.", ""]
    for group in ruleset.groups:
        lines.extend(_group_table(group, ruleset))
    return "\n".join(lines + [END])


def replace_generated(doc_text: str, table: str) -> str:
    """`doc_text` with the part between BEGIN and END (markers included) replaced by `table`."""
    start, end = doc_text.find(BEGIN), doc_text.find(END)
    if start < 0 or end < start:
        raise ValueError("the page has no generated alert list markers")
    return doc_text[:start] + table + doc_text[end + len(END):]
