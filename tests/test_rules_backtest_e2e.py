"""`vigil rules backtest` against a real Prometheus holding a simulated day with injected faults.

The day is what the simulated fleet exports: the real GPU collector reads a `SimulatedNvml` on a fake
clock every 2 minutes, with faults injected and cleared (a GPU reset) at known times, and `node-down`
as its scrape target answering `up 0`. The samples become TSDB blocks with `promtool tsdb
create-blocks-from openmetrics`; Prometheus 2.42 serves them, its global evaluation_interval 3m and
`--query.max-samples` so low that a day of one rule needs several queries. The
shipped GPU spec plus a deliberately noisy rule are backtested over that day through the CLI.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests
from click.testing import CliRunner

from sim_clock import SIM_NOW, FakeClock
from exporters_nvml_support import answers, wait_until
from stack_support import VIGIL
from test_notifier_support import AUTH, TOKEN, NotifierServer, alert, inbox, make_settings, payload, wait_for
from vigil.aiops.history.openmetrics import write_openmetrics
from vigil.cli import main as vigil_main
from vigil.exporters.nvml_collector import NvmlCollector
from vigil.exporters.sim.faults import Fault
from vigil.exporters.sim.nvml import SimulatedNvml
from vigil.common.ports import free_port
from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable
from vigil.rules import Alert, Group, load_specs
from vigil.common.times import parse_time, rfc3339 as stamp
from vigil.rules.backtest_run import Settings, backtest, query_times

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(shutil.which("prometheus") is None or shutil.which("promtool") is None,
                                                 reason="prometheus and promtool are not installed")]

REPO = Path(__file__).parent.parent
# the GPU health alerts the faults below drill: gpu.yaml (node down, ECC) and gpu_temperature.yaml (overheat),
# with the groups whose alerts gpu.yaml's and gpu_errors.yaml's inhibitions name (gpu_lost.yaml, gpu_errors.yaml,
# jobs.yaml: an application-XID burst under a job is its owner's JobGpuXid ticket)
GPU_SPECS = [REPO / "rules" / "specs" / name
             for name in ("gpu.yaml", "gpu_lost.yaml", "gpu_errors.yaml", "gpu_temperature.yaml", "jobs.yaml",
                          "gpu_records.yaml", "gpu_records_node.yaml")]  # (the records jobs.yaml reads)
STEP = 180.0
NODES, GPUS = ("node-1", "node-2"), 2
HOUR = 3600.0
# Like a whole fleet over a long range on a server with the default limit (50 million samples): a day of
# the noisy rule's 4 series does not fit in one query here, so every backtest goes through query halving.
MAX_SAMPLES = 2000  # one evaluation of a GPU rule stays under it (GpuXidRecurring, 7d subquery, peaked at 1,009 when gpu.yaml held it); a day of the noisy rule at 2,775
# (fault, node, gpu, hours into the day it is injected, hours into the day it is cleared)
FAULTS = (("overheat", "node-1", 1, 6.0, 6.5), ("ecc-dbe", "node-2", 0, 14.0, 15.0), ("node-down", "node-2", None, 20.0, 20.5))
NOISY_SPEC = """\
# Deliberately noisy: a threshold inside the simulated load's daily swing and noise, with no 'for'. Every
# simulated GPU's daily peak passes it on a weekend too (the load dips by 0.15 then: at 0.85 a Sunday
# crossed it on one GPU only, 10 times).
group: backtest-noisy
defaults:
  labels: {team: gpu}
alerts:
  GpuBusyNoisy:
    kind: threshold
    metric: vigil_gpu_utilization_ratio
    op: ">"
    value: 0.65
    runbook: https://runbooks.example/gpu-busy
    severity: info
    summary: "GPU {{ $labels.gpu }} on {{ $labels.node }} is busy"
    description: "A rule that pages on ordinary load, to show what noise looks like."
"""


def simulated_day(start: float, exprs: str) -> tuple[list[tuple], dict[str, str]]:
    """(series, types) of one day from `start`: every sample of the metrics named in `exprs`, as
    Prometheus would have scraped them every STEP seconds (with the target's job and instance labels)."""
    clock = FakeClock(start)
    sims = {node: SimulatedNvml(node, GPUS, clock=clock) for node in NODES}
    collectors = {node: NvmlCollector(sim, node, watch_xids=False, expected_gpus=GPUS, clock=clock) for node, sim in sims.items()}
    series: dict[tuple, tuple[list, list]] = {}
    types: dict[str, str] = {}

    def put(name: str, labels: dict, value: float) -> None:
        timestamps, values = series.setdefault((name, tuple(sorted(labels.items()))), ([], []))
        timestamps.append(clock.t)
        values.append(value)

    for step in range(int(86_400 / STEP) + 1):
        clock.t = start + step * STEP
        hours = step * STEP / HOUR
        for fault, node, gpu, on, off in FAULTS:
            if gpu is not None and hours == on:
                sims[node].inject(Fault(fault, node, gpu, clock.t))
            elif gpu is not None and hours == off:
                sims[node].reset(gpu)
        for node, collector in collectors.items():
            target = {"job": "vigil-gpu", "instance": f"{node}:9400"}
            down = any(f == "node-down" and n == node and on <= hours < off for f, n, _, on, off in FAULTS)
            put("up", {**target, "node": node}, 0.0 if down else 1.0)
            if down:
                continue
            collector.refresh()
            for family in collector.collect():
                for sample in family.samples:
                    if sample.name in exprs and not sample.name.endswith("_created"):
                        types[sample.name] = "counter" if family.type == "counter" else "gauge"
                        put(sample.name, {**sample.labels, **target}, sample.value)
    return [(name, dict(labels), ts, vs) for (name, labels), (ts, vs) in series.items()], types


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    """(prometheus url, start, end, noisy spec path) for a simulated day with FAULTS, ending at the
    simulated now (tests/sim_clock.py): whatever its weekday, hour or year, the asserts below hold."""
    work = tmp_path_factory.mktemp("backtest")
    noisy = work / "noisy.yaml"
    noisy.write_text(NOISY_SPEC)
    ruleset = load_specs([*GPU_SPECS, noisy])
    end = math.floor(SIM_NOW / STEP) * STEP - STEP
    start = end - 86_400
    series, types = simulated_day(start, "\n".join([a.expr for a in ruleset.alerts] + [r.expr for r in ruleset.records]))
    write_openmetrics(work / "day.om", series, types=types)
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
                    str(work / "day.om"), str(work / "tsdb")], check=True, capture_output=True)
    (work / "prometheus.yml").write_text(json.dumps({"global": {"evaluation_interval": "3m"}}))
    port = free_port()
    prom = subprocess.Popen(["prometheus", f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}", f"--query.max-samples={MAX_SAMPLES}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: answers(f"{url}/-/ready") or prom.poll() is not None, timeout=60, step=0.2)
        assert prom.poll() is None, "prometheus exited"
        yield url, start, end, noisy
    finally:
        prom.terminate()
        prom.wait(timeout=30)


def test_a_noisy_rule_ranks_first_and_each_fault_fires_its_rules_once(day):
    url, start, end, noisy = day
    started = time.monotonic()
    done = subprocess.run([VIGIL, "rules", "backtest", *map(str, GPU_SPECS), str(noisy), "--prometheus", url,
                           "--from", stamp(start), "--to", stamp(end), "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rules = {r["alert"]: r for r in report["rules"]}
    ranking = [r["alert"] for r in report["rules"]]
    print(f"backtest of {len(ranking)} alerts took {time.monotonic() - started:.1f}s; firings:",
          {r["alert"]: r["firings"] for r in report["rules"] if r["firings"]})

    assert ranking[0] == "GpuBusyNoisy"
    noisy_rule = rules["GpuBusyNoisy"]
    assert noisy_rule["firings"] > 10 and noisy_rule["flaps"] > 0 and noisy_rule["step_seconds"] == STEP
    assert report["incidents_compared"] is None and noisy_rule["incident_share"] is None

    drilled = {alert.drill: alert.name for alert in load_specs(GPU_SPECS).alerts if alert.drill}
    for fault, node, gpu, on, off in FAULTS:
        rule = rules[drilled[fault]]
        assert rule["firings"] == 1, (fault, rule)
        (firing,) = rule["intervals"]
        assert firing["labels"]["node"] == node and firing["labels"].get("gpu") == (None if gpu is None else str(gpu))
        fired, resolved = parse_time(firing["start"]), parse_time(firing["end"])
        # fired once its 'for' had passed after the fault, resolved after the fault was cleared
        assert start + on * HOUR + rule["for_seconds"] <= fired <= start + on * HOUR + rule["for_seconds"] + 3 * STEP
        assert start + off * HOUR <= resolved <= start + off * HOUR + rule["keep_firing_for_seconds"] + 6 * STEP
    # no other rule of the shipped spec fires more than once on this day: the real faults are the only causes
    assert all(r["firings"] <= 1 for name, r in rules.items() if name != "GpuBusyNoisy"), ranking


def backtest_in_process(*args: str):
    """`vigil rules backtest ARGS` in this process (the acceptance test above runs the installed command)."""
    return CliRunner().invoke(vigil_main, ["rules", "backtest", *args])


def test_the_table_lists_the_same_ranking(day):
    url, start, end, noisy = day
    done = backtest_in_process(*map(str, GPU_SPECS), str(noisy), "--prometheus", url, "--from", stamp(start), "--to", stamp(end))
    assert done.exit_code == 0, done.stderr
    print(done.stdout)
    lines = done.stdout.splitlines()
    assert lines[1].split()[:3] == ["ALERT", "SEVERITY", "FIRINGS"]
    assert lines[2].split()[0] == "GpuBusyNoisy"
    assert "incidents: not compared" in done.stdout


def test_firings_that_overlap_a_notifier_incident_of_their_alert_are_counted(day, tmp_path):
    """The notifier (real app, SQLite) knows one incident: the overheating GPU paged at the fault's time.
    GpuOverheating's firing overlaps it; GpuTemperatureHigh's firing overlaps it in time and labels too,
    but it is another alert's incident; the noisy rule's firings overlap none."""
    url, start, end, noisy = day
    fault, node, gpu, on, _ = FAULTS[0]
    paged = alert("fp-overheat", starts=stamp(start + on * HOUR + 60), alertname="GpuOverheating", node=node, gpu=str(gpu))
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with NotifierServer(make_settings(tmp_path, port=free_port())) as notifier:
        stored = requests.post(f"{notifier.url}/api/v1/alerts/alertmanager", headers=AUTH, timeout=10,
                               json=payload(paged, group_key='{}:{alertname="GpuOverheating"}'))
        assert stored.status_code == 200, stored.text
        incident = stored.json()["incident_id"]
        wait_for(lambda: inbox(notifier))  # the page went out: a paged incident
        marked = requests.post(f"{notifier.url}/api/v1/incidents/{incident}/mark", headers=AUTH, timeout=10,
                               json={"by": "alice", "verdict": "noisy"})
        assert marked.status_code == 200, marked.text
        args = (*map(str, GPU_SPECS), str(noisy), "--prometheus", url, "--from", stamp(start), "--to", stamp(end),
                "--notifier", notifier.url, "--token-file", str(token_file))
        done = backtest_in_process(*args, "--json")
        table = backtest_in_process(*args)
    assert done.exit_code == 0, done.stderr
    # the noise score beside the firing count: the one paged incident was marked noisy
    overheating = next(line.split() for line in table.stdout.splitlines() if line.startswith("GpuOverheating "))
    assert overheating[-2:] == ["1/1", "(100%)"]
    assert "NOISE" in table.stdout.splitlines()[1]
    report = json.loads(done.stdout)
    rules = {r["alert"]: r for r in report["rules"]}
    assert report["incidents_compared"] == 1
    assert (rules["GpuOverheating"]["incident_matches"], rules["GpuOverheating"]["incident_share"]) == (1, 1.0)
    assert (rules["GpuTemperatureHigh"]["incident_matches"], rules["GpuTemperatureHigh"]["incident_share"]) == (0, 0.0)
    assert rules["GpuBusyNoisy"]["incident_matches"] == 0 and rules["GpuBusyNoisy"]["firings"] > 10
    assert rules["GpuMissing"]["incident_share"] is None  # never fired
    assert rules["GpuOverheating"]["noise"] == dict(paged_incidents=1, pages=1, acknowledged=0, marked_noisy=1,
                                                    auto_resolved_before_ack=0, noise_score=1.0)
    assert rules["GpuTemperatureHigh"]["noise"] is None  # it paged nobody in the range


def test_a_wrong_notifier_token_is_one_clear_line(day, tmp_path):
    url, start, end, noisy = day
    token_file = tmp_path / "token"
    token_file.write_text("not-the-token\n")
    with NotifierServer(make_settings(tmp_path, port=free_port())) as notifier:
        done = backtest_in_process(str(noisy), "--prometheus", url, "--from", stamp(start), "--to", stamp(end),
                                   "--notifier", notifier.url, "--token-file", str(token_file))
    assert done.exit_code == 1 and "cannot read the incidents of the notifier" in done.stderr
    assert "Traceback" not in done.stderr and (done.exception is None or isinstance(done.exception, SystemExit))


def test_a_range_too_long_for_the_interval_is_evaluated_coarser_and_says_so(day):
    """A day at a 1 s interval is 86,401 points per series, beyond Prometheus's 11,000: the step becomes
    the least multiple of 1 s that fits, and both the table and the JSON say so."""
    url, start, end, noisy = day
    common = (str(noisy), "--prometheus", url, "--from", stamp(start), "--to", stamp(end), "--interval", "1s")
    table = backtest_in_process(*common)
    assert table.exit_code == 0, table.stderr
    assert "note: evaluated every 8s instead of every 1s" in table.stdout and "GpuBusyNoisy" in table.stdout.splitlines()[-1]
    (rule,) = json.loads(backtest_in_process(*common, "--json").stdout)["rules"]
    assert (rule["step_seconds"], rule["coarsened_from_seconds"]) == (8, 1) and rule["firings"] > 10


def test_max_for_caps_every_for_like_the_demo_stack_rules(day):
    url, start, end, noisy = day
    done = backtest_in_process(*map(str, GPU_SPECS), "--prometheus", url, "--from", stamp(start), "--to", stamp(end),
                               "--max-for", "1s", "--json")
    assert done.exit_code == 0, done.stderr
    rules = {r["alert"]: r for r in json.loads(done.stdout)["rules"]}
    on = FAULTS[0][3]  # the overheat: above 85 °C from then on
    hot = rules["GpuTemperatureHigh"]  # for: 10m, four 3-minute steps; capped, the next evaluation fires it
    assert hot["for_seconds"] == 1 and hot["firings"] == 1
    assert parse_time(hot["intervals"][0]["start"]) == start + on * HOUR + STEP


def test_an_alert_on_a_recording_rule_never_deployed_is_backtested_through_its_expression(day):
    """The recorded series `node_gpu:temperature:max` has no history at all (no Prometheus ever ran the
    recording rule): inlined, the alert on it fires exactly as the same alert written without it."""
    url, start, end, _ = day
    recorded = SimpleNamespace(name="node_gpu:temperature:max", labels=(),
                               expr='max by (node, gpu) (vigil_gpu_temperature_celsius{sensor="gpu"})')
    direct = Alert("HotDirect", f"{recorded.expr} > 85", "warning", "hot", "hot", "x", for_="10m")
    via_record = replace(direct, name="HotRecorded", expr=f"{recorded.name} > 85")
    ruleset = SimpleNamespace(groups=(Group("g", (direct, via_record)),), records=(recorded,))
    client = PrometheusClient(url)
    assert client.query_range(recorded.name, start, end, STEP) == []
    result = backtest(client, ruleset, start, end, Settings(STEP))
    reports = {r.alert: r for r in result.reports}
    assert len(reports["HotDirect"].firings) == 1 and reports["HotRecorded"].from_history == ()
    assert [(f.start, f.end) for f in reports["HotRecorded"].firings] == [(f.start, f.end) for f in reports["HotDirect"].firings]


def test_a_range_over_the_servers_sample_limit_is_queried_in_parts(day):
    url, start, end, noisy = day
    expr = load_specs([noisy]).alerts[0].expr
    client = PrometheusClient(url)
    with pytest.raises(PrometheusUnavailable, match="too many samples"):
        client.query_range(expr, start, end, STEP)
    parts = query_times(client, expr, start, end, STEP)
    assert len(parts) == 4  # one per GPU
    assert all(times == sorted(set(times)) for times in parts.values())
    # the same evaluations as small queries one hour at a time, which the server answers whole
    hourly: dict[tuple, list[float]] = {}
    for hour in range(24):
        first = start + hour * HOUR
        for series in client.query_range(expr, first, min(end, first + HOUR - STEP), STEP):
            hourly.setdefault(tuple(sorted(series.labels.items())), []).extend(t for t, _ in series.points)
    last = client.query_range(expr, end, end, STEP)
    for series in last:
        hourly.setdefault(tuple(sorted(series.labels.items())), []).extend(t for t, _ in series.points)
    assert parts == hourly
