"""Options and helpers that more than one command group uses: the run directory, the rule specs
argument, calling the running (or stopped) stack's notifier, `--by` and `--json`. Command modules import
them from here, not from one another."""

from __future__ import annotations

import getpass
import json
from pathlib import Path
from typing import Callable, TypeVar

import click
import requests

from vigil.common.click_types import HttpUrl
from vigil.rules import RuleSet, SpecError, default_spec_paths, load_specs

from vigil.stack.runstate import NoStack
from vigil.stack.client import StackClient, StackRequestError
from vigil.stack.stopped import StoppedStack

T = TypeVar("T")

run_dir_option = click.option("--run-dir", type=click.Path(path_type=Path), default=Path(".vigil"), show_default=True,
                              help="Run directory of the stack (state, configs, data, logs).")
_NOTIFIER_URL, _TOKEN_FILE = "vigil.notifier_url", "vigil.token_file"


def _remember(ctx: click.Context, param: click.Parameter, value):
    ctx.meta[f"vigil.{param.name}"] = value
    return value


def notifier_options(command: Callable) -> Callable:
    """`--run-dir`, and `--notifier-url` with `--token-file` to talk to a notifier that no `vigil up` runs
    (`vigil notifier serve` on its own, as a fleet runs it), as amtool takes `--alertmanager.url`."""
    command = click.option("--token-file", envvar="VIGIL_TOKEN_FILE", type=click.Path(path_type=Path, dir_okay=False),
                           expose_value=False, callback=_remember, is_eager=True,
                           help="File holding the notifier's API token (env VIGIL_TOKEN_FILE); with --notifier-url.")(command)
    command = click.option("--notifier-url", envvar="VIGIL_NOTIFIER_URL", type=HttpUrl(), expose_value=False,
                           callback=_remember, is_eager=True,
                           help="The notifier's URL, instead of the stack in --run-dir (env VIGIL_NOTIFIER_URL).")(command)
    return run_dir_option(command)


def _remote_client() -> StackClient | None:
    """The client of `--notifier-url` (with the token of `--token-file`), None when not given."""
    meta = click.get_current_context().meta
    url, token_file = meta.get(_NOTIFIER_URL), meta.get(_TOKEN_FILE)
    if not url:
        return None
    if token_file is None:
        raise click.UsageError("--notifier-url needs --token-file (or VIGIL_TOKEN_FILE): the file holding the "
                               "notifier's API token")
    try:
        token = token_file.read_text().strip()
    except OSError as exc:
        raise click.ClickException(f"cannot read the token file {token_file}: {exc.strerror}") from None
    if not token:
        raise click.ClickException(f"the token file {token_file} is empty")
    return StackClient(prometheus="", notifier=url.rstrip("/"), gpu_control=None, token=token)

specs_argument = click.argument("specs", nargs=-1, type=click.Path(path_type=Path, dir_okay=False))


def load_ruleset(specs: tuple[Path, ...]) -> RuleSet:
    """The rule set of `specs` (the shipped specs when none are given); spec errors as a clean failure."""
    try:
        return load_specs(list(specs) or default_spec_paths())
    except SpecError as exc:
        count = len(exc.errors)
        raise click.ClickException(f"{count} error{'s' if count != 1 else ''} in the rule specs:\n{exc}") from None


def call_notifier(run_dir: Path, call: Callable[[StackClient], T], *, stopped_ok: bool = False,
                  refused: str | None = None, what: str = "incidents") -> T:
    """`call(client)` on the running stack's notifier; its refusals and absence as a one-line error.

    With `stopped_ok`, a stopped stack's `what` (incidents, pages, …) are read from its run directory instead
    (`call` gets a `StoppedStack`, said once on stderr); `refused` names what a stopped stack cannot do."""
    try:
        client = _remote_client() or StackClient.from_run_dir(run_dir)
    except NoStack as exc:
        if stopped_ok:
            return call_stopped(run_dir, exc, call, what)
        if refused:
            raise click.ClickException(f"cannot {refused}: {exc.reason}; start the stack first "
                                       f"(vigil up --run-dir {run_dir})") from None
        raise click.ClickException(str(exc)) from None
    try:
        return call(client)
    except StackRequestError as exc:
        raise click.ClickException(str(exc)) from None
    except requests.HTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "an error"
        raise click.ClickException(f"the notifier at {client.notifier} answered {status}") from None
    except requests.RequestException as exc:
        raise click.ClickException(f"cannot reach the notifier at {client.notifier}: {exc}") from None


def call_stopped(run_dir: Path, why: NoStack, call: Callable[[StoppedStack], T], what: str = "incidents") -> T:
    """`call(stopped)` on the notifier database in the run directory of the stack that is not running."""
    try:
        stopped = StoppedStack(run_dir, why)
    except NoStack as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"the stack in {run_dir} is stopped: {what} read from {stopped.db} (read-only)", err=True)
    try:
        return call(stopped)
    except StackRequestError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        stopped.close()


def default_actor() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no $USER and no passwd entry (a bare container)
        return "cli"


by_option = click.option("--by", default=default_actor, show_default="$USER", help="Who does it (on the timeline).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def printed_plainly(key: str, rows: list[dict], as_json: bool) -> bool:
    """Print `rows` as JSON (`{key: rows}`) or say there are none; False: the caller prints them."""
    if as_json:
        click.echo(json.dumps({key: rows}, indent=2))
    elif not rows:
        click.echo(f"no {key}")
    return as_json or not rows
