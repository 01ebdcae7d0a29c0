"""Alert firings: one alert (a label set) firing from `start` to `end` (None while still firing).

Read from Alertmanager webhook payloads / `{labels, startsAt, endsAt}` alerts (JSON), or from the
`ALERTS{alertstate="firing"}` series of Prometheus.
"""

from __future__ import annotations

from dataclasses import dataclass

from vigil.common.prometheus_api import PrometheusClient
from vigil.common.times import parse_time


class AlertInputError(ValueError):
    """The alert input is not what it should be; the message says where."""


@dataclass(frozen=True)
class Firing:
    """One alert firing."""

    labels: tuple[tuple[str, str], ...]  # sorted (name, value) pairs
    start: float  # unix seconds
    end: float | None  # None while still firing

    @property
    def alertname(self) -> str:
        return self.label("alertname") or ""

    def label(self, name: str) -> str | None:
        for key, value in self.labels:
            if key == name:
                return value
        return None

    def active_at(self, t: float) -> bool:
        return self.start <= t and (self.end is None or t <= self.end)


def firings_from_json(data) -> list[Firing]:
    """Firings from a webhook payload, a list of payloads, or a list of alerts (mixed is fine).

    Webhook payloads repeat an alert in every notification of its group; repeats are merged by
    (labels, startsAt), keeping the resolved `endsAt` when any payload has one.
    """
    items = data if isinstance(data, list) else [data]
    alerts = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise AlertInputError(f"item {index}: expected an object, got {type(item).__name__}")
        if "alerts" in item:
            if not isinstance(item["alerts"], list):
                raise AlertInputError(f"item {index}: `alerts` must be a list")
            alerts += [(f"item {index} alert {j}", a) for j, a in enumerate(item["alerts"])]
        else:
            alerts.append((f"item {index}", item))
    merged: dict[tuple, float | None] = {}
    for where, alert in alerts:
        labels, start, end = _parse_alert(where, alert)
        key = (labels, start)
        merged[key] = end if merged.get(key) is None else merged[key]
    return sorted((Firing(labels, start, end) for (labels, start), end in merged.items()), key=_order)


def _parse_alert(where: str, alert) -> tuple[tuple[tuple[str, str], ...], float, float | None]:
    if not isinstance(alert, dict):
        raise AlertInputError(f"{where}: expected an object")
    labels = alert.get("labels")
    if not isinstance(labels, dict) or "alertname" not in labels:
        raise AlertInputError(f"{where}: needs `labels` with an `alertname`")
    if "startsAt" not in alert:
        raise AlertInputError(f"{where}: needs `startsAt`")
    try:
        start = parse_time(str(alert["startsAt"]))
        end = parse_time(str(alert["endsAt"])) if alert.get("endsAt") else None
    except ValueError as exc:
        raise AlertInputError(f"{where}: bad time: {exc}") from exc
    if start is None:
        raise AlertInputError(f"{where}: `startsAt` is empty or the zero time")
    if alert.get("status") == "firing":
        end = None  # a firing alert's endsAt is a resolve-timeout guess, not an end
    return tuple(sorted((str(k), str(v)) for k, v in labels.items())), start, end


def firings_from_prometheus(reader: PrometheusClient, start: float, end: float, max_points: int = 10000) -> list[Firing]:
    """Firings from the `ALERTS{alertstate="firing"}` history between `start` and `end`.

    A series' consecutive samples form one firing; a gap longer than 1.5 steps ends it. A firing
    whose last sample is at `end` is still firing.
    """
    step = max(15.0, (end - start) / max_points)  # Prometheus refuses more than 11,000 points per series
    firings = []
    for labels, points in reader.query_range('ALERTS{alertstate="firing"}', start, end, step):
        label_set = tuple(sorted((k, v) for k, v in labels.items() if k not in {"__name__", "alertstate"}))
        run_start = previous = None
        for t, _ in points:
            if run_start is not None and t - previous > 1.5 * step:
                firings.append(Firing(label_set, run_start, previous))
                run_start = None
            run_start = t if run_start is None else run_start
            previous = t
        if run_start is not None:
            firings.append(Firing(label_set, run_start, None if previous >= end - step else previous))
    return sorted(firings, key=_order)


def _order(firing: Firing):
    return (firing.start, firing.labels)
