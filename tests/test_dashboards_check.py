"""The offline dashboard checks (`vigil dashboards check`): the shipped dashboards pass, and a broken
dashboard gets every one of its problems reported at once, the way a user editing the JSON would see them."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from vigil.cli import main
from vigil.dashboards.build import DEFAULT_OUTPUT, dashboard_models
from vigil.dashboards.check import check_dashboards, default_catalog, panels


@pytest.fixture(scope="module")
def catalog():
    return default_catalog()


def vigil(*args):
    return CliRunner().invoke(main, list(args))


def by_title(model: dict, title: str) -> dict:
    return next(panel for panel in panels(model) if panel.get("title") == title)


def test_the_shipped_dashboards_pass(catalog):
    models = {model["uid"]: model for model in dashboard_models()}
    assert len(models) == 8
    assert check_dashboards(models, catalog) == []
    shipped = sorted(str(p) for p in (DEFAULT_OUTPUT / "json").glob("*.json"))
    result = vigil("dashboards", "check", *shipped)
    assert result.exit_code == 0, result.output
    assert "OK: 8 dashboards" in result.output


def test_a_broken_dashboard_reports_every_problem_at_once(tmp_path):
    models = {model["uid"]: model for model in dashboard_models()}
    fleet, node = copy.deepcopy(models["vigil-fleet"]), copy.deepcopy(models["vigil-node"])
    by_title(fleet, "GPUs healthy")["targets"][0]["expr"] = "sum(vigil_gpu_up"  # syntax
    by_title(fleet, "GPUs lost")["targets"][0]["expr"] = 'sum(vigil_gpu_upp{node="$nod"})'  # unknown metric, variable
    by_title(fleet, "Nodes down")["gridPos"] = dict(by_title(fleet, "GPUs throttled")["gridPos"])  # overlap
    by_title(fleet, "Firing alerts")["id"] = by_title(fleet, "GPUs healthy")["id"]  # duplicate id
    del by_title(fleet, "Power")["fieldConfig"]["defaults"]["unit"]
    by_title(fleet, "GPU memory")["datasource"] = {"type": "prometheus", "uid": "some-other"}
    by_title(fleet, "XID errors by class")["targets"][0]["expr"] = (
        "sum by (class) (increase(vigil_gpu_xid_errors_total{team=\"a\"}[10s]))")  # unknown label, short window
    by_title(fleet, "GPU utilization by node")["fieldConfig"]["defaults"]["links"][0]["url"] = (
        "/d/vigil-nowhere?${__url_time_range}&var-node=${__field.labels.node}")
    node["templating"]["list"].append(dict(node["templating"]["list"][1], name="rack"))  # used nowhere
    for name, model in (("fleet.json", fleet), ("node.json", node)):
        (tmp_path / name).write_text(json.dumps(model))

    result = vigil("dashboards", "check", str(tmp_path / "fleet.json"), str(tmp_path / "node.json"))
    assert result.exit_code == 1
    out = result.output
    assert "Traceback" not in out
    expected = [
        "'GPUs healthy': the expression is not valid PromQL",
        "'GPUs lost': query uses $nod, which is not a variable of the dashboard",
        "'GPUs lost': metric 'vigil_gpu_upp' is exported by no vigil exporter",
        "did you mean 'vigil_gpu_up'?",
        "'Nodes down': overlaps panel",
        "is also the id of panel 'GPUs healthy'",
        "'Power': panel has no unit",
        "'GPU memory': panel datasource is not uid '${cluster}'",
        "'vigil_gpu_xid_errors_total' has no label 'team'",
        "increase() over [10s] sees fewer than 4 scrapes",
        "points at dashboard 'vigil-nowhere', which is neither checked nor shipped",
        "node.json: variable 'rack': variable is used by no query",
    ]
    for text in expected:
        assert text in out, text
    assert f"{len(out.splitlines()) - 1} problems in the dashboards" in out.splitlines()[0]


def test_variables_are_substituted_before_parsing_and_label_values_are_checked(catalog):
    model = copy.deepcopy(next(m for m in dashboard_models() if m["uid"] == "vigil-gpu"))
    assert check_dashboards({"gpu": model}, catalog) == []  # $node, $gpu, $__rate_interval all resolve
    model["templating"]["list"][2]["query"] = 'label_values(vigil_gpu_up{node="$node"}, gpuid)'
    problems = [str(p) for p in check_dashboards({"gpu": model}, catalog)]
    assert problems == [p for p in problems if "variable 'gpu'" in p] and len(problems) == 1
    assert "label 'gpuid' is not on the series" in problems[0]


def test_a_file_that_is_not_json_is_a_clean_error(tmp_path):
    bad, worse, listed = tmp_path / "bad.json", tmp_path / "worse.json", tmp_path / "list.json"
    bad.write_text("{not json")
    worse.write_text("[1,")
    listed.write_text("[1]")  # JSON, but not a dashboard object
    result = vigil("dashboards", "check", str(bad), str(worse), str(listed))
    assert result.exit_code == 1
    assert f"{bad}: not a dashboard JSON file" in result.output and "Traceback" not in result.output
    assert f"{worse}: not a dashboard JSON file" in result.output  # every bad file named, not only the first
    assert f"{listed}: not a dashboard JSON file: a JSON list, not an object" in result.output


def test_the_cluster_variable_must_list_prometheus_datasources_and_default_to_the_provisioned_one(catalog):
    model = copy.deepcopy(next(m for m in dashboard_models() if m["uid"] == "vigil-node"))
    cluster = model["templating"]["list"][0]
    cluster["query"], cluster["current"]["value"] = "loki", "elsewhere"
    problems = [str(p) for p in check_dashboards({"node": model}, catalog)]
    assert problems == ["node: variable 'cluster': a datasource variable must be $cluster over 'prometheus' datasources",
                        "node: variable 'cluster': its default is not the provisioned datasource 'vigil-prometheus'"]
