"""The generated Grafana dashboards: the checked-in JSON and provisioning files are exactly what
`vigil dashboards build` writes (a golden copy), and the drill-down fleet → node → GPU → job can be
followed in the JSON's links, carrying the time range and the variables."""

from __future__ import annotations

import json
import re

import yaml
from click.testing import CliRunner

from vigil.cli import main
from vigil.common.ports import free_port
from vigil.dashboards.build import DATASOURCE_FILE, DEFAULT_OUTPUT, PROVIDER_FILE, render
from vigil.dashboards.check import panels

UIDS = ("vigil-fleet", "vigil-node", "vigil-gpu", "vigil-job", "vigil-stack", "vigil-oncall", "vigil-disks",
        "vigil-aiops")


def vigil(*args):
    return CliRunner().invoke(main, list(args))


def models() -> dict[str, dict]:
    return {json.loads(text)["uid"]: json.loads(text) for path, text in render().items() if path.endswith(".json")}


def test_the_checked_in_files_are_what_build_generates():
    result = vigil("dashboards", "build", "--check")
    assert result.exit_code == 0, result.output
    files = render()
    assert sorted(files) == sorted([f"json/{uid}.json" for uid in UIDS] + [PROVIDER_FILE, DATASOURCE_FILE])
    for path, text in files.items():
        assert (DEFAULT_OUTPUT / path).read_text(encoding="utf-8") == text, f"{path} is stale: run vigil dashboards build"
    assert render() == files  # deterministic


def test_build_writes_a_folder_and_check_names_each_stale_file(tmp_path):
    assert vigil("dashboards", "build", "--output", str(tmp_path)).exit_code == 0
    assert vigil("dashboards", "build", "--output", str(tmp_path), "--check").exit_code == 0
    fleet = tmp_path / "json" / "vigil-fleet.json"
    fleet.write_text(fleet.read_text().replace("GPUs lost", "GPUs gone"))
    (tmp_path / "json" / "old.json").write_text("{}")
    (tmp_path / DATASOURCE_FILE).unlink()
    result = vigil("dashboards", "build", "--output", str(tmp_path), "--check")
    assert result.exit_code == 1
    assert "3 stale file(s)" in result.output
    for name in ("json/vigil-fleet.json", "json/old.json (not generated any more)", DATASOURCE_FILE):
        assert name in result.output
    assert "Traceback" not in result.output


def test_json_is_sorted_and_every_panel_and_query_reads_the_cluster_variable_defaulting_to_the_provisioned_datasource():
    datasource = yaml.safe_load(render()[DATASOURCE_FILE])["datasources"][0]
    assert datasource["type"] == "prometheus" and datasource["uid"] == "vigil-prometheus"
    for path, text in render().items():
        if path.endswith(".json"):
            assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    for uid, model in models().items():
        # $cluster picks a Prometheus datasource (a shard, a cluster, the global view); the provisioned one first
        [cluster] = [v for v in model["templating"]["list"] if v["name"] == "cluster"]
        assert (cluster["type"], cluster["query"], cluster["current"]["value"]) == ("datasource", "prometheus",
                                                                                   datasource["uid"])
        assert model["templating"]["list"][0] is cluster  # before the variables whose queries read it
        reads = {"type": "prometheus", "uid": "${cluster}"}
        assert all(v["datasource"] == reads for v in model["templating"]["list"] if v["type"] == "query"), uid
        assert all(a["datasource"] == reads for a in model["annotations"]["list"] if a["name"] == "Incidents"), uid
        for panel in panels(model):
            if panel["type"] == "row":
                continue
            assert panel["datasource"] == reads, (uid, panel["title"])
            assert panel["fieldConfig"]["defaults"]["unit"], (uid, panel["title"])
            assert panel["targets"] and all(t["datasource"] == reads for t in panel["targets"])
    provider = yaml.safe_load(render()[PROVIDER_FILE])["providers"][0]
    assert provider["type"] == "file" and provider["options"]["path"]


def _links(model: dict) -> list[tuple[str, str]]:
    """(panel title, data-link URL) of every drill-down link of the dashboard."""
    return [(panel["title"], link["url"]) for panel in panels(model)
            for link in panel.get("fieldConfig", {}).get("defaults", {}).get("links") or []]


def _follow(model: dict, target_uid: str) -> list[str]:
    found = [url for _, url in _links(model) if url.startswith(f"/d/{target_uid}?")]
    assert found, f"{model['uid']} has no link to {target_uid}"
    return found


def test_drill_down_from_the_fleet_to_a_job_carries_time_range_and_variables():
    boards = models()
    hops = (("vigil-fleet", "vigil-node", {"node"}), ("vigil-node", "vigil-gpu", {"node", "gpu"}),
            ("vigil-gpu", "vigil-job", {"job_id"}))
    for source, target, variables in hops:
        have = {var["name"] for var in boards[target]["templating"]["list"]}
        assert variables <= have
        for url in _follow(boards[source], target):
            assert "${__url_time_range}" in url
            set_vars = dict(re.findall(r"var-([a-z_]+)=\$\{__field\.labels\.([a-z_]+)\}", url))
            assert set(set_vars) == variables and all(k == v for k, v in set_vars.items()), url
    # the fleet also reaches a job directly, and the job back to its GPUs
    _follow(boards["vigil-fleet"], "vigil-job")
    _follow(boards["vigil-job"], "vigil-gpu")
    for model in boards.values():  # the dashboards' own menu keeps the time and the variables
        assert any(link["keepTime"] and link["includeVars"] for link in model["links"])


def test_the_job_view_joins_hardware_metrics_with_the_jobs_gpus():
    job = models()["vigil-job"]
    exprs = [target["expr"] for panel in panels(job) for target in panel.get("targets", [])]
    joined = [e for e in exprs if 'vigil_gpu_job{job_id="$job_id"} * on (node, gpu) group_left ()' in e]
    for metric in ("vigil_gpu_utilization_ratio", "vigil_gpu_tensor_pipe_active_ratio", "vigil_gpu_memory_used_bytes",
                   "vigil_gpu_power_watts", "vigil_gpu_clock_event_active", "vigil_gpu_xid_errors_total"):
        assert any(metric in e for e in joined), metric


def test_fleet_overview_has_the_views_the_issue_asks_for():
    titles = {panel["title"]: panel for panel in panels(models()["vigil-fleet"])}
    for title in ("GPUs healthy", "GPUs lost", "GPUs throttled", "Nodes down", "Firing alerts", "GPU memory", "Power",
                  "XID errors by class", "ECC errors by type", "GPUs allocated by team", "Allocated GPUs idle by team",
                  "GPU-hours allocated vs. used", "Hardware incidents per 1,000 GPU-days", "MTTR"):
        assert title in titles, title
    assert titles["GPU temperature"]["type"] == "heatmap"
    profiling = " ".join(t["expr"] for t in titles["Fleet utilization and profiling"]["targets"])
    assert "vigil_gpu_sm_active_ratio" in profiling and "vigil_gpu_tensor_pipe_active_ratio" in profiling
    assert "ALERTS" in titles["Firing alerts"]["targets"][0]["expr"]


def test_oncall_dashboard_reads_the_notifiers_metrics_and_links_to_the_node():
    board = models()["vigil-oncall"]
    titles = {panel["title"]: panel for panel in panels(board)}
    expected = {"Pages sent by channel and result": "vigil_notifier_deliveries_total", "MTTA": "vigil_oncall_mtta_seconds",
                "MTTR": "vigil_oncall_mttr_seconds", "SLA compliance": "vigil_oncall_sla_compliance_ratio",
                "SLA breaches": "vigil_notifier_sla_breaches_total", "Escalation ratio": "vigil_oncall_escalation_ratio",
                "Acted-on ratio": "vigil_oncall_acted_on_ratio", "Noisiest alerts": "ALERTS",
                "Firing alerts by severity": "ALERTS", "Incidents open": "vigil_notifier_incidents_firing"}
    for title, metric in expected.items():
        assert metric in " ".join(t["expr"] for t in titles[title]["targets"]), title
    assert "by (channel, result)" in titles["Pages sent by channel and result"]["targets"][0]["expr"]
    assert all("team, priority" in titles[t]["targets"][0]["expr"] for t in ("MTTA", "MTTR", "Acted-on ratio"))
    for url in _follow(board, "vigil-node"):
        assert "${__url_time_range}" in url and "var-node=${__field.labels.node}" in url


def test_disk_dashboard_covers_smart_nvme_filesystems_infiniband_and_the_risk_ranking():
    board = models()["vigil-disks"]
    exprs = {panel["title"]: " ".join(t["expr"] for t in panel["targets"]) for panel in panels(board) if "targets" in panel}
    growth = exprs["SMART attribute growth"]
    assert "vigil_disk_smart_attribute_raw" in growth and all(a in growth for a in ("5|187|188|197|198",))
    for title, metric in {"NVMe media errors": "vigil_disk_nvme_media_errors_total",
                          "NVMe critical warnings": "vigil_disk_nvme_critical_warning",
                          "Predicted free space in 24 h": "predict_linear(node_filesystem_avail_bytes",
                          "InfiniBand port state": "vigil_infiniband_port_up",
                          "InfiniBand port errors": "vigil_infiniband_port_errors_total",
                          "Riskiest disks and GPUs": "topk(10, vigil_failure_risk)"}.items():
        assert metric in exprs[title], title
    for url in _follow(board, "vigil-node") + _follow(board, "vigil-gpu"):
        assert "${__url_time_range}" in url


def test_aiops_dashboard_shows_baseline_bands_anomalies_risk_and_its_own_health():
    board = models()["vigil-aiops"]
    exprs = {panel["title"]: [t["expr"] for t in panel["targets"]] for panel in panels(board) if "targets" in panel}
    (cluster, metric) = board["templating"]["list"]
    assert metric["name"] == "metric" and "vigil_baseline_expected" in str(metric["query"])
    band = exprs["Series and baseline band"]
    assert [e.split("{")[0] for e in band] == ["vigil_baseline_lower", "vigil_baseline_expected", "vigil_baseline_upper"]
    assert all('metric="$metric"' in e for e in band)
    above, below = exprs["Anomalies: outside the band"]
    assert "> on(node, gpu) group_left vigil_baseline_upper" in above
    assert "< on(node, gpu) group_left vigil_baseline_lower" in below
    assert 'kind="gpu"' in exprs["Riskiest GPUs"][0] and 'kind="disk"' in exprs["Riskiest disks"][0]
    assert "vigil_failure_risk_reason" in exprs["Risk reasons"][0]
    assert "vigil_baseline_last_fit_timestamp_seconds" in exprs["Since the last fit"][0]
    assert "vigil_failure_risk_last_success_timestamp_seconds" in exprs["Since the last risk refresh"][0]
    for url in _follow(board, "vigil-gpu"):
        assert "${__url_time_range}" in url and "var-node=${__field.labels.node}&var-gpu=${__field.labels.gpu}" in url
    for url in _follow(board, "vigil-node"):
        assert "${__url_time_range}" in url and "var-node=${__field.labels.node}" in url


def test_preview_of_an_unreachable_prometheus_is_one_clean_error_and_no_png(tmp_path):
    port = free_port()  # a loopback port nobody listens on
    result = vigil("dashboards", "preview", "--prometheus-url", f"http://127.0.0.1:{port}", "-o", str(tmp_path / "png"))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"cannot reach Prometheus at http://127.0.0.1:{port}" in result.output
    assert not list(tmp_path.glob("png/*.png"))
