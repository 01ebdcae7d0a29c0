"""What `GpuXidRecurring` costs one Prometheus: a week of hardware-XID series, evaluated as the rule does.

    .venv/bin/python bench/rules/xid_recurring.py [--series 400] [--days 7] [--rounds 5] [--record]

`--series` hardware-XID counters (8 GPUs a node, two XIDs each) hold a week of samples at one a minute:
each counter is created by its first XID, and the node reboots twice (the exporter's counts start again:
its series are absent for 10 minutes and come back at 1 with the XIDs' next events), so every GPU has at
least 3 occasions and the alert fires for each GPU. (10 minutes, not a short reboot's 2: promtool's blocks carry no
staleness markers, so a gap shorter than the 5-minute lookback would not show as one.) The XID's own last time (`vigil_gpu_xid_last_seen_timestamp_seconds`)
and the GPU's (`vigil_gpu_last_xid_timestamp_seconds`) are written beside them. promtool builds the
blocks; the Debian Prometheus serves them (queries only, `vigil.stack.tsdb_readback.prometheus_on`).

The rule, from `vigil rules generate`, is a record (`gpu:vigil_gpu_hardware_xid:occasion`, 1 for a GPU while
a hardware XID lies within 10 minutes, evaluated every minute) and an alert counting it over the week.
`promtool tsdb create-blocks-from rules` evaluates the record over the whole week against that Prometheus
(as the running rule would have), then the Prometheus is started again on both. Sent `--rounds` times
each as an instant query at the end of the week with `stats=all`: the record's expression (what each
minute's evaluation costs), the alert (what its evaluation costs), and the alert as first written (the
record's expression inlined in the week's subquery: what it cost before). Printed per query are the
median `innerEvalTime`, the samples held at once (`peakSamples`, what `--query.max-samples`, 50 million
by default, limits) and the series it returns.
Section `rules-xid-recurring` of docs/benchmarks.md with --record only.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import requests
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402
from vigil.aiops.history.openmetrics import write_openmetrics  # noqa: E402
from vigil.stack.tsdb_readback import prometheus_on  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
SECTION = "rules-xid-recurring"
HARDWARE_XIDS = ("48", "62", "64", "74", "79", "95", "119", "120")
PER_XID = "and on (node, gpu, xid) (time() - vigil_gpu_xid_last_seen_timestamp_seconds"
DEFAULT_MAX_SAMPLES = 50_000_000
XIDS_PER_GPU = 2  # two hardware XIDs a GPU


def rule_expressions() -> tuple[str, str, str]:
    """GpuXidRecurring's alert expression, the record it reads and the record's expression, as `vigil rules
    generate` writes them."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([str(Path(sys.executable).with_name("vigil")), "rules", "generate", "-o", out],
                       check=True, capture_output=True, timeout=120)
        groups = yaml.safe_load((Path(out) / "vigil-rules.yml").read_text())["groups"]
    [group] = [g for g in groups if any(r.get("alert") == "GpuXidRecurring" for r in g["rules"])]
    [alert] = [r["expr"] for r in group["rules"] if r.get("alert") == "GpuXidRecurring"]
    [(record, record_expr)] = [(r["record"], r["expr"]) for r in group["rules"] if "record" in r]
    assert f"({record})" in alert and PER_XID in record_expr, "the rule's form changed: update this bench"
    return alert, record, record_expr


def backfill_xids(rows: list, work: Path) -> int:
    """`rows` (XID counters and other series, as `write_openmetrics` takes them) written as blocks into
    `work/data` by promtool; the samples written. A promtool failure stops the bench with its message."""
    source = work / "history.om"
    samples = write_openmetrics(source, rows, types={"vigil_gpu_xid_errors_total": "counter"})
    done = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
                           str(source), str(work / "data")], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"promtool tsdb create-blocks-from openmetrics failed: {done.stderr.strip()[-2000:]}")
    source.unlink()
    return samples


def backfill_record(url: str, record: str, expr: str, start: float, end: float, work: Path) -> float:
    """The record evaluated every minute over [start, end] by promtool against `url`, written as blocks
    into `work/data`; the seconds it took."""
    rules = work / "record.yml"
    rules.write_text(yaml.safe_dump({"groups": [{"name": "occasions", "interval": "1m",
                                                 "rules": [{"record": record, "expr": expr}]}]}))
    began = time.perf_counter()
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "rules", f"--start={int(start)}", f"--end={int(end)}",
                    f"--url={url}", "--eval-interval=1m", f"--output-dir={work / 'record'}", str(rules)],
                   check=True, capture_output=True, timeout=3600)
    taken = time.perf_counter() - began
    for block in (work / "record").iterdir():
        if block.is_dir():
            block.rename(work / "data" / block.name)
    return taken


def history(series: int, days: int, end: float) -> list:
    """(name, labels, timestamps, values): per GPU, its XIDS_PER_GPU counters with their own last times,
    then the GPU's last time (the newest of them)."""
    t = end - 60.0 * np.arange(days * 1440)[::-1]
    rows = []
    for g in range(series // XIDS_PER_GPU):
        node, gpu = g // 8 + 1, str(g % 8)
        base = {"job": "vigil-gpu", "instance": f"node-{node}:9835", "node": f"node-{node}", "gpu": gpu,
                "uuid": f"GPU-{g:05d}"}
        # the node reboots a random minute of day 3 and of day 5, each time for 10 minutes: every counter of
        # its exporter vanishes, and comes back at 1 as soon as it is up again (the XID recurs at once)
        node_rng = np.random.default_rng(10_000 + node)
        reboots = [t[0] + 86400.0 * day + 60.0 * node_rng.integers(0, 1440) for day in (2, 4)]
        gpu_seen = np.full(t.size, np.nan)
        for k in range(XIDS_PER_GPU):
            first = t[0] + 60.0 * np.random.default_rng(g * XIDS_PER_GPU + k).integers(0, 1440)  # on day 1
            present = t >= first
            seen = np.where(present, first, np.nan)
            for at in reboots:
                present &= ~((t >= at) & (t < at + 600))
                seen = np.where(t >= at + 600, at + 600, seen)
            seen = np.where(present, seen, np.nan)
            gpu_seen = np.fmax(gpu_seen, seen)
            xid = {"xid": HARDWARE_XIDS[(g + k) % len(HARDWARE_XIDS)], "class": "critical"}
            rows += [("vigil_gpu_xid_errors_total", {**base, **xid}, t, np.where(present, 1.0, np.nan)),
                     ("vigil_gpu_xid_last_seen_timestamp_seconds", {**base, **xid}, t, seen)]
        rows.append(("vigil_gpu_last_xid_timestamp_seconds", base, t, gpu_seen))
    return rows


def measure(url: str, expr: str, at: float, rounds: int) -> dict:
    times, peaks, alerts = [], set(), set()
    for _ in range(rounds):
        reply = requests.get(f"{url}/api/v1/query", params={"query": expr, "time": at, "stats": "all"},
                             timeout=600).json()
        if reply.get("status") != "success":
            raise SystemExit(f"Prometheus refused the query: {reply.get('error')}")
        times.append(reply["data"]["stats"]["timings"]["innerEvalTime"])
        peaks.add(reply["data"]["stats"]["samples"]["peakSamples"])
        alerts.add(len(reply["data"]["result"]))
    return {"seconds": statistics.median(times), "peak": max(peaks), "alerts": max(alerts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=400, help="hardware-XID series (8 a node)")
    parser.add_argument("--days", type=int, default=7, help="days of history (the rule looks back 7)")
    parser.add_argument("--rounds", type=int, default=5, help="queries per form")
    add_record_option(parser)
    args = parser.parse_args()
    alert, record, record_expr = rule_expressions()
    before = alert.replace(f"({record})", f"({record_expr})")  # the alert as first written: the XID series inline
    end = (time.time() // 600) * 600 - 3600
    with tempfile.TemporaryDirectory(prefix="vigil-bench-xid-") as work:
        work = Path(work)
        built = time.perf_counter()
        backfill_xids(history(args.series, args.days, end), work)
        print(f"{args.series} series x {args.days} days at 1/min built in {time.perf_counter() - built:.0f} s")
        with prometheus_on(work / "data", work) as prometheus:
            took = backfill_record(prometheus.url, record, record_expr, end - args.days * 86400 - 600, end, work)
        print(f"the record over {args.days} days backfilled by promtool in {took:.0f} s")
        with prometheus_on(work / "data", work) as prometheus:
            results = {"record, each minute (shipped)": measure(prometheus.url, record_expr, end, args.rounds),
                       "alert over the record (shipped)": measure(prometheus.url, alert, end, args.rounds),
                       "alert as first written (before)": measure(prometheus.url, before, end, args.rounds)}
    gpus = args.series // XIDS_PER_GPU
    if any(r["alerts"] != gpus for name, r in results.items() if name.startswith("alert")):
        raise SystemExit(f"expected {gpus} alerts (one a GPU) from each form, got {[r['alerts'] for r in results.values()]}")
    rows = [f"| {name} | {r['seconds']:.3f} | {r['peak']:,} | {r['peak'] / args.series:,.0f} | "
            f"{DEFAULT_MAX_SAMPLES * args.series // max(1, r['peak']):,} | {r['alerts']} |" for name, r in results.items()]
    every_minute, shipped, first = results.values()
    body = "\n".join([
        "## Rules: what `GpuXidRecurring` costs one Prometheus (`python bench/rules/xid_recurring.py`)",
        "",
        f"Machine: {machine_summary()}. Date: {utc_now()}. {args.series} hardware-XID series, {args.days} days at "
        f"one sample a minute, two XIDs a GPU, each series with 3 appearances (first event, two node reboots); "
        f"the occasions record backfilled over the week by `promtool tsdb create-blocks-from rules` "
        f"({took:.0f} s); median of {args.rounds} instant queries at the end of the week (`stats=all`).",
        "",
        "| query | eval s | peak samples | per XID series | XID series the default --query.max-samples allows | series |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
        f"The alert over the record against the alert as first written: {first['seconds'] / shipped['seconds']:,.0f} times "
        f"faster, {first['peak'] / shipped['peak']:,.0f} times fewer samples at once; the record, evaluated every minute, costs "
        f"{every_minute['seconds'] * 1000:.0f} ms and {every_minute['peak']:,} samples at once.",
    ])
    print(body)
    if args.record:
        write_section(DOC, SECTION, body)
        print(f"recorded in {DOC} (section {SECTION})")


if __name__ == "__main__":
    main()
