"""`vigil deploy kubernetes build [--out DIR] [--check]` (docs/deploy.md, "Kubernetes")."""

from __future__ import annotations

import click


@click.group(name="kubernetes")
def kubernetes():
    """Kubernetes manifests generated from vigil's specs: kustomize base and small/large overlays."""
