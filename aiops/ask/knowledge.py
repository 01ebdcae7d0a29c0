"""What `vigil ask` knows about vigil's metrics: the rule lint's catalog, not a second one.

Each series name comes from `vigil.rules.catalog.load_catalog()` (the exporters' `MetricSpec`
declarations plus the generated `metric_catalog.json` of node_exporter, Prometheus, Alertmanager, the
notifier and AIOps) and the series the shipped recording rules record. Help text and units come from the
same `MetricSpec` lists (`vigil.exporters.metrics_doc.SOURCES`); alert names, severities and teams from
the shipped rule specs. The words each metric is found by are its name's parts, its help and unit, and the
synonyms of `lexicon.yaml`.
"""

from __future__ import annotations

import functools
import importlib
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from vigil.exporters.metrics_doc import SOURCES as EXPORTER_SPEC_MODULES
from vigil.rules import default_spec_paths
from vigil.rules.catalog import MetricCatalog, load_catalog, with_records
from vigil.rules.loader import load_specs
from vigil.rules.located import SpecError

LEXICON_PATH = Path(__file__).with_name("lexicon.yaml")
# vigil's stack puts `node` on every node-level target (vigil.stack.config.prometheus), so every scraped
# series carries it besides `job` and `instance`.
STACK_TARGET_LABELS = frozenset({"job", "instance", "node"})
_WORD = re.compile(r"[a-z0-9]+")
# series an operator never asks about: exposition bookkeeping and Go runtime internals
_SKIP = re.compile(r"(_created$|^go_|^promhttp_|^net_conntrack_|_build_info$|^process_)")

# labels a query may match on ALERTS (their labels are each alert's own: unknown to the catalog)
ALERT_LABELS = frozenset({"alertname", "alertstate", "severity", "team", "job", "instance", "node", "gpu", "device"})


def words(text: str) -> list[str]:
    return [stem(w) for w in _WORD.findall(text.lower())]


_NOT_PLURAL = {"status", "bus", "previous", "various", "celsius", "nvlinks", "this", "was", "has", "does", "is"}


def stem(word: str) -> str:
    """A crude plural/past stem so "errors" meets "error", "remapped" meets "remap", "expect" meets "expected"
    (the same stem on both sides is all that matters)."""
    if len(word) > 5 and word.endswith("ed") and not word.endswith("eed"):
        word = word[:-2]
        return word[:-1] if len(word) > 3 and word[-1] == word[-2] else word
    for suffix, repl in (("ies", "y"), ("sses", "ss"), ("es", "e"), ("s", "")):
        if len(word) > 3 and word.endswith(suffix) and not word.endswith("ss") and word not in _NOT_PLURAL:
            return word[: -len(suffix)] + repl
    return word


@dataclass(frozen=True)
class MetricDoc:
    name: str
    type: str  # counter, gauge, info, summary, unknown
    labels: frozenset[str] | None  # None: not known (every label allowed)
    unit: str
    help: str
    name_words: frozenset[str]
    help_words: frozenset[str]

    @property
    def is_counter(self) -> bool:
        return self.type == "counter"


@dataclass(frozen=True)
class Knowledge:
    metrics: dict[str, MetricDoc]
    catalog: MetricCatalog
    lexicon: dict
    alerts: dict[str, tuple[str, str]]  # alert name -> (severity, team)
    # alert name -> its words (name parts, summary): a state only a rule defines ("hung") is its alert
    alert_docs: dict[str, MetricDoc] = field(default_factory=dict)
    records: dict[str, str] = field(default_factory=dict)  # recorded series -> the expression it records

    @property
    def teams(self) -> frozenset[str]:
        return frozenset(team for _, team in self.alerts.values() if team)

    @functools.cached_property
    def idf(self) -> dict[str, float]:
        """{word: inverse document frequency} over the words of every metric's name, help and unit."""
        counts: Counter[str] = Counter()
        for doc in self.metrics.values():
            counts.update(doc.name_words | doc.help_words)
        return {word: math.log(1 + len(self.metrics) / n) for word, n in counts.items()}

    @functools.cached_property
    def label_names(self) -> frozenset[str]:
        """Every label some metric of the catalog carries."""
        return frozenset().union(*(doc.labels for doc in self.metrics.values() if doc.labels is not None))

    def labels(self, name: str) -> frozenset[str] | None:
        doc = self.metrics.get(name)
        return None if doc is None or doc.labels is None else doc.labels | STACK_TARGET_LABELS


def _spec_docs() -> dict[str, tuple[str, str]]:
    """{metric: (unit, help)} from every importable exporter `SPECS` list."""
    found: dict[str, tuple[str, str]] = {}
    for module_name, _title in EXPORTER_SPEC_MODULES:
        try:
            specs = importlib.import_module(module_name).SPECS
        except (ImportError, AttributeError):
            continue
        for spec in specs:
            found.setdefault(spec.name, (spec.unit, spec.help))
    return found


def _name_words(name: str) -> frozenset[str]:
    """The words of a name, digits split off too (`node_load15`: node, load15, load, 15)."""
    parts = words(name.replace(":", "_"))
    return frozenset(parts + [piece for part in parts for piece in re.findall(r"[a-z]+|[0-9]+", part)])


def name_tokens(name: str) -> frozenset[str]:
    """The unstemmed words of a name (`vigil_node_gpus_visible`: ..., gpus, ...)."""
    return frozenset(_WORD.findall(name.lower().replace(":", "_")))


def _stemmed_lexicon(lexicon: dict) -> dict:
    """Synonyms and measure words are matched against stemmed question words: stem them once here."""
    lexicon = dict(lexicon)
    lexicon["synonyms"] = {stem(k): [stem(v) for v in vs] for k, vs in lexicon.get("synonyms", {}).items()}
    lexicon["group_labels"] = {stem(k): v for k, v in lexicon.get("group_labels", {}).items()}
    lexicon["measures"] = [{**m, **{key: [stem(w) for w in m[key]] for key in ("words", "needs", "not")},
                            "needs_any": [[stem(w) for w in group] for group in m.get("needs_any", ())]}
                           for m in lexicon.get("measures", ())]
    return lexicon


@functools.cache
def load_knowledge() -> Knowledge:
    catalog = load_catalog()
    alerts: dict[str, tuple[str, str]] = {}
    alert_docs: dict[str, MetricDoc] = {}
    records: dict[str, str] = {}
    try:
        rule_set = load_specs(default_spec_paths())
        catalog = with_records(catalog, rule_set.records)
        alerts = {a.name: (a.severity, dict(a.labels).get("team", "")) for a in rule_set.alerts}
        alert_docs = {a.name: _alert_doc(a.name, a.summary) for a in rule_set.alerts}
        records = {r.name: r.expr for r in rule_set.records}
    except SpecError:
        pass  # `vigil rules check` reports those; ask still knows the scraped series
    lexicon = _stemmed_lexicon(yaml.safe_load(LEXICON_PATH.read_text(encoding="utf-8")))
    docs = _spec_docs()
    extra_help = lexicon.get("help", {})
    metrics = {}
    for name, info in catalog.metrics.items():
        if _SKIP.search(name):
            continue
        unit, help_text = docs.get(name, ("", extra_help.get(name, "")))
        metrics[name] = MetricDoc(name, info.type, info.labels, unit, help_text, _name_words(name),
                                  frozenset(words(help_text + " " + unit)))
    return Knowledge(metrics, catalog, lexicon, alerts, alert_docs, records)


def _alert_doc(name: str, summary: str) -> MetricDoc:
    """An alert as a document: `JobHung` -> job, hung; its summary without the template parts."""
    parts = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", name)
    text = re.sub(r"\{\{.*?\}\}", " ", summary)
    return MetricDoc("ALERTS", "gauge", None, "", text, frozenset(words(" ".join(parts))), frozenset(words(text)))
