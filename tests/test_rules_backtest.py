"""The backtest engine without Prometheus: range-query times in, firings, flaps and incident overlaps out,
with `for` and `keep_firing_for` applied as Prometheus's rule manager applies them; and the CLI's
input errors."""

from __future__ import annotations

import math
import random
import shutil

import pytest
from click.testing import CliRunner

from vigil.cli import main as vigil_main
from vigil.cli.rules_backtest import parse_moment
from vigil.common.durations import parse_prometheus_duration
from vigil.rules import RULE_FILE_NAME, dump_yaml, load_specs
from vigil.rules.promtool import test_rules as run_promtool_tests
from vigil.rules.backtest import Firing, Incident, RuleReport, count_flaps, firing_intervals, overlaps, ranked, series_firings
from vigil.common.times import parse_time
from vigil.rules.backtest_run import MAX_POINTS, evaluation_step, incidents_from_api

M = 60.0


def minutes(*values: float) -> list[float]:
    return [v * M for v in values]


def test_without_for_an_alert_fires_at_the_first_true_evaluation_and_resolves_at_the_first_false_one():
    assert firing_intervals(minutes(3, 4, 5), M) == [(3 * M, 6 * M, False)]


def test_for_needs_the_condition_at_consecutive_evaluations_until_it_has_held_that_long():
    assert firing_intervals(minutes(0, 1, 2, 3), M, for_s=2 * M) == [(2 * M, 4 * M, False)]
    assert firing_intervals(minutes(0, 1), M, for_s=2 * M) == []  # dropped while pending
    # a one-step gap restarts the pending time: neither half holds for 2 minutes
    assert firing_intervals(minutes(0, 1, 3, 4), M, for_s=2 * M) == []


def test_a_for_that_is_not_a_whole_number_of_steps_fires_at_the_next_evaluation_after_it():
    assert firing_intervals(minutes(0, 1, 2, 3), M, for_s=90) == [(2 * M, 4 * M, False)]
    assert firing_intervals(minutes(0, 1), M, for_s=90) == []


def test_a_one_step_gap_resolves_the_alert_and_a_new_firing_starts():
    assert firing_intervals(minutes(0, 1, 3), M) == [(0, 2 * M, False), (3 * M, 4 * M, False)]


def test_keep_firing_for_bridges_gaps_shorter_than_it_and_delays_the_resolution():
    # condition fails at 2, keeps firing through 3 (held again at 3): one firing, resolved 2 minutes after 4
    assert firing_intervals(minutes(0, 1, 3, 4), M, keep_firing_for_s=2 * M) == [(0, 7 * M, False)]
    # a gap as long as keep_firing_for resolves it: the alert resolves at 2 + 2 = 4 minutes, before 5
    assert firing_intervals(minutes(0, 1, 5), M, keep_firing_for_s=2 * M) == [(0, 4 * M, False), (5 * M, 8 * M, False)]
    # keep_firing_for applies only to firing alerts, never to a pending one
    assert firing_intervals(minutes(0, 1), M, for_s=5 * M, keep_firing_for_s=10 * M) == []


def test_a_firing_still_going_at_the_end_is_cut_there_and_marked_open():
    assert firing_intervals(minutes(0, 1, 2, 3), M, end=3 * M) == [(0, 3 * M, True)]
    assert firing_intervals(minutes(0, 1, 2), M, end=3 * M) == [(0, 3 * M, False)]  # resolved at the last evaluation


def test_series_firings_keep_what_overlaps_the_range_clipped_to_its_start():
    found = series_firings({"gpu": "1"}, minutes(0, 1, 4, 5, 6), M, 0, 0, start=5 * M, end=math.inf)
    assert found == [Firing((("gpu", "1"),), 5 * M, 7 * M)]


def test_a_flap_is_a_refiring_of_the_same_series_within_the_window():
    a, b = (("gpu", "0"),), (("gpu", "1"),)
    firings = [Firing(a, 0, 60), Firing(a, 120, 180), Firing(a, 3000, 3060), Firing(b, 200, 300)]
    assert count_flaps(firings, flap_window=15 * M) == 1  # a at 120 only; b is another series
    assert count_flaps(firings, flap_window=0) == 0
    assert count_flaps(firings, flap_window=3600) == 2


def test_an_incident_overlaps_a_firing_of_its_alert_with_agreeing_labels_and_times():
    firing = Firing((("alertname", "GpuHot"), ("gpu", "1"), ("node", "n1")), 100, 200)
    assert overlaps("GpuHot", firing, Incident(150, 400, {"alertname": "GpuHot", "node": "n1"}))
    assert overlaps("GpuHot", firing, Incident(50, None, {"alertname": "GpuHot"}))  # still open
    assert not overlaps("GpuHot", firing, Incident(200, 400, {"alertname": "GpuHot"}))  # starts as it resolves
    assert not overlaps("GpuHot", firing, Incident(150, 400, {"alertname": "GpuHot", "node": "n2"}))
    assert not overlaps("GpuHot", firing, Incident(150, 400, {"alertname": "GpuCold", "node": "n1"}))
    # incidents grouped without alertname: the alert's name in the title
    assert overlaps("GpuHot", firing, Incident(150, 400, {"node": "n1"}, "GpuHot node=n1 gpu=1 — hot"))
    assert not overlaps("GpuHot", firing, Incident(150, 400, {"node": "n1"}, "GpuHotter node=n1 — hot"))


def test_rules_are_ranked_by_firings_then_flaps_then_firing_time():
    def report(name: str, spans: list[tuple[float, float]], flaps: int = 0) -> RuleReport:
        return RuleReport(name, "g", "warning", "f.yaml", 1, M, 0, 0, [Firing((), s, e) for s, e in spans], flaps)
    reports = [report("Quiet", []), report("Long", [(0, 1000)]), report("Short", [(0, 10)]),
               report("Noisy", [(0, 10), (20, 30)], flaps=1), report("Steady", [(0, 10), (50, 60)])]
    assert [r.alert for r in ranked(reports)] == ["Noisy", "Steady", "Long", "Short", "Quiet"]


def test_the_step_is_the_interval_unless_the_range_needs_more_than_max_points():
    assert evaluation_step(15, 0, 86_400, 300) == (15, None)
    step, coarsened_from = evaluation_step(15, 0, 7 * 86_400, 300)
    assert coarsened_from == 15 and step % 15 == 0 and step > 15
    assert (7 * 86_400 + 300) / step + 2 <= MAX_POINTS
    assert (7 * 86_400 + 300) / (step - 15) + 2 > MAX_POINTS  # the least multiple that fits
    for span in range(MAX_POINTS * 3 - 10, MAX_POINTS * 3 + 10):  # near the boundaries: always fits, least multiple
        step, _ = evaluation_step(1, 0, span, 0)
        assert span / step + 2 <= MAX_POINTS < span / (step - 1) + 2


def test_incidents_from_the_notifier_api_are_kept_when_open_some_time_in_the_range():
    rows = [
        {"opened_at": "2026-11-22T10:00:00.000Z", "resolved_at": "2026-11-22T11:00:00.000Z", "labels": {"alertname": "A"}, "title": "A"},
        {"opened_at": "2026-11-22T13:00:00.000Z", "resolved_at": None, "labels": {"alertname": "B"}, "title": "B"},
        {"opened_at": "2026-11-21T10:00:00.000Z", "resolved_at": "2026-11-21T11:00:00.000Z", "labels": {}, "title": "old"},
    ]
    start, end = parse_time("2026-11-22T00:00:00Z"), parse_time("2026-11-23T00:00:00Z")
    found = incidents_from_api(rows, start, end)
    assert [(i.labels, i.end is None) for i in found] == [({"alertname": "A"}, False), ({"alertname": "B"}, True)]
    assert found[0].end - found[0].start == 3600


@pytest.mark.parametrize("text, expected", [
    ("now", 1_000_000.0), ("-1d", 1_000_000.0 - 86_400), ("now-6h", 1_000_000.0 - 21_600), ("-90", 1_000_000.0 - 90),
    ("1700000000", 1_700_000_000.0), ("2026-11-22T00:00:00Z", parse_time("2026-11-22T00:00:00+00:00")),
    ("2026-11-22T08:00:00+08:00", parse_time("2026-11-22T00:00:00Z")), ("2026-11-22T00:00:00", parse_time("2026-11-22T00:00:00Z")),
])
def test_times_accept_now_relative_unix_and_rfc3339(text, expected):
    assert parse_moment(text, now=1_000_000.0) == expected


@pytest.mark.parametrize("args, message", [
    (["--from", "yesterday"], "'yesterday' is not a time"),
    (["--from", "-1x"], "'-1x' is not a time"),
    (["--from", "1e400"], "'1e400' is not a time"),  # inf: was an OverflowError traceback
    (["--to", "1e18"], "'1e18' is not a time"),  # past time_t: was an OSError traceback
    (["--from", "nan"], "'nan' is not a time"),
    (["--from", "-99999999999d"], "is not a time"),  # before 1970
    (["--from", "now", "--to", "-1h"], "--to must be after --from"),
    (["--flap-window", "soon"], "'soon' is not a duration"),
    (["--notifier", "http://127.0.0.1:9"], "--notifier and --token-file go together"),
])
def test_bad_input_is_a_clear_error_without_a_traceback(args, message):
    result = CliRunner().invoke(vigil_main, ["rules", "backtest", "--prometheus", "http://127.0.0.1:9", *args])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_a_bad_spec_is_reported_with_file_and_line_before_any_query(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text("group: g\nalerts:\n  A:\n    expr: up == 0\n    severity: page\n")
    result = CliRunner().invoke(vigil_main, ["rules", "backtest", str(spec), "--prometheus", "http://127.0.0.1:9"])
    assert result.exit_code == 1 and f"{spec}:3" in result.output and "Traceback" not in result.output


def test_an_unreachable_prometheus_is_one_clear_line(tmp_path):
    result = CliRunner().invoke(vigil_main, ["rules", "backtest", "--prometheus", "http://127.0.0.1:9", "--from", "-1h"])
    assert result.exit_code == 1 and "cannot reach Prometheus at http://127.0.0.1:9" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_without_prometheus_and_without_a_stack_it_says_what_to_do(tmp_path):
    result = CliRunner().invoke(vigil_main, ["rules", "backtest", "--run-dir", str(tmp_path / "none")])
    assert result.exit_code == 1 and "give --prometheus URL" in result.output


ORACLE_SPEC = """\
group: backtest-oracle
defaults:
  labels: {{team: gpu}}
alerts:
{alerts}
"""
ORACLE_TIMINGS = {"BtNow": {}, "BtFor": {"for": "3m"}, "BtForOdd": {"for": "2m30s"},
                  "BtKeep": {"for": "1m", "keep_firing_for": "2m"}, "BtKeepOdd": {"keep_firing_for": "1m30s"}}
HOT_SERIES = {"node": "n1", "gpu": "0", "uuid": "GPU-1", "sensor": "gpu"}


def hot_minutes(count: int = 90, seed: int = 7) -> list[bool]:
    """Runs of hot and cold minutes of mixed lengths (1 to 6), alternating, from a fixed seed."""
    rng = random.Random(seed)
    pattern: list[bool] = []
    hot = True
    while len(pattern) < count:
        pattern += [hot] * rng.choice((1, 1, 2, 3, 4, 6))
        hot = not hot
    return pattern[:count]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_the_engine_fires_and_resolves_when_prometheus_own_rule_evaluation_does(tmp_path):
    """The oracle: `promtool test rules` (Prometheus 2.42's rule manager) must find exactly the alerts the
    engine says are firing, minute by minute, for every `for` / `keep_firing_for` combination."""
    alerts = "\n".join(
        f"  {name}:\n    kind: threshold\n    metric: vigil_gpu_temperature_celsius\n    selector: {{sensor: gpu}}\n"
        f"    op: \">\"\n    value: 90\n" + "".join(f"    {k}: {v}\n" for k, v in timing.items())
        + "    severity: warning\n    summary: hot\n    description: hot GPU\n    runbook: https://runbooks.example/bt\n"
        for name, timing in ORACLE_TIMINGS.items())
    spec = tmp_path / "oracle.yaml"
    spec.write_text(ORACLE_SPEC.format(alerts=alerts))
    ruleset = load_specs([spec])
    pattern = hot_minutes()
    hot_times = [i * M for i, hot in enumerate(pattern) if hot]
    cases, firing_minutes = [], 0
    for alert in ruleset.alerts:
        for_s = parse_prometheus_duration(alert.for_) if alert.for_ else 0.0
        keep_s = parse_prometheus_duration(alert.keep_firing_for) if alert.keep_firing_for else 0.0
        intervals = firing_intervals(hot_times, M, for_s, keep_s)
        assert intervals, f"{alert.name} never fires on the pattern: the oracle would test nothing"
        for minute in range(len(pattern)):
            firing = any(s <= minute * M < e for s, e, _ in intervals)
            firing_minutes += firing
            expected = [{"exp_labels": {**HOT_SERIES, "severity": "warning", "notify": "page", "team": "gpu"},
                         "exp_annotations": {"summary": "hot", "description": "hot GPU",
                                             "runbook_url": "https://runbooks.example/bt"}}] if firing else []
            cases.append({"eval_time": f"{minute}m", "alertname": alert.name, "exp_alerts": expected})
    series = "vigil_gpu_temperature_celsius{" + ", ".join(f'{k}="{v}"' for k, v in HOT_SERIES.items()) + "}"
    test_file = tmp_path / "oracle_test.yaml"
    test_file.write_text(dump_yaml({
        "rule_files": [RULE_FILE_NAME], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": [{"series": series, "values": " ".join("95" if h else "50" for h in pattern)}],
                   "alert_rule_test": cases}],
    }))
    result = run_promtool_tests(ruleset, [test_file])
    assert result.ok, result.output[-3000:]
    assert 0 < firing_minutes < len(cases)  # both states are checked
