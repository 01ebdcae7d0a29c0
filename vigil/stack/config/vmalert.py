"""vmalert (from Debian's `victoria-metrics` package): the rules a shard cannot evaluate alone, run once
over VictoriaMetrics, where every shard remote-writes.

Which rules are global is `vigil.rules.shard_split`'s call (absent() guards, cross-node aggregations,
the Watchdog, whatever reads their records); `vmalert_argv` is how vmalert is started, by the sharded
profile and by the scaling bench (bench/scaling/stores.py).
"""

from __future__ import annotations

from pathlib import Path

from vigil.common.durations import format_duration


def vmalert_argv(binary: str, rule_file: Path, datasource_url: str, notifier_url: str, listen: str,
                 evaluation_interval_s: float, labels: dict[str, str] | None = None) -> list[str]:
    """vmalert evaluating `rule_file` over the Prometheus-compatible API at `datasource_url`, writing its
    recorded series back there (global records read by other global rules) and sending alerts to the
    Alertmanager at `notifier_url`; `labels` are added to every alert and record (as Prometheus'
    external labels are)."""
    return [binary, f"-rule={rule_file}", f"-datasource.url={datasource_url}", f"-remoteWrite.url={datasource_url}",
            "-remoteWrite.flushInterval=1s", f"-notifier.url={notifier_url}",
            f"-evaluationInterval={format_duration(evaluation_interval_s)}", f"-httpListenAddr={listen}",
            *(f"-external.label={name}={value}" for name, value in (labels or {}).items())]
