"""The `vigil` command line.

Sub-commands are loaded lazily (the AIOps commands import scikit-learn and statsmodels, which take
seconds to import), so `vigil status` stays fast. Each entry maps a command name to "module:attribute".
"""

from __future__ import annotations

import importlib

import click

# name -> ("module:attribute" of a click command or group, one-line help shown by --help)
_TOP_COMMANDS = {
    "up": ("vigil.cli.stack:up", "Start the local stack (Prometheus, Alertmanager, exporters, notifier, AIOps)."),
    "down": ("vigil.cli.stack:down", "Stop a stack started with `vigil up --detach`."),
    "status": ("vigil.cli.stack:status", "Show each component's URL and health."),
    "chaos": ("vigil.cli.chaos:chaos", "Inject or clear faults in the simulated GPU fleet."),
    "drill": ("vigil.cli.chaos:drill", "Fire drill: inject a fault, time the page and its resolution."),
    "inbox": ("vigil.cli.inbox:inbox", "List the pages delivered to the local inbox."),
    "rules": ("vigil.cli.rules:rules", "Generate, check and test alert rules from compact YAML."),
    "oncall": ("vigil.cli.oncall:oncall", "Who is on call, shifts, coverage checks, iCal export of the on-call file."),
    "notifier": ("vigil.cli.notifier:notifier", "Run the notifier (Alertmanager webhook receiver)."),
    "incidents": ("vigil.cli.incidents:incidents", "List, show, acknowledge, resolve, note and escalate incidents."),
    "postmortem": ("vigil.cli.postmortem:postmortem", "Write an incident's postmortem (Markdown, HTML or PDF) from what vigil knows."),
    "maintenance": ("vigil.cli.maintenance:maintenance", "Maintenance windows: pages of matching alerts are held."),
    "report": ("vigil.cli.report:report", "Reports: on-call health (MTTA, MTTR, pages, SLA, noisiest alerts)."),
    "dashboards": ("vigil.cli.dashboards:dashboards", "Grafana dashboards as code: build, check (docs/dashboards.md)."),
    "exporter": ("vigil.cli:exporter", "Run a GPU or node health exporter."),
    "aiops": ("vigil.cli:aiops", "Baselines, anomaly detection, failure prediction, correlation."),
    "ask": ("vigil.cli.ask:ask_command", "Text2PromQL: answer a question with a PromQL query over vigil's metrics."),
    "deploy": ("vigil.cli.deploy:deploy", "Deploy on a fleet: Kubernetes manifests, bare metal (docs/deploy.md)."),
}

_EXPORTER_COMMANDS = {
    "gpu": ("vigil.cli.gpu_exporter:gpu", "GPU exporter: NVML, DCGM or the simulated fleet."),
    "node": ("vigil.cli.node_exporter:node", "Node health exporter: SMART, InfiniBand, heartbeat."),
}

_AIOPS_COMMANDS = {
    "detect": ("vigil.cli.aiops_nab:detect", "Score a timestamp,value CSV for anomalies (causal)."),
    "evaluate": ("vigil.cli.aiops_evaluate:evaluate", "Held-out scores of detectors on a benchmark (NAB, synthetic KPIs)."),
    "train": ("vigil.cli.aiops_baseline:train", "Learn dynamic baselines from history."),
    "serve": ("vigil.cli.aiops_baseline:serve", "Export baselines and failure risk as Prometheus metrics."),
    "train-disk": ("vigil.cli.aiops_risk:train_disk", "Train the disk failure model on SMART history."),
    "calibrate-risk": ("vigil.cli.aiops_risk:calibrate_risk", "Calibrate GPU/disk failure risk on simulated fleets; held-out detection."),
    "suggest-inhibitions": ("vigil.cli.aiops_risk:suggest_inhibitions", "Propose inhibition rules from alert history."),
}


def _load(target: str) -> click.Command:
    module_name, attr = target.split(":")
    return getattr(importlib.import_module(module_name), attr)


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported only when used."""

    def __init__(self, *args, lazy: dict[str, tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self._lazy = lazy

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(self._lazy))

    def get_command(self, ctx, name):
        if name in self._lazy:
            return _load(self._lazy[name][0])
        return super().get_command(ctx, name)

    def format_commands(self, ctx, formatter):
        # Help text comes from the table so `--help` does not import every sub-command.
        rows = [(name, self._lazy[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, lazy=_EXPORTER_COMMANDS)
def exporter():
    """Run a vigil exporter (GPU or node health) in the foreground."""


@click.group(cls=LazyGroup, lazy=_AIOPS_COMMANDS)
def aiops():
    """Baselines, anomaly detection, failure prediction and alert correlation."""


@click.group(cls=LazyGroup, lazy=_TOP_COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vigil")
def main():
    """vigil: monitoring, alerting and AIOps for GPU clusters."""
