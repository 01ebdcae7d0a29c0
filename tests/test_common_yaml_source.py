"""One YAML loading path: values keep their lines, mistakes are `file:line: message`, a key defined twice
is refused with both lines. The rule specs, the on-call file and the stack settings all load through it."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from vigil import rules
from vigil.cli import main
from vigil.common.yaml_source import line_at, parse_yaml, plain, read_yaml
from vigil.oncall.loader import OncallConfigError, load_oncall
from vigil.stack.settings import SettingsError, load_settings

TWICE = """\
targets:
  dri:
    channels: [{type: inbox}]
  storage:
    channels: [{type: inbox}]
  dri:
    name: Second DRI
    channels: [{type: inbox}]
default: dri
"""


def test_values_keep_their_lines_and_paths_find_them():
    doc = parse_yaml("a:\n  b:\n    - x\n    - c: 1\n      d: [1, 2]\ne: true\n", "f.yaml")
    assert doc.problems == [] and plain(doc.root) == {"a": {"b": ["x", {"c": 1, "d": [1, 2]}]}, "e": True}
    assert line_at(doc.root, ("a", "b", 1, "d")) == 5
    assert line_at(doc.root, ("a", "b", 0)) == 3
    assert line_at(doc.root, ("e",)) == 6
    assert line_at(doc.root, ("a", "missing", "deeper")) == 1  # stops at the last key it reached


def test_a_key_defined_twice_is_refused_with_both_lines_at_any_depth():
    doc = parse_yaml(TWICE, "oncall.yaml")
    assert doc.messages() == ["oncall.yaml:6: duplicate key 'dri' (first defined on line 2)"]
    assert plain(doc.root)["targets"]["dri"] == {"channels": [{"type": "inbox"}]}  # the first one is kept


def test_merge_keys_work_as_with_safe_load_and_written_keys_win():
    doc = parse_yaml("base: &b {x: 1, y: 2}\nother:\n  y: 3\n  <<: *b\n", "f.yaml")
    assert doc.problems == [] and plain(doc.root)["other"] == {"y": 3, "x": 1}


@pytest.mark.parametrize("text, line, message", [
    ("a: [\n", 2, "invalid YAML: expected the node content, but found '<stream end>'"),
    ("a: 1\n  b: 2\n", 2, "invalid YAML: mapping values are not allowed here"),
    ("? [a, b]\n: 1\n", 1, "mapping keys must be plain strings"),
    ("a: !!int x\n", 1, "invalid value:"),
])
def test_syntax_mistakes_name_their_line(text, line, message):
    assert parse_yaml(text, "f.yaml").messages()[0].startswith(f"f.yaml:{line}: {message}")


def test_an_unreadable_file_says_what_it_was(tmp_path):
    doc = read_yaml(tmp_path / "absent.yaml", "on-call config")
    assert not doc.readable and doc.messages()[0].startswith(f"{tmp_path / 'absent.yaml'}:1: cannot read on-call config:")
    (tmp_path / "empty.yaml").write_text("# nothing\n")
    empty = read_yaml(tmp_path / "empty.yaml", "x")
    assert empty.readable and empty.root is None and empty.problems == []


def test_an_oncall_file_defining_a_target_twice_is_refused_with_both_lines(tmp_path):
    path = tmp_path / "oncall.yaml"
    path.write_text(TWICE)
    with pytest.raises(OncallConfigError) as caught:
        load_oncall(path)
    assert caught.value.problems == [f"{path}:6: duplicate key 'dri' (first defined on line 2)"]
    result = CliRunner().invoke(main, ["notifier", "check-oncall", str(path)])
    assert result.exit_code == 1 and f"{path}:6: duplicate key 'dri' (first defined on line 2)" in result.output


def test_a_duplicate_comes_with_the_other_mistakes_of_the_file(tmp_path):
    path = tmp_path / "oncall.yaml"
    path.write_text(TWICE.replace("default: dri", "default: ghost"))
    with pytest.raises(OncallConfigError) as caught:
        load_oncall(path)
    assert caught.value.problems == [f"{path}:6: duplicate key 'dri' (first defined on line 2)",
                                     f"{path}:9: default: unknown target 'ghost'"]


def test_rule_specs_and_stack_settings_refuse_duplicates_the_same_way(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("alerts:\n  A:\n    expr: up == 0\n    severity: info\n    severity: critical\n"
                    "    summary: s\n    description: d\n    labels: {team: t}\n    runbook: https://runbooks.example.org/a\n")
    with pytest.raises(rules.SpecError) as caught:
        rules.load_specs([spec])
    assert caught.value.errors == [f"{spec}:5: duplicate key 'severity' (first defined on line 4)"]
    settings = tmp_path / "vigil.yaml"
    settings.write_text("stack:\n  sim_nodes: 2\n  sim_nodes: 3\n")
    with pytest.raises(SettingsError, match=rf"^{settings}:3: duplicate key 'sim_nodes' \(first defined on line 2\)$"):
        load_settings(settings, {})
