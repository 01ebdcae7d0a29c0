"""The ha profile's history backfill into VictoriaMetrics, where its AIOps service reads history.

The same simulated series `vigil.stack.history` writes into Prometheus' TSDB, posted once per run directory
to VictoriaMetrics' `/api/v1/import` (JSON lines, millisecond timestamps) before the AIOps service
starts. They carry the labels the replicas' remote write gives the live series (the Prometheus
external labels, the replica label dropped), so history and live samples are one series there too.
"""

from __future__ import annotations

import json
import logging

import requests

from vigil.stack.history import BACKFILLED_METRIC, history_end, simulated_series
from vigil.stack.settings import StackSettings
from vigil.stack.config import RunLayout, prometheus_config
from vigil.stack.config.ha import HaLayout

log = logging.getLogger("vigil.stack.history")


def import_lines(settings: StackSettings, layout: RunLayout, node_names: list[str], end: float) -> list[str]:
    """One JSON line per simulated series, as VictoriaMetrics' `/api/v1/import` takes them."""
    external = prometheus_config(settings, layout, node_names)["global"]["external_labels"]
    return [json.dumps({"metric": {"__name__": name, **labels, **external}, "values": values,
                        "timestamps": [int(t * 1000) for t in timestamps]})
            for name, labels, timestamps, values in simulated_series(settings, node_names, end)]


def backfill_victoria_metrics(settings: StackSettings, layout: RunLayout, node_names: list[str], url: str) -> str:
    """Post `backfill_days` of simulated history to VictoriaMetrics at `url` once; say what happened."""
    if settings.backfill_days <= 0:
        return "VictoriaMetrics backfill: off (backfill_days is 0)"
    marker = HaLayout(layout).victoria_metrics_data / "vigil-backfill.json"
    if marker.exists():
        return "VictoriaMetrics backfill: already done"
    end = history_end()
    lines = import_lines(settings, layout, node_names, end)
    try:
        requests.post(f"{url}/api/v1/import", data="\n".join(lines).encode(), timeout=120).raise_for_status()
    except requests.RequestException as exc:
        return f"VictoriaMetrics backfill failed (the AIOps service learns from live data only): {exc}"
    marker.write_text(json.dumps({"series": len(lines), "days": settings.backfill_days, "end": end}) + "\n")
    return f"VictoriaMetrics backfill: {len(lines)} series of {BACKFILLED_METRIC} ({settings.backfill_days:g} days)"


def prepare_aiops(settings: StackSettings, layout: RunLayout, node_names: list[str], url: str):
    """The AIOps service's `prepare` hook: backfill VictoriaMetrics before the service trains at start."""
    def prepare() -> None:
        log.info("%s", backfill_victoria_metrics(settings, layout, node_names, url))
    return prepare
