"""The ha profile's topology: which replicas run, on which ports, with which files in the run directory.

Replica 1 of each kind is the single profile's component (same name, port and files), so every command
that talks to "the" Prometheus, Alertmanager or notifier (`vigil drill`, `inbox`, `dashboards`) works
unchanged; the other replicas and the ha-only components take the top of the port range, which the
simulated nodes leave free in this profile (settings.HA_PORTS):

    port_base+99  prometheus-2          port_base+96..94  Alertmanager gossip (peers 1, 2, 3)
    port_base+98  alertmanager-2        port_base+93      notifier-2
    port_base+97  alertmanager-3        port_base+92      postgres (unless database_url is given)
                                        port_base+91      victoria-metrics
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vigil.common.hostport import format_host_port, http_url

from vigil.stack.settings import StackSettings
from vigil.stack.config.layout import RunLayout

PROMETHEUS_REPLICAS = 2
ALERTMANAGER_PEERS = 3
NOTIFIER_REPLICAS = 2
# The label that tells the Prometheus replicas apart. Alerts leave without it (alert_relabel_configs),
# so Alertmanager sees one alert from both; remote write drops it too, so VictoriaMetrics stores one series.
REPLICA_LABEL = "prometheus_replica"


def replica_name(kind: str, index: int) -> str:
    """`prometheus`, `prometheus-2`, …: replica 1 keeps the single profile's name."""
    return kind if index == 1 else f"{kind}-{index}"


@dataclass(frozen=True)
class TopPorts:
    """Ports counted down from the top of the settings' port range (the profiles' extra components live
    there, clear of the single profile's ports), VictoriaMetrics' among them, and their URLs."""

    settings: StackSettings

    @property
    def _top(self) -> int:
        return self.settings.port_base + 99

    @property
    def victoria_metrics_port(self) -> int:
        return self._top - 8

    def address(self, port: int) -> str:
        return format_host_port(self.settings.host, port)

    def url(self, port: int, path: str = "") -> str:
        return http_url(self.settings.host, port, path)

    @property
    def victoria_metrics_url(self) -> str:
        """VictoriaMetrics' Prometheus-compatible API root (`/api/v1/query` … below it)."""
        return self.url(self.victoria_metrics_port)

    @property
    def remote_write_url(self) -> str:
        return self.url(self.victoria_metrics_port, "/api/v1/write")


@dataclass(frozen=True)
class HaTopology(TopPorts):
    """Ports and URLs of every replica, derived from the settings' port base (see the module's table)."""

    def prometheus_ports(self) -> list[int]:
        return [self.settings.ports.prometheus, self._top]

    def alertmanager_ports(self) -> list[int]:
        return [self.settings.ports.alertmanager, self._top - 1, self._top - 2]

    def gossip_ports(self) -> list[int]:
        return [self._top - 3, self._top - 4, self._top - 5]

    def notifier_ports(self) -> list[int]:
        return [self.settings.ports.notifier, self._top - 6]

    @property
    def postgres_port(self) -> int:
        return self._top - 7


@dataclass(frozen=True)
class HaLayout:
    """Where the extra replicas keep their files; replica 1 uses the single profile's `RunLayout` paths."""

    layout: RunLayout

    def prometheus_config(self, index: int) -> Path:
        return self.layout.prometheus_config if index == 1 else self.layout.root / f"prometheus-{index}" / "prometheus.yml"

    def prometheus_data(self, index: int) -> Path:
        return self.layout.prometheus_data if index == 1 else self.layout.root / f"prometheus-{index}" / "data"

    def alertmanager_data(self, index: int) -> Path:
        return self.layout.alertmanager_data if index == 1 else self.layout.root / f"alertmanager-{index}" / "data"

    @property
    def victoria_metrics_data(self) -> Path:
        return self.layout.root / "victoria-metrics"

    def data_dirs(self) -> list[Path]:
        return [*(self.prometheus_data(i) for i in range(2, PROMETHEUS_REPLICAS + 1)),
                *(self.alertmanager_data(i) for i in range(2, ALERTMANAGER_PEERS + 1)), self.victoria_metrics_data]
