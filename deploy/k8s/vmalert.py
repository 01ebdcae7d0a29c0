"""The rules of a sharded Prometheus, split in two (`vigil.rules.shard_split`), and vmalert, which runs the
global half over VictoriaMetrics.

A shard holds the series of its own targets only, so a rule that aggregates over nodes, joins on a
label other than the node, guards with `absent()`, or reads a global rule's record cannot run on it.
Neither can a rule that reads the AIOps service's series: the operator places every target on a shard
by the hash of its `__address__` (prometheus-operator 0.80's sharding; a `__tmp_hash` set by relabelling
changes the hash, not the choice of shard), so the AIOps pod that publishes a node's bands is not sure
to be scraped by the shard that scrapes the node. Those metric names are the AIOps service's own
exports, read from the metric catalog (`rules/metric_catalog.json`), not written down here.

vmalert evaluates the global half on VictoriaMetrics (`-datasource.url`), writes its recording rules'
results and its alerts' state back there (`-remoteWrite.url`; `-remoteRead.url` restores the state
after a restart) and sends alerts to every Alertmanager peer (`-notifier.url` per replica, as
Prometheus does), so the cluster deduplicates them.
"""

from __future__ import annotations

from vigil.rules import RuleSet, dump_yaml
from vigil.rules.catalog import CATALOG_PATH, read_catalog_file
from vigil.rules.generate import prometheus_rule_file
from vigil.rules.shard_split import split_rule_file

from . import alertmanager
from .meta import (DeploySettings, container_port, http_probe, labels, metadata, obj, pod_disruption_budget,
                   restricted_security, selector, service, service_account, spread)
from .services import service_monitor
from .victoria import IMAGE as VICTORIA_IMAGE
from .victoria import SCRAPE_INTERVAL, url

VMALERT = "vigil-vmalert"
RULES_CONFIG = "vigil-vmalert-rules"
RULES_KEY = "vigil-global-rules.yaml"
RULES_DIR = "/etc/vmalert/rules"
IMAGE = VICTORIA_IMAGE.replace("victoria-metrics", "vmalert")  # victoriametrics/vmalert, the same release
AIOPS_SOURCE = "vigil AIOps"  # the metric catalog's name for what the AIOps service exports
USER = 65534
JOB = "vmalert"
# the Alertmanager peers by pod: the operator's headless Service `alertmanager-operated` names each one
ALERTMANAGER_GOVERNING_SERVICE = "alertmanager-operated"


def aiops_metrics() -> tuple[str, ...]:
    """The series names the AIOps service exports (bands, failure risk, its own freshness)."""
    return tuple(sorted(read_catalog_file(CATALOG_PATH)[AIOPS_SOURCE]))


def split_rules(ruleset: RuleSet) -> tuple[dict, dict, dict[str, str]]:
    """(rules each shard runs, rules vmalert runs, {global rule: why}) of the generated rule file."""
    return split_rule_file(prometheus_rule_file(ruleset), global_metrics=aiops_metrics())


def alertmanager_urls(settings: DeploySettings, replicas: int) -> list[str]:
    """Every Alertmanager peer by its stable pod name (`alertmanager-<CR>-<i>`)."""
    return [f"http://alertmanager-{alertmanager.ALERTMANAGER}-{i}.{ALERTMANAGER_GOVERNING_SERVICE}."
            f"{settings.namespace}.svc:{settings.ports.alertmanager}" for i in range(replicas)]


def vmalert(settings: DeploySettings, ruleset: RuleSet, size: dict) -> list[dict]:
    """vmalert (two identical replicas, like the Prometheus pair: Alertmanager deduplicates their alerts,
    VictoriaMetrics their records) with the global rules in a ConfigMap."""
    _, global_rules, _ = split_rules(ruleset)
    config = obj("v1", "ConfigMap", metadata(settings, RULES_CONFIG, VMALERT), data={RULES_KEY: dump_yaml(global_rules)})
    port = settings.ports.vmalert
    store = url(settings)
    container = {
        "name": "vmalert", "image": f"{IMAGE}:{settings.victoria_metrics_version}",
        "args": [f"-rule={RULES_DIR}/*.yaml", f"-datasource.url={store}", f"-remoteWrite.url={store}",
                 f"-remoteRead.url={store}", f"-evaluationInterval={SCRAPE_INTERVAL}",
                 *(f"-notifier.url={u}" for u in alertmanager_urls(settings, alertmanager.REPLICAS)),
                 "-external.label=cluster=vigil", f"-httpListenAddr=:{port}"],
        "ports": [container_port("http", port)],
        "readinessProbe": http_probe("/health", "http", period=5),
        "livenessProbe": http_probe("/health", "http", period=20, initial=10),
        "resources": size,
        "securityContext": restricted_security(USER),
        "volumeMounts": [{"name": "rules", "mountPath": RULES_DIR, "readOnly": True}],
    }
    pod = {"serviceAccountName": VMALERT, "automountServiceAccountToken": False,
           "topologySpreadConstraints": spread(selector(VMALERT)), "containers": [container],
           "volumes": [{"name": "rules", "configMap": {"name": RULES_CONFIG, "items": [
               {"key": RULES_KEY, "path": RULES_KEY}]}}]}
    deployment = obj("apps/v1", "Deployment", metadata(settings, VMALERT, VMALERT), spec={
        "replicas": 2, "selector": {"matchLabels": selector(VMALERT)},
        "template": {"metadata": {"labels": labels(VMALERT)}, "spec": pod}})
    return [service_account(settings, VMALERT, VMALERT), config, deployment,
            service(settings, VMALERT, VMALERT, [("http", port)]), service_monitor(settings, VMALERT, "http", job=JOB),
            pod_disruption_budget(settings, VMALERT, VMALERT)]
