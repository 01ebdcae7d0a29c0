"""The steady state of `bench/rules/run.py --steady`: the history a young Prometheus lacks, written as
promtool blocks into its data folder before it starts, and the XID counters carried on by the live fleet.

- **Hardware XIDs at a published rate** (Llama 3's 0.47 interruptions per 1,000 GPU-days, field notes;
  `--xid-rate` sets another) over the last `days` on the fleet's GPUs: Poisson-drawn, seeded, each event
  on a random GPU, minute and hardware XID. Each GPU's counter of an XID runs from its first event to the
  end, with the XID's and the GPU's last times, labelled as the fleet's exporter and the bench's scrape
  configuration label them (the same series the live fleet goes on with).
- **The occasions record** `GpuXidRecurring` counts over 7 days, evaluated every minute over the whole
  history by `promtool tsdb create-blocks-from rules` against a Prometheus reading those blocks, as the
  running rule would have recorded it.
- **The GPU-availability SLO's two fleet records**, read over up to 3 days: the fleet's GPU count in each
  (a healthy fleet: every GPU up).

Then `carry_on` sends the live fleet the same XIDs (the chaos API's `xid-burst`, one per counter, with its
count), so each counter goes on at the count the history ended with and the XID series stay in the head,
as on a fleet whose exporters kept running. Windows over the live series (30 minutes at most, outside those
above) fill during the measured run's warm-up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import requests
import yaml

from xid_recurring import backfill_record, backfill_xids  # (bench/rules/xid_recurring.py)

from vigil.exporters.sim.identity import device_uuid
from vigil.exporters.xid import xid_class
from vigil.stack.tsdb_readback import prometheus_on

# Llama 3 (16,384 H100s, 54 days): 419 unexpected interruptions, 0.47 per 1,000 GPU-days
PUBLISHED_RATE = 0.47
# XIDs the occasions record counts that the simulated fleet takes as bare events (79, off the bus, would
# take the GPU away and with it every series the measured run reads)
XIDS = (48, 62, 64, 74, 95, 119, 120)
OCCASION_RECORD = "gpu:vigil_gpu_hardware_xid:occasion"
SLO_RECORDS = ("slo:gpu_availability_up:sum", "slo:gpu_availability_up:count")
STEP_S = 60.0
SEED = 2026


@dataclass(frozen=True)
class Counter:
    """One XID counter of one GPU: the times of its events (sorted, Unix seconds)."""
    node: int
    gpu: int
    xid: int
    events: tuple[float, ...]

    def labels(self) -> dict[str, str]:
        node = f"node-{self.node}"
        return {"job": "vigil-gpu", "instance": node, "node": node, "gpu": str(self.gpu),
                "uuid": device_uuid(node, self.gpu)}


def xid_counters(nodes: int, gpus: int, days: int, rate: float, end: float, seed: int = SEED) -> list[Counter]:
    """The hardware-XID counters a fleet of `nodes` x `gpus` holds after `days` at `rate` events per
    1,000 GPU-days ending at `end`: a Poisson count of events, each on a random GPU, minute and XID."""
    rng = np.random.default_rng(seed)
    count = int(rng.poisson(rate * nodes * gpus * days / 1000.0))
    found: dict[tuple[int, int, int], list[float]] = {}
    for _ in range(count):
        node, gpu = int(rng.integers(1, nodes + 1)), int(rng.integers(0, gpus))
        xid = int(XIDS[rng.integers(0, len(XIDS))])
        at = end - days * 86400.0 + float(rng.uniform(0, days * 86400.0))
        found.setdefault((node, gpu, xid), []).append(at)
    return [Counter(node, gpu, xid, tuple(sorted(times))) for (node, gpu, xid), times in sorted(found.items())]


def history_rows(counters: list[Counter], fleet_gpus: int, days: int, end: float, slo_labels: dict[str, dict]) -> list:
    """(name, labels, timestamps, values) of the steady history: every counter with its last times, each
    GPU's last XID time, and the SLO's fleet records, a sample a minute up to `end`."""
    t = end - STEP_S * np.arange(int(days * 86400 / STEP_S))[::-1]
    rows, gpu_last = [], {}
    for counter in counters:
        events = np.asarray(counter.events)
        seen = np.searchsorted(events, t, side="right")  # events up to each sample
        present = seen > 0
        last = np.where(present, events[np.maximum(seen - 1, 0)], np.nan)
        labels = {**counter.labels(), "xid": str(counter.xid), "class": xid_class(counter.xid)}
        rows += [("vigil_gpu_xid_errors_total", labels, t, np.where(present, seen.astype(float), np.nan)),
                 ("vigil_gpu_xid_last_seen_timestamp_seconds", labels, t, last)]
        key = (counter.node, counter.gpu)
        gpu_last[key] = np.fmax(gpu_last.get(key, np.full(t.size, np.nan)), last)
    by_gpu = {(c.node, c.gpu): c.labels() for c in counters}
    rows += [("vigil_gpu_last_xid_timestamp_seconds", by_gpu[key], t, last) for key, last in sorted(gpu_last.items())]
    rows += [(name, labels, t, np.full(t.size, float(fleet_gpus))) for name, labels in slo_labels.items()]
    return rows


def record_rules(rules_file: Path) -> tuple[str, dict[str, dict]]:
    """(the occasions record's expression, {SLO record: its labels}) as the rule file writes them."""
    rules = [rule for group in yaml.safe_load(rules_file.read_text())["groups"] for rule in group["rules"]]
    records = {rule["record"]: rule for rule in rules if "record" in rule}
    missing = [name for name in (OCCASION_RECORD, *SLO_RECORDS) if name not in records]
    if missing:
        raise SystemExit(f"the rule file has no {', '.join(missing)}: update bench/rules/steady.py")
    return records[OCCASION_RECORD]["expr"], {name: dict(records[name].get("labels", {})) for name in SLO_RECORDS}


def backfill(workdir: Path, rules_file: Path, counters: list[Counter], fleet_gpus: int, days: int, end: float) -> dict:
    """Write the steady history into `workdir/data` (the measured Prometheus' TSDB); its figures."""
    expr, slo_labels = record_rules(rules_file)
    began = time.perf_counter()
    samples = backfill_xids(history_rows(counters, fleet_gpus, days, end, slo_labels), workdir)
    scratch = workdir / "steady-readback"
    scratch.mkdir()
    with prometheus_on(workdir / "data", scratch) as reader:  # the record, as xid_recurring.py backfills it
        backfill_record(reader.url, OCCASION_RECORD, expr, end - days * 86400, end, workdir)
    return {"counters": len(counters), "events": sum(len(c.events) for c in counters), "samples": samples,
            "seconds": time.perf_counter() - began}


def carry_on(control_url: str, counters: list[Counter]) -> None:
    """Send the live fleet each counter's events at once (chaos `xid-burst`), so it exposes the counter
    at the count the history ended with."""
    for counter in counters:
        reply = requests.post(f"{control_url}/chaos/inject", timeout=30, json={
            "fault": "xid-burst", "node": f"node-{counter.node}", "gpu": counter.gpu, "xid": counter.xid,
            "count": len(counter.events)})
        if not reply.ok:
            raise SystemExit(f"the fleet refused an XID burst: {reply.status_code} {reply.text[:200]}")
