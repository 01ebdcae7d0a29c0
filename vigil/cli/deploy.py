"""`vigil deploy ...`: what a fleet deploys beyond one machine (docs/deploy.md).

Each sub-group lives in its own module and is imported only when used, like the top-level commands.
"""

from __future__ import annotations

import click

from vigil.cli import LazyGroup

# name -> ("module:attribute" of a click command or group, one-line help shown by --help)
_DEPLOY_COMMANDS = {
    "kubernetes": ("vigil.cli.deploy_kubernetes:kubernetes",
                   "Kubernetes manifests (kustomize base + small/large overlays) generated from vigil's specs."),
    "systemd": ("vigil.cli.deploy_systemd:systemd", "systemd units (hardened) for the GPU node exporters and the central services."),
    "scrape-config": ("vigil.cli.deploy_scrape:scrape_config",
                      "Prometheus scrape_configs (or file_sd targets) for GPU nodes' exporters."),
}


@click.group(name="deploy", cls=LazyGroup, lazy=_DEPLOY_COMMANDS)
def deploy():
    """Deploy vigil on a fleet: Kubernetes, bare metal (docs/deploy.md)."""
