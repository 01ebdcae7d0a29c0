"""`vigil deploy systemd build [--out DIR] [--check] [--vigil-bin PATH]`: the bare-metal units
(deploy/systemd, docs/deploy.md "Bare metal (systemd)")."""

from __future__ import annotations

from pathlib import Path

import click

from vigil.common.generated_files import write_or_check
from vigil.deploy.systemd import DEFAULT_VIGIL_BIN, render_units
from vigil.deploy.systemd import units as units_module

DEFAULT_OUT = Path(units_module.__file__).parent / "units"  # the checked-in copy


@click.group(name="systemd")
def systemd():
    """systemd units for the exporters of a GPU node and the central services."""


@systemd.command()
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=DEFAULT_OUT,
              show_default="the checked-in deploy/systemd/units", help="Folder to write the *.service files into.")
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing; exit 1 when a unit under --out differs from what would be generated.")
@click.option("--vigil-bin", default=DEFAULT_VIGIL_BIN, show_default=True,
              help="Absolute path of the installed `vigil` the units run.")
def build(out: Path, check_only: bool, vigil_bin: str):
    """Generate vigil-gpu-exporter, vigil-node-exporter, vigil-notifier and vigil-aiops .service files."""
    if not vigil_bin.startswith("/"):
        raise click.BadParameter(f"systemd runs an absolute path, got {vigil_bin!r}", param_hint="--vigil-bin")
    write_or_check(out, render_units(vigil_bin), check_only, "vigil deploy systemd build", owned="vigil-*.service")
