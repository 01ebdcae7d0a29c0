"""The files a local stack runs on, generated into its run directory, one module per job:

- `layout`: where everything lives in the run directory;
- `secret_files`: the webhook token, the demo's console password and the notifier database, owner-only;
- `prometheus` and `alertmanager`: their configs, built as data (golden files in tests/golden/stack);
- `demo_oncall`: the on-call file of the demo (its first DRI has a console login);
- the ha profile's: `ha` (topology, ports, paths), `ha_prometheus`, `ha_alertmanager`, `postgres`
  (the notifiers' throwaway server) and `sharding` (hashmod scrape shards);
- the sharded profile's: `sharded` (topology, ports, each shard's `prometheus.yml`) and `vmalert` (the
  global rules' evaluator); the generated rule file is split (`vigil.rules.shard_split`) between them.

`write_stack_files` writes them all, dumped with PyYAML (never text templates).
"""

from __future__ import annotations

from pathlib import Path

import yaml

import vigil.rules as rulegen
from vigil.notifier.console.passwords import hash_password
from vigil.rules.alertmanager_routing import ROUTING_FILE, load_routing
from vigil.rules.shard_split import split_rule_file

from vigil.stack.settings import StackSettings
from vigil.stack.config.alertmanager import alertmanager_config
from vigil.stack.config.demo_oncall import demo_oncall_config
from vigil.stack.config.ha import PROMETHEUS_REPLICAS, HaLayout, HaTopology
from vigil.stack.config.ha_alertmanager import fan_out_webhooks, notifier_bases
from vigil.stack.config.ha_prometheus import ha_prometheus_config
from vigil.stack.config import postgres
from vigil.stack.config.layout import RunLayout
from vigil.stack.config.prometheus import GPU_JOB, NODE_HEALTH_JOB, prometheus_config
from vigil.stack.config.secret_files import OWNER_ONLY_FILE, ensure_demo_password, ensure_private_database, ensure_token
from vigil.stack.config.sharded import ShardedLayout, link_disk_model, shard_prometheus_config

__all__ = ["GPU_JOB", "RunLayout", "alertmanager_config", "demo_oncall_config", "dump_config", "ensure_demo_password",
           "ensure_token",
           "prometheus_config", "write_stack_files"]


def dump_config(doc: dict) -> str:
    """A config document as YAML, keys in the order they were built."""
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True)


def _write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_config(doc), encoding="utf-8")


def stack_ruleset(settings: StackSettings) -> rulegen.RuleSet:
    """The shipped rules, less those that would page for a part this stack does not run: without the node
    health exporter (`node_health: false`), the alert that its target is absent."""
    ruleset = rulegen.load_specs(rulegen.default_spec_paths())
    if settings.node_health:
        return ruleset
    return ruleset.without({alert.name for alert in ruleset.alerts
                            if alert.kind == "absent" and f'job="{NODE_HEALTH_JOB}"' in alert.expr})


# the least margin for a cause firing after its symptom (the notifier holds the symptom's page that much
# beyond the cause's `for` and evaluation): several evaluations of a loaded host's Prometheus
MIN_CAUSE_MARGIN_S = 10.0


def cause_margin_s(settings: StackSettings) -> float:
    """How late a cause may reach the notifier after its symptom beyond its `for` and its group's
    evaluation, in this stack: two of its scrapes (the one that sees the fault, and the other target's),
    at least `MIN_CAUSE_MARGIN_S`. The rules' default (`rules.generate.CAUSE_MARGIN_S`) assumes 15 s
    scrapes; a demo stack scraping every 2 s would hold each symptom's page some 45 s for nothing."""
    return max(MIN_CAUSE_MARGIN_S, 2 * settings.scrape_interval)


def write_stack_files(settings: StackSettings, layout: RunLayout, node_names: list[str]) -> None:
    """Generate every config file and secret of the stack into the run directory (idempotent)."""
    ensure_token(layout)
    ensure_private_database(layout.notifier_db)
    ruleset = stack_ruleset(settings)
    layout.rules_dir.mkdir(parents=True, exist_ok=True)
    for stale in layout.rules_dir.glob("*.yml"):
        stale.unlink()
    rule_doc = rulegen.prometheus_rule_file(ruleset, max_for_seconds=settings.max_for,
                                            evaluation_s=settings.evaluation_interval,
                                            cause_margin_s=cause_margin_s(settings))
    if settings.profile == "sharded":  # the shards evaluate the local rules, vmalert the global ones
        rule_doc, global_doc, _ = split_rule_file(rule_doc)
        ShardedLayout(layout).global_rules.parent.mkdir(parents=True, exist_ok=True)
        ShardedLayout(layout).global_rules.write_text(rulegen.dump_yaml(global_doc), encoding="utf-8")
    (layout.rules_dir / "vigil-rules.yml").write_text(rulegen.dump_yaml(rule_doc), encoding="utf-8")
    routing = load_routing(ROUTING_FILE, ruleset)
    am_config = alertmanager_config(settings, layout, ruleset, routing)
    if settings.profile == "ha":
        ha_layout = HaLayout(layout)
        for replica in range(1, PROMETHEUS_REPLICAS + 1):
            _write(ha_layout.prometheus_config(replica), ha_prometheus_config(settings, layout, node_names, replica))
        am_config = fan_out_webhooks(am_config, notifier_bases(settings))
        for path in ha_layout.data_dirs():
            path.mkdir(parents=True, exist_ok=True)
        if settings.database_url is None:
            postgres.ensure_cluster(layout, settings.host, HaTopology(settings).postgres_port)
    elif settings.profile == "sharded":
        sharded = ShardedLayout(layout)
        for shard in range(settings.shards):
            _write(sharded.prometheus_config(shard), shard_prometheus_config(settings, layout, node_names, shard))
        for path in sharded.data_dirs(settings.shards):
            path.mkdir(parents=True, exist_ok=True)
        link_disk_model(layout, settings.shards)
    else:
        _write(layout.prometheus_config, prometheus_config(settings, layout, node_names))
    _write(layout.alertmanager_config, am_config)
    if settings.oncall_config is None:
        _write(layout.oncall_config, demo_oncall_config(hash_password(ensure_demo_password(layout)),
                                                        settings.resolve_after))
        layout.oncall_config.chmod(OWNER_ONLY_FILE)  # it holds the demo login's Argon2id hash
    for path in (layout.prometheus_data, layout.alertmanager_data, layout.logs_dir, layout.aiops_dir):
        path.mkdir(parents=True, exist_ok=True)
