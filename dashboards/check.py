"""Checks of dashboard JSON that need no Grafana, all problems at once:

- panel ids unique, every panel on the 24-column grid and no two panels overlapping;
- every panel with a unit and the fixed datasource uid (on the panel and on each query);
- every template variable used, and no query using a variable the dashboard does not define;
- every query, with its variables replaced by sample values, parses (`promql-parser`, the grammar
  `vigil rules check` uses) and passes the rule lint's query checks: every metric it names is in the metric
  catalog the rule lint uses (vigil's exporters, node_exporter, Prometheus, Alertmanager, the notifier,
  the specs' recorded series) or declared in EXTERNAL_METRICS, its labels exist, its range windows hold
  enough scrapes;
- every drill-down link points at a dashboard of the set and sets only variables that dashboard has.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vigil.rules import SpecError, default_spec_paths, load_specs
from vigil.rules.catalog import MetricCatalog, load_catalog, with_records
from vigil.rules.lint_alert import DEFAULT_SCRAPE_INTERVAL
from vigil.common.durations import parse_prometheus_duration
from vigil.rules.lint_query import AlertQuery, check_query

from .build import dashboard_models
from .panels import CLUSTER, DATASOURCE_TYPE, DATASOURCE_UID, PANEL_DATASOURCE_UID, panels

GRID_WIDTH = 24
# Metrics a dashboard may read that no catalogued exporter provides: name -> its labels (None: unknown).
EXTERNAL_METRICS: dict[str, frozenset[str] | None] = {}
# Grafana's built-in variables and the sample value each stands for while a query is parsed.
BUILTINS = {"__rate_interval": "1m", "__interval": "30s", "__range": "1h", "__range_s": "3600",
            "__interval_ms": "30000", "__range_ms": "3600000"}
SAMPLE_VALUE = "sample"
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z0-9_]+)(?::[^}]*)?\}|([A-Za-z0-9_]+))|\[\[([A-Za-z0-9_]+)\]\]")
_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?:(.*),\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$", re.S)
_DRILL = re.compile(r"^/d/([A-Za-z0-9_-]+)")


@dataclass(frozen=True)
class Problem:
    where: str  # "<file>: panel 3 \"GPUs lost\"" and the like
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def default_catalog() -> MetricCatalog:
    """The rule lint's catalog plus the series the shipped specs record."""
    catalog = load_catalog()
    try:
        return with_records(catalog, load_specs(default_spec_paths()).records)
    except SpecError:  # `vigil rules check` reports those; the dashboards are checked against the rest
        return catalog


def _for_dashboards(message: str) -> str:
    """The rule lint's hints name the spec's keys; a dashboard's metrics are declared here instead."""
    return (message.replace("the spec's 'external_metrics'", "vigil.dashboards.check.EXTERNAL_METRICS")
            .replace("; if your scrape configuration adds it to every target, list it in the spec's 'target_labels'",
                     ""))


def _where(source: str, panel: dict) -> str:
    return f"{source}: panel {panel.get('id')} {panel.get('title', '')!r}"


def expand(text: str, values: dict[str, str], builtins: dict[str, str] = BUILTINS) -> tuple[str, set[str], set[str]]:
    """(text with each variable replaced by its value in `values` or a builtin's, variables used, variables
    with no value: those become SAMPLE_VALUE)."""
    used, unknown = set(), set()

    def replace(match: re.Match) -> str:
        name = next(group for group in match.groups() if group)
        if name in builtins:
            return builtins[name]
        used.add(name)
        if name not in values:
            unknown.add(name)
        return values.get(name, SAMPLE_VALUE)

    return _VARIABLE.sub(replace, text), used, unknown


def variable_query(var: dict) -> str | None:
    """The PromQL a query variable's values come from: `label_values(selector, label)` as
    `group by (label) (selector)`, or the raw query; None for other variables."""
    raw = var.get("query")
    raw = raw.get("query", "") if isinstance(raw, dict) else raw or ""
    values = _LABEL_VALUES.match(raw)
    if values:
        selector, label = values.groups()
        return f"group by ({label}) ({selector or 'up'})"
    return raw if var.get("type") == "query" else None


def check_layout(model: dict, source: str) -> list[Problem]:
    problems, seen, boxes = [], {}, []
    for panel in panels(model):
        where = _where(source, panel)
        number = panel.get("id")
        if number is None:
            problems.append(Problem(where, "panel has no id"))
        elif number in seen:
            problems.append(Problem(where, f"panel id {number} is also the id of panel {seen[number]!r}"))
        else:
            seen[number] = panel.get("title", "")
        grid = panel.get("gridPos") or {}
        x, y, w, h = (grid.get(key) for key in ("x", "y", "w", "h"))
        if None in (x, y, w, h) or w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > GRID_WIDTH:
            problems.append(Problem(where, f"gridPos {grid} is not a box on the {GRID_WIDTH}-column grid"))
            continue
        for other, (ox, oy, ow, oh) in boxes:
            if x < ox + ow and ox < x + w and y < oy + oh and oy < y + h:
                problems.append(Problem(where, f"overlaps panel {other.get('id')} {other.get('title', '')!r} "
                                               f"(gridPos {grid} and {other.get('gridPos')})"))
        boxes.append((panel, (x, y, w, h)))
    return problems


def check_panels(model: dict, source: str, catalog: MetricCatalog) -> list[Problem]:
    """Units, datasources, queries; and the variables (defined, used)."""
    problems = []
    variables = (model.get("templating") or {}).get("list") or []
    names = {var.get("name") for var in variables}
    used: set[str] = set()
    scrape_s = parse_prometheus_duration(DEFAULT_SCRAPE_INTERVAL)

    def query(where: str, expr: str) -> None:
        text, uses, unknown = expand(expr, dict.fromkeys(names, SAMPLE_VALUE))
        used.update(uses)
        problems.extend(Problem(where, f"query uses ${name}, which is not a variable of the dashboard")
                        for name in sorted(unknown))
        findings, _ = check_query(AlertQuery(text, frozenset(), (), scrape_s, routed=False), catalog, EXTERNAL_METRICS)
        problems.extend(Problem(where, f"{_for_dashboards(message)} (query: {expr})") for _, message in findings)

    for var in variables:
        where = f"{source}: variable {var.get('name')!r}"
        if var.get("type") == "datasource":
            problems.extend(_datasource_variable(var, where))
            continue
        if (var.get("datasource") or {}).get("uid") != PANEL_DATASOURCE_UID:
            problems.append(Problem(where, f"datasource is not uid {PANEL_DATASOURCE_UID!r}"))
        used.add(CLUSTER)
        expr = variable_query(var)  # label_values(selector, label): the label must be on the selector's metric
        if expr is not None:
            query(where, expr)
    for panel in panels(model):
        if panel.get("type") == "row":
            continue
        where = _where(source, panel)
        for text in (panel.get("title", ""), panel.get("description", "")):
            used.update(expand(text, {})[1])
        if not ((panel.get("fieldConfig") or {}).get("defaults") or {}).get("unit"):
            problems.append(Problem(where, "panel has no unit (fieldConfig.defaults.unit)"))
        if (panel.get("datasource") or {}).get("uid") != PANEL_DATASOURCE_UID:
            problems.append(Problem(where, f"panel datasource is not uid {PANEL_DATASOURCE_UID!r}"))
        used.add(CLUSTER)
        targets = panel.get("targets") or []
        if not targets:
            problems.append(Problem(where, "panel has no query"))
        for target in targets:
            if (target.get("datasource") or {}).get("uid") != PANEL_DATASOURCE_UID:
                problems.append(Problem(where, f"query {target.get('refId')} datasource is not uid "
                                               f"{PANEL_DATASOURCE_UID!r}"))
            query(where, target.get("expr", ""))
    problems.extend(Problem(f"{source}: variable {name!r}", "variable is used by no query, title or other variable")
                    for name in sorted(names - used))
    return problems


def _datasource_variable(var: dict, where: str) -> list[Problem]:
    """The `cluster` variable: Prometheus datasources, the provisioned one by default."""
    problems = []
    if var.get("name") != CLUSTER or var.get("query") != DATASOURCE_TYPE:
        problems.append(Problem(where, f"a datasource variable must be ${CLUSTER} over {DATASOURCE_TYPE!r} datasources"))
    if ((var.get("current") or {}).get("value")) != DATASOURCE_UID:
        problems.append(Problem(where, f"its default is not the provisioned datasource {DATASOURCE_UID!r}"))
    return problems


def check_links(models: dict[str, dict]) -> list[Problem]:
    """Drill-down links: the target dashboard (one of `models` or a shipped one) exists and has the
    variables the link sets."""
    by_uid = {model["uid"]: model for model in dashboard_models()}
    by_uid.update({model.get("uid"): model for model in models.values()})
    problems = []
    for source, model in models.items():
        for panel in panels(model):
            for link in ((panel.get("fieldConfig") or {}).get("defaults") or {}).get("links") or []:
                target = _DRILL.match(link.get("url", ""))
                if target is None:
                    continue
                where = _where(source, panel)
                other = by_uid.get(target.group(1))
                if other is None:
                    problems.append(Problem(where, f"link {link.get('title')!r} points at dashboard "
                                                   f"{target.group(1)!r}, which is neither checked nor shipped"))
                    continue
                have = {var.get("name") for var in (other.get("templating") or {}).get("list") or []}
                for name in re.findall(r"var-([A-Za-z0-9_]+)=", link["url"]):
                    if name not in have:
                        problems.append(Problem(where, f"link {link.get('title')!r} sets var-{name}, but "
                                                       f"{target.group(1)!r} has no variable {name!r}"))
    return problems


def check_dashboards(models: dict[str, dict], catalog: MetricCatalog | None = None) -> list[Problem]:
    """Every problem of every dashboard ({source name: Grafana JSON model}) and of the links between them."""
    catalog = catalog or default_catalog()
    problems = []
    for source, model in models.items():
        if not model.get("uid"):
            problems.append(Problem(source, "dashboard has no uid"))
        problems += check_layout(model, source) + check_panels(model, source, catalog)
    uids = [model.get("uid") for model in models.values()]
    problems += [Problem("dashboards", f"uid {uid!r} is used by more than one dashboard")
                 for uid in sorted({u for u in uids if u and uids.count(u) > 1})]
    return problems + check_links(models)
