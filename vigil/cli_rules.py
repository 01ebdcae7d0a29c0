"""`vigil rules`: generate, check and unit-test the alert rules built from compact YAML specs."""

from __future__ import annotations

from pathlib import Path

import click

from vigil.rules import (
    INHIBIT_FILE_NAME, RULE_FILE_NAME, RuleSet, SpecError, alertmanager_inhibit_rules, default_spec_paths,
    default_unit_test_paths, dump_yaml, load_specs, prometheus_rule_file,
)
from vigil.common.click_types import Duration
from vigil.rules.promtool import PromtoolMissing, check_rules, test_rules

_SPECS = click.argument("specs", nargs=-1, type=click.Path(path_type=Path, dir_okay=False))


def _load(specs: tuple[Path, ...]) -> RuleSet:
    """The rule set of `specs` (the shipped specs when none are given); spec errors as a clean failure."""
    try:
        return load_specs(list(specs) or default_spec_paths())
    except SpecError as exc:
        count = len(exc.errors)
        raise click.ClickException(f"{count} error{'s' if count != 1 else ''} in the rule specs:\n{exc}") from None


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
@_SPECS
@click.option("-o", "--output-dir", type=click.Path(path_type=Path, file_okay=False),
              help=f"Write {RULE_FILE_NAME} and {INHIBIT_FILE_NAME} here instead of printing the rules.")
@click.option("--max-for", type=Duration(),
              help="Cap every 'for' and 'keep_firing_for' (e.g. 5s for a quick demo stack).")
def generate(specs, output_dir, max_for):
    """Generate the Prometheus rule file from SPECS (default: the shipped specs)."""
    ruleset = _load(specs)
    rule_text = dump_yaml(prometheus_rule_file(ruleset, max_for_seconds=max_for))
    if output_dir is None:
        click.echo(rule_text, nl=False)
        return
    inhibit_text = dump_yaml({"inhibit_rules": alertmanager_inhibit_rules(ruleset)})
    _write(output_dir / RULE_FILE_NAME, rule_text)
    _write(output_dir / INHIBIT_FILE_NAME, inhibit_text)
    click.echo(f"wrote {len(ruleset.alerts)} alerts to {output_dir / RULE_FILE_NAME} and "
               f"{len(ruleset.inhibitions)} inhibit rules to {output_dir / INHIBIT_FILE_NAME}", err=True)


@rules.command()
@_SPECS
@click.option("--max-for", type=Duration(), help="Check the rules with this cap on 'for'.")
def check(specs, max_for):
    """Validate SPECS, generate the rules and run `promtool check rules` on them."""
    ruleset = _load(specs)
    try:
        result = check_rules(ruleset, max_for_seconds=max_for)
    except PromtoolMissing as exc:
        raise click.ClickException(str(exc)) from None
    if not result.ok:
        raise click.ClickException(f"promtool check rules failed:\n{result.output}")
    click.echo(f"OK: {len(ruleset.alerts)} alerts in {len(ruleset.groups)} groups pass promtool check rules")


@rules.command(name="test")
@click.argument("test_files", nargs=-1, type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--spec", "specs", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="Spec file to generate the rules from (repeatable; default: the shipped specs).")
def test_command(test_files, specs):
    """Run `promtool test rules` on TEST_FILES (default: rules/tests/*.yaml) against freshly generated rules.

    Test files name the rules as `rule_files: [vigil-rules.yml]`.
    """
    ruleset = _load(tuple(specs))
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
