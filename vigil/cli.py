"""The `vigil` command line.

Sub-commands are loaded lazily (the AIOps commands import scikit-learn and statsmodels, which take
seconds to import), so `vigil status` stays fast. Each entry maps a command name to "module:attribute".
"""

from __future__ import annotations

import importlib

import click

# name -> "module:attribute" of a click command or group
_TOP_COMMANDS = {
    "up": "vigil.cli_stack:up",
    "down": "vigil.cli_stack:down",
    "status": "vigil.cli_stack:status",
    "chaos": "vigil.cli_chaos:chaos",
    "drill": "vigil.cli_chaos:drill",
    "inbox": "vigil.cli_stack:inbox",
    "rules": "vigil.cli_rules:rules",
    "notifier": "vigil.cli_notifier:notifier",
    "exporter": "vigil.cli:exporter",
    "aiops": "vigil.cli:aiops",
}

_EXPORTER_COMMANDS = {
    "gpu": "vigil.cli_gpu_exporter:gpu",
    "node": "vigil.cli_node_exporter:node",
}

_AIOPS_COMMANDS = {
    "detect": "vigil.cli_aiops_nab:detect",
    "evaluate": "vigil.cli_aiops_nab:evaluate",
    "train": "vigil.cli_aiops_baseline:train",
    "serve": "vigil.cli_aiops_baseline:serve",
    "train-disk": "vigil.cli_aiops_risk:train_disk",
    "suggest-inhibitions": "vigil.cli_aiops_risk:suggest_inhibitions",
}


def _load(target: str) -> click.Command:
    module_name, attr = target.split(":")
    return getattr(importlib.import_module(module_name), attr)


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported only when used."""

    def __init__(self, *args, lazy: dict[str, str], **kwargs):
        super().__init__(*args, **kwargs)
        self._lazy = lazy

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(self._lazy))

    def get_command(self, ctx, name):
        if name in self._lazy:
            return _load(self._lazy[name])
        return super().get_command(ctx, name)


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


if __name__ == "__main__":  # pragma: no cover
    main()
