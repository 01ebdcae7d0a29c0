"""Generate `rules/metric_catalog.json`: the series that node_exporter, Prometheus, Alertmanager, the
notifier and the AIOps service really export, read from their own `/metrics` exposition.

    python tools/metric_catalog.py            # print the catalog
    python tools/metric_catalog.py --write    # rewrite rules/metric_catalog.json

The binaries are the Debian packages the stack runs (prometheus, prometheus-alertmanager,
prometheus-node-exporter), started on free loopback ports with private data directories; Prometheus
evaluates a rule group and notifies Alertmanager first, so its per-group and per-Alertmanager series
exist. The notifier's and the AIOps service's registries are collected in-process (a fresh SQLite
store, an empty baseline model store). vigil's exporters are not in the file: the catalog reads their
`MetricSpec` declarations directly.

A development tool in tools/, not part of the installed package: it imports the notifier and the AIOps
service to read their registries, which the rules package itself must never do (vigil.rules is below
both; tests/test_layering.py holds that).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import requests
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from vigil.common.ports import free_port_base
from vigil.rules.catalog import CATALOG_PATH

_SAMPLE_TYPES = {"counter": "counter", "gauge": "gauge", "info": "info", "stateset": "gauge",
                 "unknown": "unknown", "untyped": "unknown"}


def exposition_series(text: str) -> dict[str, dict]:
    """{sample name: {"type", "labels"}} of a /metrics text; labels None for a family without samples."""
    series: dict[str, dict] = {}
    for family in text_string_to_metric_families(text):
        if not family.samples:  # a labelled family with no child yet: names known, labels not
            for name, kind in _empty_family_names(family.name, family.type):
                series.setdefault(name, {"type": kind, "labels": None})
            continue
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            kind = _SAMPLE_TYPES.get(family.type)
            if kind is None:  # histogram / summary parts
                kind = "counter" if sample.name.endswith(("_bucket", "_count", "_sum")) else family.type
            entry = series.setdefault(sample.name, {"type": kind, "labels": []})
            entry["labels"] = sorted(set(entry["labels"]) | set(sample.labels))
    return series


def _empty_family_names(name: str, family_type: str) -> list[tuple[str, str]]:
    if family_type == "counter":
        return [(name + "_total", "counter")]
    if family_type in ("histogram", "summary"):
        parts = ("_bucket", "_count", "_sum") if family_type == "histogram" else ("_count", "_sum")
        return [(name, "summary")] * (family_type == "summary") + [(name + p, "counter") for p in parts]
    return [(name, _SAMPLE_TYPES.get(family_type, "unknown"))]


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SystemExit(f"{name} is not installed (Debian: apt-get install prometheus prometheus-alertmanager "
                         "prometheus-node-exporter)")
    return path


def _start(stack: ExitStack, argv: list[str], log: Path) -> None:
    out = stack.enter_context(log.open("w"))
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    stack.callback(stop)


def _scrape_when(url: str, needles: tuple[str, ...], timeout: float = 60) -> str:
    """The /metrics text of `url` once it holds every needle; SystemExit naming what is missing after `timeout`."""
    deadline, text = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        try:
            text = requests.get(url, timeout=5).text
        except requests.RequestException:
            text = ""
        if text and all(n in text for n in needles):
            return text
        time.sleep(0.2)
    if not text:
        raise SystemExit(f"no answer from {url} within {timeout:.0f}s")
    missing = [n for n in needles if n not in text]
    raise SystemExit(f"{url} never exported {', '.join(missing)} within {timeout:.0f}s: is another server on that port?")


def _version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    words = (out.stdout + out.stderr).split()
    return words[2].split("+")[0] if len(words) > 2 else "?"  # 2.42.0+ds -> 2.42.0


def scrape_binaries(tmp: Path) -> dict[str, dict]:
    """{source: series} of the real node_exporter, Prometheus and Alertmanager."""
    node_exporter, prometheus, alertmanager = (_binary("prometheus-node-exporter"), _binary("prometheus"),
                                               _binary("prometheus-alertmanager"))
    # a free block below the kernel's ephemeral range: a port picked inside it (bind to port 0, released)
    # was once taken by another test's Prometheus before Alertmanager bound it, and its metrics were read
    base = free_port_base(span=4)
    ne_port, prom_port, am_port, am_cluster = base, base + 1, base + 2, base + 3
    (tmp / "rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "catalog", "rules": [
        {"alert": "CatalogProbe", "expr": "vector(1)"}]}]}))
    (tmp / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp / "rules.yml")],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}]},
        "scrape_configs": [{"job_name": "prometheus", "static_configs": [{"targets": [f"127.0.0.1:{prom_port}"]}]}],
    }))
    (tmp / "alertmanager.yml").write_text(yaml.safe_dump({
        "route": {"receiver": "hook", "group_wait": "1s"},
        "receivers": [{"name": "hook", "webhook_configs": [{"url": "http://127.0.0.1:9/"}]}],
    }))
    with ExitStack() as stack:
        _start(stack, [node_exporter, f"--web.listen-address=127.0.0.1:{ne_port}", "--no-collector.systemd"],
               tmp / "node_exporter.log")
        _start(stack, [alertmanager, f"--config.file={tmp / 'alertmanager.yml'}", f"--storage.path={tmp / 'am'}",
                       f"--web.listen-address=127.0.0.1:{am_port}", f"--cluster.listen-address=127.0.0.1:{am_cluster}"],
               tmp / "alertmanager.log")
        _start(stack, [prometheus, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'tsdb'}",
                       f"--web.listen-address=127.0.0.1:{prom_port}", "--rules.alert.resend-delay=1s"],
               tmp / "prometheus.log")
        node = _scrape_when(f"http://127.0.0.1:{ne_port}/metrics", ("node_cpu_seconds_total",))
        prom = _scrape_when(f"http://127.0.0.1:{prom_port}/metrics",
                            ("prometheus_rule_group_last_duration_seconds{", "prometheus_notifications_sent_total{",
                             # a summary Prometheus creates only after its first send to Alertmanager
                             "prometheus_notifications_latency_seconds{",
                             # and one after its second scrape of itself
                             "prometheus_target_interval_length_seconds{"))
        am = _scrape_when(f"http://127.0.0.1:{am_port}/metrics", ("alertmanager_alerts_received_total{",))
    return {f"node_exporter {_version(node_exporter)}": exposition_series(node),
            f"Prometheus {_version(prometheus)}": exposition_series(prom),
            f"Alertmanager {_version(alertmanager)}": exposition_series(am)}


def vigil_registries(tmp: Path) -> dict[str, dict]:
    """{source: series} of the notifier's and the AIOps service's own registries, collected in-process."""
    from vigil.aiops.baseline.collector import BaselineCollector, BaselineSnapshot
    from vigil.aiops.risk.collector import FailureRiskCollector
    from vigil.common.prometheus_api import PrometheusClient
    from vigil.notifier.engine.heartbeat import HeartbeatMonitor
    from vigil.notifier.heartbeat_spec import HeartbeatSpec
    from vigil.notifier.metrics import HeartbeatCollector, NotifierMetrics, StoreCollector
    from vigil.notifier.store import Store

    notifier = NotifierMetrics()
    for metric in vars(notifier).values():  # a labelled metric shows its label names only through a child
        names = getattr(metric, "_labelnames", ()) if isinstance(metric, MetricWrapperBase) else ()
        if names:
            metric.labels(*["catalog"] * len(names))
    store = Store(f"sqlite:///{tmp / 'notifier.db'}")
    try:
        notifier.registry.register(StoreCollector(store))
        # one watched heartbeat (never heard): its families carry samples only while a heartbeat is configured
        watched = HeartbeatMonitor(store, (HeartbeatSpec(name="catalog", timeout_s=60),), planner=None, clock=time.time)
        notifier.registry.register(HeartbeatCollector(watched))
        notifier_text = generate_latest(notifier.registry).decode()
    finally:
        store.close()
    aiops = CollectorRegistry()
    empty = BaselineSnapshot(entries=(), labels=(), sensitivity=1.0, trained_at=0.0, fit_seconds=0.0)
    aiops.register(BaselineCollector(lambda: empty))  # a loaded (empty) model store: every family is exported
    aiops.register(FailureRiskCollector(PrometheusClient("http://127.0.0.1:9"), tmp / "models"))
    return {"vigil notifier": exposition_series(notifier_text),
            "vigil AIOps": exposition_series(generate_latest(aiops).decode())}


def generate() -> dict:
    with tempfile.TemporaryDirectory(prefix="vigil-catalog-") as tmp:
        sources = {**scrape_binaries(Path(tmp)), **vigil_registries(Path(tmp))}
    return {"generated_by": "python tools/metric_catalog.py --write", "sources": sources}


def render(catalog: dict) -> str:
    return json.dumps(catalog, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/metric_catalog.py", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {CATALOG_PATH}")
    args = parser.parse_args(argv)
    text = render(generate())
    if args.write:
        CATALOG_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {CATALOG_PATH}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
