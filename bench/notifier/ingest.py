"""Benchmark: the notifier's webhook ingest under concurrent clients, its outbox, and Alertmanager's own
ingest in the same run.

    .venv/bin/python bench/notifier/ingest.py [--requests 2000] [--workers 2] [--record]

Against a real `vigil notifier serve` subprocess (SQLite WAL, synchronous=FULL as it runs by default:
every 2xx waits for a durable commit; the delivery worker runs) on a free port:

1. ingest: N firing notifications, each a new group (a new incident), at 1, 8 and 32 connections,
   once with nothing routed and once with every notification paged to the local inbox meanwhile;
   Alertmanager 0.25 `POST /api/v2/alerts` (one alert per request, in memory) at the same concurrency;
2. outbox: P pages waiting when the notifier starts, delivered to an inbox contact (in-process);
3. due (outbox due → page): 1,000 open incidents whose pages wait in the outbox, due over 20 s, while 8
   connections post notifications; the delay from each page's due time to its send attempt and inbox;
4. escalation (escalation due → page): 1,000 open, unacknowledged incidents whose tier-2 step falls due
   over 20 s, under the same posting: the escalation engine pages tier 2; the delay from each step's due
   time to its page enqueued, sent and in the inbox (`due.py`).

Without `--record` it only prints; with it, it writes the `notifier` section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _sibling(name: str):
    """This folder's module `name` (loaded by path: a bare `import load` would read as a PyPI package)."""
    spec = importlib.util.spec_from_file_location(f"bench_notifier_{name}", Path(__file__).with_name(f"{name}.py"))
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_load, _prefill, _servers, _due = _sibling("load"), _sibling("prefill"), _sibling("servers"), _sibling("due")
LoadResult, encode, post_all = _load.LoadResult, _load.encode, _load.post_all
prefill_pages = _prefill.prefill_pages
AUTH, TOKEN, alertmanager, cpu_seconds = _servers.AUTH, _servers.TOKEN, _servers.alertmanager, _servers.cpu_seconds
notifier, prepare_notifier_dir = _servers.notifier, _servers.prepare_notifier_dir

from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402

WEBHOOK = "/api/v1/alerts/alertmanager"
LEVELS = (1, 8, 32)
PARTS = ("ingest", "outbox", "due", "escalation")
WARMUP = 50
WINDOW_S = 20.0  # the due times of the delay parts spread over this


def notification(i: int, paged: bool) -> dict:
    labels = {"alertname": "GpuXidCritical", "node": f"node-{i % 50}", "gpu": str(i % 8), "severity": "critical",
              "bench": str(i), "paged": "yes" if paged else "no"}
    return {"version": "4", "groupKey": f'{{}}:{{bench="{i}"}}', "truncatedAlerts": 0, "status": "firing",
            "receiver": "vigil", "groupLabels": {"bench": str(i)}, "commonLabels": labels,
            "commonAnnotations": {"summary": "XID 79"}, "externalURL": "http://am",
            "alerts": [{"status": "firing", "labels": labels, "annotations": {"summary": "XID 79"},
                        "startsAt": "2026-11-21T20:00:00.000Z", "endsAt": "0001-01-01T00:00:00Z",
                        "generatorURL": "", "fingerprint": f"{i:016x}"}]}


class Ingest:
    """One figure row: a load result and the server CPU it cost."""

    def __init__(self, result: LoadResult, server_cpu_s: float):
        self.result, self.server_cpu_s = result, server_cpu_s

    def row(self, label: str, connections: int, peer: "Ingest | None") -> str:
        r = self.result
        ratio = f"{r.rate / peer.result.rate:.2f}" if peer else "1.00"
        cpu = f"{self.server_cpu_s / len(r.latencies) * 1000:.2f}"
        return (f"| {label} | {connections} | {r.rate:.0f} | {r.quantile_ms(0.5):.1f} | {r.quantile_ms(0.99):.1f} "
                f"| {cpu} | {r.client_cpu_s / r.seconds * 100:.0f} % | {r.errors} | {ratio} |")


def measure(url: str, pid: int, bodies: list[bytes], connections: int, headers: dict) -> Ingest:
    post_all(url, bodies[:WARMUP], connections, headers)
    before = cpu_seconds(pid)
    result = post_all(url, bodies[WARMUP:], connections, headers)
    return Ingest(result, cpu_seconds(pid) - before)


def vigil_ingest(folder: Path, count: int, workers: int, paged: bool) -> dict[int, Ingest]:
    out = {}
    with notifier(folder, prepare_notifier_dir(folder), workers) as (url, pid):
        for offset, connections in enumerate(LEVELS):
            base = (offset + 1) * 1_000_000
            bodies = encode([notification(base + i, paged) for i in range(count + WARMUP)])
            out[connections] = measure(url + WEBHOOK, pid, bodies, connections, AUTH)
    return out


def alertmanager_ingest(folder: Path, count: int) -> dict[int, Ingest]:
    out = {}
    with alertmanager(folder) as (url, pid):
        for offset, connections in enumerate(LEVELS):
            base = (offset + 1) * 1_000_000
            bodies = encode([[{"labels": notification(base + i, False)["commonLabels"],
                               "annotations": {"summary": "XID 79"}}] for i in range(count + WARMUP)])
            out[connections] = measure(url + "/api/v2/alerts", pid, bodies, connections, {})
    return out


def outbox_throughput(folder: Path, pages: int, workers: int) -> tuple[float, float]:
    """(pages/s from the first inbox arrival to the last, seconds from ready to the last arrival)."""
    db_url = prepare_notifier_dir(folder)
    prefill_pages(db_url, folder / "oncall.yaml", TOKEN, pages, delay_s=lambda i: 0.0)
    with notifier(folder, db_url, workers) as (url, _pid):
        ready = time.time()
        arrivals = _due.wait_inbox(folder, pages, timeout=300)
    return (len(arrivals) - 1) / (arrivals[-1] - arrivals[0]), arrivals[-1] - ready


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")


def delay_summary(name: str, delays) -> str:
    """One line per stage: p50/p99/max ms and how many of the expected pages got there."""
    parts = [f"{name}: {len(delays.to_inbox)} of {delays.expected} reached the inbox"]
    for stage, values in (("enqueued", delays.to_enqueued), ("send attempt", delays.to_attempt),
                          ("inbox", delays.to_inbox)):
        if values:
            parts.append(f"due → {stage} p50 {pct(values, 0.5):.0f} ms, p99 {pct(values, 0.99):.0f} ms, "
                         f"max {max(values) * 1000:.0f} ms ({len(values)} pages)")
    if delays.load is not None:
        parts.append(f"posts meanwhile {delays.load.rate:.0f}/s, p99 {delays.load.quantile_ms(0.99):.0f} ms")
    return "; ".join(parts)


def delay_rows(name: str, delays) -> list[str]:
    """The delay table's rows of one part: one per stage it measures."""
    load = f"{delays.load.rate:.0f}/s, p99 {delays.load.quantile_ms(0.99):.0f} ms" if delays.load else "-"
    return [f"| {name} | due → {stage} | {len(values)} of {delays.expected} | {pct(values, 0.5):.0f} "
            f"| {pct(values, 0.99):.0f} | {max(values) * 1000:.0f} | {load} |"
            for stage, values in (("page enqueued", delays.to_enqueued), ("send attempt", delays.to_attempt),
                                  ("inbox", delays.to_inbox)) if values]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="posts per concurrency level and server")
    parser.add_argument("--workers", type=int, default=1, help="`vigil notifier serve --workers`")
    parser.add_argument("--outbox-pages", type=int, default=2000)
    parser.add_argument("--open-incidents", type=int, default=1000)
    parser.add_argument("--only", default=",".join(PARTS),
                        help="comma-separated parts to run (ingest, outbox, due, escalation); --record needs all")
    add_record_option(parser)
    args = parser.parse_args()
    only = set(args.only.split(","))
    if args.record and only != set(PARTS):
        parser.error("--record needs every part (leave out --only)")
    load_avg = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if "ingest" in only:
            alone = vigil_ingest(tmp / "alone", args.requests, args.workers, paged=False)
            paging = vigil_ingest(tmp / "paging", args.requests, args.workers, paged=True)
            peer = alertmanager_ingest(tmp / "am", args.requests)
        if "outbox" in only:
            rate, drain = outbox_throughput(tmp / "outbox", args.outbox_pages, args.workers)
            print(f"outbox: {rate:.0f} pages/s, last page {drain:.1f} s after ready", flush=True)
        load_bodies = encode([notification(9_000_000 + i, False) for i in range(200_000)])
        siblings = dict(servers=_servers, prefill=_prefill, post_all=post_all, webhook=WEBHOOK)
        if "due" in only:
            outbox_due = _due.outbox_due(tmp / "due", args.open_incidents, WINDOW_S, args.workers, load_bodies,
                                         **siblings)
            print(delay_summary("outbox due -> page", outbox_due), flush=True)
        if "escalation" in only:
            escalation = _due.escalation_due(tmp / "escalation", args.open_incidents, WINDOW_S, args.workers,
                                             load_bodies, **siblings)
            print(delay_summary("escalation due -> page", escalation), flush=True)
    rows = []
    if "ingest" in only:
        for connections in LEVELS:
            rows.append(alone[connections].row("vigil, nothing routed", connections, peer[connections]))
            rows.append(paging[connections].row("vigil, each post paged to the inbox meanwhile", connections,
                                                peer[connections]))
            rows.append(peer[connections].row("Alertmanager `POST /api/v2/alerts` (peer)", connections, None))
    if only != set(PARTS):
        print("\n".join(rows))  # a partial run only prints its ingest rows (if any)
        return
    text = f"""
## Notifier: webhook ingest under concurrent clients, outbox, due → page (outbox and escalation)

Machine: {machine_summary()}. Date: {utc_now()}. Command:
`.venv/bin/python bench/notifier/ingest.py --requests {args.requests} --workers {args.workers}
--outbox-pages {args.outbox_pages} --open-incidents {args.open_incidents}`. Load average at start:
{load_avg:.2f} (shared cores: single figures move by tens of percent between runs; compare the ratios).

A real `vigil notifier serve --workers {args.workers}` (SQLite WAL, synchronous=FULL: every 2xx waits for
a durable commit; the delivery worker runs) and a real Alertmanager 0.25 (in memory, one alert per
request), one after the other, each loaded by the same closed-loop client: C threads with one
keep-alive `http.client` connection each, {args.requests} posts per level after {WARMUP} warm-up posts,
every post a new group (a new incident for vigil). *Server CPU* is the server process tree's CPU per
post (/proc); *client CPU* is the load generator's share of one core: on this 2-core machine the
client, the server and (when paging) the worker's sends all compete for the same two cores.

| server | connections | posts/s | p50 ms | p99 ms | server CPU ms/post | client CPU | errors | posts/s vs Alertmanager |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
{chr(10).join(rows)}

**Outbox**: {args.outbox_pages} pages waiting when the notifier starts, each to an inbox contact (the local
inbox is written in the transaction that records the attempt: no network send is measured here; real
channels go through apprise, 16 sends in flight at once): {rate:.0f} pages/s from the first arrival to the last; the last arrived
{drain:.1f} s after the notifier was ready.

**Due → page, {args.open_incidents} open incidents**, due times spread over {WINDOW_S:.0f} s while 8 connections post
new (unrouted) notifications as fast as they are answered. *Outbox*: each incident has one page waiting
in the outbox with its own due time (the delivery worker alone). *Escalation*: each incident is open and
unacknowledged on a two-tier policy, its first tier paged (and sent) before the notifier starts, its
tier-2 step due at its own time: the escalation engine claims the step, pages tier 2 (an inbox contact),
records the timeline and moves the escalation on; the delivery worker sends the page. Delays in ms from
each page's due time; pages that got there within {_due.GRACE_S:.0f} s of the last due time.

| part | delay | pages | p50 ms | p99 ms | max ms | posts meanwhile |
|---|---|---:|---:|---:|---:|---|
{chr(10).join(delay_rows("outbox", outbox_due) + delay_rows("escalation", escalation))}
"""
    print(text)
    if args.record:
        write_section(ROOT / "docs" / "benchmarks.md", "notifier", text)


if __name__ == "__main__":
    main()
