"""Reach any `vigil` sub-command object, to parse a command line exactly as `vigil` would."""

from __future__ import annotations

from collections.abc import Iterator

import click

from vigil.cli import main


def command(path: tuple[str, ...]) -> click.Command:
    """The command at `path` (e.g. `("aiops", "serve")`), its lazy groups loaded."""
    cmd = main
    for name in path:
        cmd = cmd.get_command(click.Context(cmd), name)
    return cmd


def all_commands(cmd: click.Command = main, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command and group under `cmd`, with its path."""
    yield path, cmd
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(click.Context(cmd)):
            yield from all_commands(cmd.get_command(click.Context(cmd), name), (*path, name))
