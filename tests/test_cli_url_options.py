"""Every command that takes a Prometheus URL takes it as both `--prometheus` and `--prometheus-url`.

The commands are found by walking `vigil`'s whole command tree (the lazy groups included), so a command
added later with only one of the spellings fails here.
"""

from __future__ import annotations

import click
import pytest

from vigil.cli import main
from vigil.common.click_types import HttpUrl

SPELLINGS = ("--prometheus", "--prometheus-url")
URL = "http://127.0.0.1:9/some-prometheus"


def walk(command: click.Command, path: tuple[str, ...] = ()):
    """(path, command) of every leaf command under `command`."""
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            yield from walk(command.get_command(ctx, name), (*path, name))
    else:
        yield path, command


def prometheus_options() -> list:
    """One pytest param per option whose name starts with --prometheus, named after its command."""
    found = []
    for path, command in walk(main):
        for option in command.params:
            names = [name for name in (*option.opts, *option.secondary_opts) if name.startswith("--prometheus")]
            if isinstance(option, click.Option) and names:
                found.append(pytest.param(command, option, id=f"{' '.join(path)}:{option.name}"))
    return found


OPTIONS = prometheus_options()


def test_the_walk_finds_the_commands_that_take_a_prometheus_url():
    ids = {param.id.split(":")[0] for param in OPTIONS}
    assert {"dashboards build", "notifier serve", "rules backtest", "aiops train", "aiops suggest-inhibitions"} <= ids


@pytest.mark.parametrize("command, option", OPTIONS)
def test_both_spellings_are_accepted_and_shown(command: click.Command, option: click.Option):
    assert set(SPELLINGS) <= set(option.opts), f"{option.opts}: give the option both {SPELLINGS}"
    for spelling in SPELLINGS:  # parsed as a user types it: both land in the same parameter
        ctx = command.make_context(command.name, [spelling, URL], resilient_parsing=True)
        assert ctx.params[option.name] == URL, spelling
    assert isinstance(option.type, HttpUrl), f"{option.opts}: type=HttpUrl() refuses a malformed URL before a request"
    shown = option.get_help_record(click.Context(command))[0]
    assert all(spelling in shown.replace(",", " ").split() for spelling in SPELLINGS), shown


def test_backtest_takes_the_notifier_url_as_rules_generate_spells_it():
    backtest = main.get_command(click.Context(main), "rules").get_command(click.Context(main), "backtest")
    for spelling in ("--notifier", "--notifier-url"):
        ctx = backtest.make_context("backtest", [spelling, URL], resilient_parsing=True)
        assert ctx.params["notifier_url"] == URL, spelling
