"""`vigil rules`: generate, check and unit-test the alert rules built from compact YAML specs."""

from __future__ import annotations

from pathlib import Path

import click

from vigil.rules import (
    INHIBIT_FILE_NAME, RULE_FILE_NAME, SpecError, alertmanager_inhibit_rules, default_spec_paths, default_unit_test_paths,
    dump_yaml, load_specs, prometheus_rule_file,
)
from vigil.common.click_types import Duration, label_pairs
from vigil.rules.alertmanager import alertmanager_config, heartbeat_url_for, webhook_receiver
from vigil.rules.alertmanager_routing import ROUTING_FILE, load_routing
from vigil.rules.catalog import load_catalog, with_records
from vigil.rules.kubernetes import dump_yaml_documents, prometheus_rules
from vigil.rules.promtool import PromtoolMissing, check_rules, test_rules

from vigil.cli.options import load_ruleset, specs_argument
from vigil.cli.rules_backtest import backtest_command

ALERTMANAGER_FILE_NAME = "alertmanager.yml"
KUBERNETES_FILE_NAME = "prometheus-rules.k8s.yml"
LOCAL_NOTIFIER_WEBHOOK = "http://127.0.0.1:9603/api/v1/alerts/alertmanager"  # `vigil up`'s default port_base


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror}") from None


@click.group(name="rules")
def rules():
    """Alert rules from compact YAML specs (format: docs/rules.md)."""


@rules.command()
@specs_argument
@click.option("-o", "--output-dir", type=click.Path(path_type=Path, file_okay=False),
              help=f"Write {RULE_FILE_NAME} and {INHIBIT_FILE_NAME} here instead of printing the rules.")
@click.option("--max-for", type=Duration(),
              help="Cap every 'for' and 'keep_firing_for' (e.g. 5s for a quick demo stack).")
@click.option("--alertmanager", is_flag=True,
              help=f"Also write {ALERTMANAGER_FILE_NAME}: routes, receivers, inhibitions, maintenance windows.")
@click.option("--routing", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Routing file of --alertmanager (default: the shipped rules/alertmanager-routing.yaml).")
@click.option("--notifier-url", default=LOCAL_NOTIFIER_WEBHOOK, show_default=True,
              help="The notifier's Alertmanager webhook, every receiver's URL (--alertmanager); the Watchdog goes "
                   "to its heartbeat beside it (/api/v1/heartbeat/watchdog).")
@click.option("--token-file", type=click.Path(path_type=Path, dir_okay=False),
              help="File holding the notifier's bearer token, read by Alertmanager (--alertmanager).")
@click.option("--kubernetes", is_flag=True,
              help=f"Also write {KUBERNETES_FILE_NAME}: one PrometheusRule object per rule group.")
@click.option("--namespace", help="metadata.namespace of the PrometheusRule objects (--kubernetes).")
@click.option("--k8s-label", "k8s_labels", multiple=True, callback=label_pairs, metavar="KEY=VALUE",
              help="Extra metadata label of the PrometheusRule objects, e.g. release=prometheus (repeatable).")
def generate(specs, output_dir, max_for, alertmanager, routing, notifier_url, token_file, kubernetes, namespace,
             k8s_labels):
    """Generate the Prometheus rule file from SPECS (default: the shipped specs).

    With -o, also the Alertmanager inhibit rules and, on request, the whole Alertmanager configuration
    (--alertmanager) and PrometheusRule objects (--kubernetes); docs/rules.md describes them.
    """
    if (alertmanager or kubernetes) and output_dir is None:
        raise click.UsageError("--alertmanager and --kubernetes write files: give -o DIR")
    ruleset = load_ruleset(specs)
    rule_text = dump_yaml(prometheus_rule_file(ruleset, max_for_seconds=max_for))
    if output_dir is None:
        click.echo(rule_text, nl=False)
        return
    written = {}
    if alertmanager:
        try:
            routes = load_routing(routing or ROUTING_FILE, ruleset)
        except SpecError as exc:
            raise click.ClickException(f"{len(exc.errors)} error(s) in the routing file:\n{exc}") from None
        credentials = None if token_file is None else str(token_file)
        webhook = webhook_receiver(notifier_url, credentials)
        # the Watchdog to the notifier's heartbeat beside the webhook (docs/notifier.md, Heartbeats)
        beat_url = heartbeat_url_for(notifier_url)
        heartbeat = None if beat_url is None else webhook_receiver(beat_url, credentials, send_resolved=False)
        written[ALERTMANAGER_FILE_NAME] = dump_yaml(alertmanager_config(ruleset, routes, webhook, heartbeat))
    if kubernetes:
        try:
            objects = prometheus_rules(ruleset, namespace=namespace, labels=k8s_labels, max_for_seconds=max_for)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
        written[KUBERNETES_FILE_NAME] = dump_yaml_documents(objects)
    inhibit_text = dump_yaml({"inhibit_rules": alertmanager_inhibit_rules(ruleset)})
    _write(output_dir / RULE_FILE_NAME, rule_text)
    _write(output_dir / INHIBIT_FILE_NAME, inhibit_text)
    for name, text in written.items():
        _write(output_dir / name, text)
    click.echo(f"wrote {len(ruleset.alerts)} alerts to {output_dir / RULE_FILE_NAME} and "
               f"{len(ruleset.inhibitions)} inhibit rules to {output_dir / INHIBIT_FILE_NAME}", err=True)
    for name in written:
        click.echo(f"wrote {output_dir / name}", err=True)


@rules.command()
@specs_argument
@click.option("--max-for", type=Duration(), help="Check the rules with this cap on 'for'.")
def check(specs, max_for):
    """Validate and lint SPECS, generate the rules and run `promtool check rules` on them.

    The lint (docs/rules.md) parses every expression and checks its metrics and labels against the
    metric catalog (`vigil rules catalog`), range windows, runbook entries and the labels routing and
    inhibitions need; every problem is listed at once as the spec's file:line.
    """
    ruleset = load_ruleset(specs)
    try:
        result = check_rules(ruleset, max_for_seconds=max_for)
    except PromtoolMissing as exc:
        raise click.ClickException(str(exc)) from None
    if not result.ok:
        raise click.ClickException(f"promtool check rules failed:\n{result.output}")
    click.echo(f"OK: {len(ruleset.alerts)} alerts in {len(ruleset.groups)} groups pass promtool check rules"
               f" (with {len(ruleset.records)} recording rules)")


@rules.command()
@click.argument("patterns", nargs=-1)
def catalog(patterns):
    """List the metrics the lint knows (name, type, labels, source) whose names contain any of PATTERNS.

    A rule may read only these (including the series the shipped specs' recording rules record), or
    metrics its spec declares under 'external_metrics' (docs/rules.md).
    """
    known = load_catalog()
    try:  # the shipped specs' recorded series are metrics a rule may read too
        known = with_records(known, load_specs(default_spec_paths()).records)
    except SpecError:
        pass  # `vigil rules check` reports those errors
    names = sorted(n for n in known.metrics if not patterns or any(p in n for p in patterns))
    if not names:
        raise click.ClickException(f"no metric in the catalog contains {' or '.join(map(repr, patterns))}")
    for name in names:
        info = known.metrics[name]
        labels = "?" if info.labels is None else ",".join(sorted(info.labels))
        click.echo(f"{name}\t{info.type}\t{{{labels}}}\t{info.source}")


@rules.command(name="test")
@click.argument("test_files", nargs=-1, type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--spec", "specs", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="Spec file to generate the rules from (repeatable; default: the shipped specs).")
def test_command(test_files, specs):
    """Run `promtool test rules` on TEST_FILES (default: rules/tests/*.yaml) against freshly generated rules.

    Test files name the rules as `rule_files: [vigil-rules.yml]`.
    """
    ruleset = load_ruleset(tuple(specs))
    files = list(test_files) or default_unit_test_paths()
    if not files:
        raise click.ClickException("no promtool test files given and none shipped under rules/tests/")
    try:
        result = test_rules(ruleset, files)
    except PromtoolMissing as exc:
        raise click.ClickException(str(exc)) from None
    if not result.ok:
        raise click.ClickException(f"promtool test rules failed:\n{result.output}")
    click.echo(f"OK: {len(files)} promtool test files pass")


rules.add_command(backtest_command)
