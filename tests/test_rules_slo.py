"""SLOs in the rule specs (`slos:`): each expands to the SRE workbook's multiwindow, multi-burn-rate set
(seven recorded error ratios, a fast-burn page and a slow-burn ticket), every mistake is reported at its
file:line, and the shipped promtool cases catch a changed objective."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vigil import rules
from vigil.common import symptoms
from vigil.rules.promtool import check_rules, test_rules

SLO_SPEC = rules.SPECS_DIR / "slo.yaml"
# with the alerts its GPU availability burns are symptoms of (GpuFallenOffBus, GpuNvmlStalled)
SLO_SPECS = [SLO_SPEC, rules.SPECS_DIR / "gpu_lost.yaml"]
SLO_TESTS = sorted(rules.UNIT_TESTS_DIR.glob("slo*.yaml"))
WINDOWS = ["5m", "30m", "1h", "2h", "6h", "1d", "3d"]


def write(tmp_path: Path, text: str, name: str = "slo.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_the_shipped_slos_expand_to_the_workbook_rules():
    group = rules.prometheus_rule_file(rules.load_specs(SLO_SPECS))["groups"][0]
    recorded = [r["record"] for r in group["rules"] if "record" in r]
    # each SLO: its ratios, then when its rules began (the burn alerts wait for their short window)
    assert recorded == [f"slo:notifier_page_delivery_errors:ratio_rate{w}" for w in WINDOWS] + [
        "slo:notifier_page_delivery_evaluated:since_timestamp_seconds",
        "slo:gpu_availability_up:by_value", "slo:gpu_availability_up:sum", "slo:gpu_availability_up:count"] + [
        f"slo:gpu_availability_errors:ratio_rate{w}" for w in WINDOWS] + [
        "slo:gpu_availability_evaluated:since_timestamp_seconds"]
    assert all("record" in r for r in group["rules"][:len(recorded)]), "records come before the alerts"
    alerts = {r["alert"]: r for r in group["rules"] if "alert" in r}
    fast, slow = alerts["GpuAvailabilityErrorBudgetBurnFast"], alerts["GpuAvailabilityErrorBudgetBurnSlow"]
    ratio = "slo:gpu_availability_errors:ratio_rate"
    since = "slo:gpu_availability_evaluated:since_timestamp_seconds"

    def ran(seconds: int) -> str:  # the rules have run for the pair's short window
        return f" and on (slo) (time() - {since} >= {seconds})"

    assert fast["expr"] == (f"({ratio}1h > (14.4 * 0.005) and {ratio}5m > (14.4 * 0.005){ran(300)}) or "
                            f"({ratio}6h > (6 * 0.005) and {ratio}30m > (6 * 0.005){ran(1800)})")
    assert slow["expr"] == (f"({ratio}1d > (3 * 0.005) and {ratio}2h > (3 * 0.005){ran(7200)}) or "
                            f"({ratio}3d > (1 * 0.005) and {ratio}6h > (1 * 0.005){ran(21600)})")
    # the fast burn pages, the slow burn files a ticket (the workbook's split)
    assert fast["labels"] == {"severity": "critical", "notify": "page", "slo": "GpuAvailability", "team": "gpu"}
    assert slow["labels"]["severity"] == "warning" and slow["labels"]["notify"] == "ticket"
    assert alerts["NotifierPageDeliveryErrorBudgetBurnFast"]["labels"]["team"] == "platform"
    assert group["rules"][0]["expr"] == (
        '(sum(rate(vigil_notifier_deliveries_total{result=~"failed|retry"}[5m])) or vector(0)) / '
        '(sum(rate(vigil_notifier_deliveries_total{result=~"sent|failed|retry"}[5m])) > 0)')
    assert group["rules"][0]["labels"] == {"slo": "NotifierPageDelivery"}
    by_name = {r.get("record"): r for r in group["rules"]}
    # the gauge is read once (a count per value and node: a sharded fleet's shards each count their own
    # GPUs); its fleet-wide sum and count are taken from that record
    assert by_name["slo:gpu_availability_up:by_value"]["expr"] == 'count_values by (node) ("value", vigil_gpu_up)'
    assert by_name["slo:gpu_availability_up:sum"]["expr"] == (
        'sum(slo:gpu_availability_up:by_value{value="1"}) or (0 * sum(slo:gpu_availability_up:by_value))')
    assert by_name["slo:gpu_availability_up:count"]["expr"] == "sum(slo:gpu_availability_up:by_value)"
    assert by_name[f"{ratio}3d"]["expr"] == ("1 - sum_over_time(slo:gpu_availability_up:sum[3d]) / "
                                             "(sum_over_time(slo:gpu_availability_up:count[3d]) > 0)")
    assert "GpuFallenOffBus" in fast["annotations"]["description"]  # says what to do
    inhibit = rules.alertmanager_inhibit_rules(rules.load_specs(SLO_SPECS))
    assert {"source_matchers": ['alertname="GpuAvailabilityErrorBudgetBurnFast"', 'slo=~".+"'],
            "target_matchers": ['alertname="GpuAvailabilityErrorBudgetBurnSlow"'], "equal": ["slo"]} in inhibit
    # a GPU lost is the burn's cause: Alertmanager mutes both burns, the notifier joins them to its incident
    assert {"source_matchers": ['alertname="GpuFallenOffBus"', 'team=~".+"'],
            "target_matchers": ['alertname=~"GpuAvailabilityErrorBudgetBurnFast|GpuAvailabilityErrorBudgetBurnSlow"'],
            "equal": ["team"]} in inhibit
    causes = symptoms.decode(fast["annotations"][symptoms.ANNOTATION])
    assert [c.alertname for c in causes.causes] == ["GpuFallenOffBus", "GpuNvmlStalled"]
    assert causes.wait_s == 300  # the longest cause's `for` (GpuNvmlStalled, 5m) capped at 5 minutes


def test_a_latency_slo_counts_requests_slower_than_the_bucket_bound(tmp_path):
    spec = write(tmp_path, """\
        defaults: {labels: {team: platform}, runbook_base: "https://wiki.example/slo"}
        slos:
          PageLatency:
            objective: 99.9
            sli:
              latency: {metric: vigil_notifier_delivery_latency_seconds, selector: {channel: slack}, le: "30.0"}
            what: pages delivered to Slack within 30 s
            description: Look at Slack's status page.
        """)
    ruleset = rules.load_specs([spec])
    first = ruleset.records[0]
    assert first.name == "slo:page_latency_errors:ratio_rate5m"
    assert first.expr == (
        '(sum(rate(vigil_notifier_delivery_latency_seconds_count{channel="slack"}[5m])) - '
        'sum(rate(vigil_notifier_delivery_latency_seconds_bucket{channel="slack", le="30.0"}[5m]))) / '
        '(sum(rate(vigil_notifier_delivery_latency_seconds_count{channel="slack"}[5m])) > 0)')
    assert "(14.4 * 0.001)" in ruleset.alert("PageLatencyErrorBudgetBurnFast").expr
    result = check_rules(ruleset)
    assert result.ok, result.output


def test_every_slo_mistake_is_reported_at_its_line_at_once(tmp_path):
    spec = write(tmp_path, """\
        defaults: {runbook_base: "https://wiki.example/slo"}
        slos:
          Perfect:
            objective: 100
            sli:
              up: {metric: vigil_gpu_up}
              errors: {metric: vigil_notifier_deliveries_total}
            what: w
            description: d
            labels: {team: gpu, slo: mine}
          Typo:
            objective: 99
            sli:
              errors: {metric: vigil_notifier_delivery_total}
              total: {metric: vigil_notifier_deliveries_total, selector: {reslt: sent}}
            what: w
            descripton: d
            labels: {team: platform}
          NoLe:
            objective: "99"
            sli:
              latency: {metric: vigil_notifier_delivery_latency_seconds}
          "bad name":
            objective: 99
        """)
    with pytest.raises(rules.SpecError) as caught:
        rules.load_specs([spec])
    errors = caught.value.errors
    expected = [
        (4, "slo Perfect: 'objective' is a percentage of good events above 0 and below 100"),
        (5, "slo Perfect: sli: needs exactly one of 'errors' (with 'total'), 'latency' or 'up'"),
        (10, "slo Perfect: label 'slo' is set by the generator"),
        (11, "record slo:typo_errors:ratio_rate5m: metric 'vigil_notifier_delivery_total' is exported by no"),
        (11, "record slo:typo_errors:ratio_rate5m: vigil_notifier_deliveries_total{reslt=...}"),
        (11, "slo Typo: missing required key 'description'"),
        (17, "slo Typo: unknown key 'descripton'"),
        (20, "slo NoLe: 'objective' must be a number, got '99'"),
        (19, "slo NoLe: missing required key 'what'"),
        (22, "slo NoLe: sli.latency: missing required key 'le'"),
        (23, "SLO name 'bad name' must start with a letter"),
    ]
    for line, start in expected:
        assert any(e.startswith(f"{spec}:{line}: {start}") for e in errors), (line, start, errors)
    assert not any("ratio_rate30m" in e for e in errors), "one finding per SLO, not one per window"


def test_the_shipped_slo_cases_catch_a_changed_objective(tmp_path):
    """Mutation check: with a looser objective the burn-rate cases of the shipped tests fail."""
    shipped = rules.load_specs(SLO_SPECS)
    result = test_rules(shipped, SLO_TESTS)
    assert result.ok, result.output
    looser = tmp_path / "slo.yaml"
    looser.write_text(SLO_SPEC.read_text(encoding="utf-8").replace("objective: 99 ", "objective: 90 "),
                      encoding="utf-8")
    result = test_rules(rules.load_specs([looser, SLO_SPECS[1]]), SLO_TESTS)
    assert not result.ok
    assert "NotifierPageDeliveryErrorBudgetBurnFast" in result.output
