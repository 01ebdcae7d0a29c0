"""`vigil deploy kubernetes build [--out DIR] [--check]` (docs/deploy.md, "Kubernetes")."""

from __future__ import annotations

from pathlib import Path

import click

from vigil.common.generated_files import write_or_check
from vigil.deploy.k8s import DEFAULT_OUTPUT, OWNED, render
from vigil.rules import SpecError


@click.group(name="kubernetes")
def kubernetes():
    """Kubernetes manifests generated from vigil's specs: kustomize base and small/large overlays."""


@kubernetes.command()
@click.option("-o", "--out", "output", type=click.Path(path_type=Path, file_okay=False), default=DEFAULT_OUTPUT,
              show_default="the checked-in deploy/kubernetes folder", help="Folder to write base/ and overlays/ into.")
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing; exit 1 naming each file under --out that differs from what would be generated.")
def build(output: Path, check_only: bool):
    """Generate the kustomize base and overlays (rules, Alertmanager config and dashboards from their generators)."""
    try:
        files = render()
    except SpecError as exc:
        raise click.ClickException(f"{len(exc.errors)} error(s) in the rule specs or the routing file:\n{exc}") from None
    write_or_check(output, files, check_only, "vigil deploy kubernetes build", owned=OWNED)
