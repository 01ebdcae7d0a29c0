"""Benchmark: webhook ingest of the notifier vs Alertmanager's own alert ingest, same client, same run.

    .venv/bin/python bench/notifier/ingest.py [--requests 300]

Posts N firing notifications (each a new group, so each opens an incident and enqueues an inbox page)
one after the other to a real `vigil notifier serve` (uvicorn, SQLite WAL with synchronous=FULL: each
answer waits for a durable commit), and N alerts to a real Alertmanager 0.25 (`POST /api/v2/alerts`,
in memory), and compares per-request latency. Also reports how long a stored notification takes to
become a page in the inbox (delivered through apprise json://). Writes the `notifier` section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from vigil.aiops.benchmark_record import add_record_option, write_section  # noqa: E402
ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
TOKEN = "bench-token-0123456789abcdef"
ONCALL = "targets:\n  demo-dri:\n    channels:\n      - type: inbox\ndefault: demo-dri\n"
# same file without `default`: no route matches, so nothing is paged and the webhook runs alone
ONCALL_NOBODY = "targets:\n  demo-dri:\n    channels:\n      - type: inbox\n"
AM_CONFIG = "route:\n  receiver: blackhole\n  group_wait: 1h\nreceivers:\n  - name: blackhole\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{process.args[0]} exited with {process.returncode}")
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{url} not ready")


def notification(i: int) -> dict:
    labels = {"alertname": "GpuXidCritical", "node": f"node-{i % 50}", "gpu": str(i % 8), "severity": "critical",
              "bench": str(i)}
    return {"version": "4", "groupKey": f'{{}}:{{bench="{i}"}}', "truncatedAlerts": 0, "status": "firing",
            "receiver": "vigil", "groupLabels": {"bench": str(i)}, "commonLabels": labels,
            "commonAnnotations": {"summary": "XID 79"}, "externalURL": "http://am",
            "alerts": [{"status": "firing", "labels": labels, "annotations": {"summary": "XID 79"},
                        "startsAt": "2026-11-21T20:00:00.000Z", "endsAt": "0001-01-01T00:00:00Z",
                        "generatorURL": "", "fingerprint": f"{i:016x}"}]}


def timed_posts(session: requests.Session, url: str, bodies: list, headers: dict) -> list[float]:
    times = []
    for body in bodies:
        started = time.perf_counter()
        response = session.post(url, json=body, headers=headers, timeout=30)
        times.append(time.perf_counter() - started)
        response.raise_for_status()
    return times


def run_notifier(tmp: Path, count: int, oncall: str) -> tuple[list[float], list[float]]:
    """Webhook latencies, and notification → inbox page delays (empty when nothing is paged)."""
    tmp.mkdir()
    (tmp / "token").write_text(TOKEN + "\n")
    (tmp / "oncall.yaml").write_text(oncall)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen([sys.executable, "-m", "vigil.cli", "notifier", "serve", "--listen",
                                f"127.0.0.1:{port}", "--db", f"sqlite:///{tmp / 'notifier.db'}", "--token-file",
                                str(tmp / "token"), "--oncall-config", str(tmp / "oncall.yaml"),
                                "--log-level", "warning"], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        wait_ready(url + "/healthz", process)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with requests.Session() as session:
            timed_posts(session, url + "/api/v1/alerts/alertmanager", [notification(-i - 1) for i in range(20)],
                        auth)  # warm-up
            times = timed_posts(session, url + "/api/v1/alerts/alertmanager",
                                [notification(i) for i in range(count)], auth)
            pages, deadline = [], time.monotonic() + (120 if oncall == ONCALL else 0)
            while time.monotonic() < deadline:
                pages = session.get(url + "/api/v1/inbox?limit=5000", headers=auth, timeout=30).json()["pages"]
                if len(pages) >= count + 20:
                    break
                time.sleep(0.5)
            notes = session.get(url + "/api/v1/notifications?limit=5000", headers=auth, timeout=30).json()
        received = {n["incident_id"]: _seconds(n["received_at"]) for n in notes["notifications"]}
        to_page = [_seconds(p["time"]) - received[p["incident_id"]] for p in pages if p["incident_id"] in received]
        return times, to_page[20:]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)


def run_alertmanager(tmp: Path, count: int) -> list[float]:
    (tmp / "am.yml").write_text(AM_CONFIG)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen([ALERTMANAGER, f"--config.file={tmp / 'am.yml'}", f"--storage.path={tmp / 'am'}",
                                f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=",
                                "--log.level=warn"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(url + "/-/ready", process)
        bodies = [[{"labels": notification(i)["commonLabels"], "annotations": {"summary": "XID 79"}}]
                  for i in range(-20, count)]
        with requests.Session() as session:
            return timed_posts(session, url + "/api/v2/alerts", bodies, {})[20:]
    finally:
        process.terminate()
        process.wait(30)


def _seconds(rfc3339: str) -> float:
    return datetime.strptime(rfc3339, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def machine() -> str:
    model = "unknown cpu"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return f"{platform.machine()}, {model}, {os.cpu_count()} cores"


def ms(values: list[float], q: float) -> str:
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.2f}"




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    add_record_option(parser)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        vigil_times, to_page = run_notifier(Path(tmp) / "paging", args.requests, ONCALL)
        alone_times, _ = run_notifier(Path(tmp) / "alone", args.requests, ONCALL_NOBODY)
        am_times = run_alertmanager(Path(tmp), args.requests)
    v_med, a_med = statistics.median(vigil_times), statistics.median(am_times)
    s_med = statistics.median(alone_times)
    text = f"""
## Notifier: webhook ingest and page delivery

Machine: {machine()}. Date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Command:
`.venv/bin/python bench/notifier/ingest.py --requests {args.requests}`. Load average at start: {load:.2f}
(shared cores: single figures move by tens of percent between runs).

{args.requests} sequential requests from one keep-alive client, after 20 warm-up requests. vigil: each
request is a new firing group, stored durably (SQLite WAL, synchronous=FULL) with its new incident
(and, in the first row, an outbox page) before the answer. Peer: Alertmanager 0.25 accepting one alert per `POST /api/v2/alerts`
(kept in memory), same client, same run.

| | median ms | p99 ms | requests/s (sequential) | median / Alertmanager |
|---|---:|---:|---:|---:|
| vigil webhook, each notification paged to the inbox meanwhile | {v_med * 1000:.2f} | {ms(vigil_times, 0.99)} | {len(vigil_times) / sum(vigil_times):.0f} | {v_med / a_med:.1f}x |
| vigil webhook, nothing routed (no page traffic) | {s_med * 1000:.2f} | {ms(alone_times, 0.99)} | {len(alone_times) / sum(alone_times):.0f} | {s_med / a_med:.1f}x |
| Alertmanager `POST /api/v2/alerts` (peer) | {a_med * 1000:.2f} | {ms(am_times, 0.99)} | {len(am_times) / sum(am_times):.0f} | 1.0x |

In the first row every stored notification also becomes a page that the worker sends through apprise
json:// back to the same process, so the two share the cores. Stored notification → page recorded in
the inbox: median {statistics.median(to_page) * 1000:.0f} ms, p99 {ms(to_page, 0.99)} ms over
{len(to_page)} pages.
"""
    print(text)
    if args.record:
        write_section(ROOT / "docs" / "benchmarks.md", "notifier", text)


if __name__ == "__main__":
    main()
