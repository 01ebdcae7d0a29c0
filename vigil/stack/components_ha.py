"""The components of the ha profile (`vigil up --profile ha`; docs/scaling.md, "HA topology").

The single profile's components, with: PostgreSQL (unless the settings name a database) and two
notifiers on it; three Alertmanager peers gossiping on loopback; two Prometheus replicas; and
VictoriaMetrics, which both replicas remote-write to and the AIOps service reads its history from.
"""

from __future__ import annotations

from vigil.common.durations import format_duration

from vigil.stack.components import GpuBackend, alertmanager_spec, component_specs, notifier_spec, prometheus_spec
from vigil.stack.history_vm import prepare_aiops
from vigil.stack.settings import StackSettings
from vigil.stack.config import RunLayout
from vigil.stack.config import postgres
from vigil.stack.config.ha import ALERTMANAGER_PEERS, NOTIFIER_REPLICAS, PROMETHEUS_REPLICAS, REPLICA_LABEL, HaLayout, \
    HaTopology, replica_name
from vigil.stack.config.ha_alertmanager import cluster_flags
from vigil.stack.supervisor import ComponentSpec

# At shutdown the supervisor stops VictoriaMetrics with the rest: a replica gives up flushing its last
# remote-write batch after a second rather than retrying for the default minute (and being killed).
REMOTE_WRITE_FLAGS = ("--storage.remote.flush-deadline=1s",)


def victoria_metrics_spec(settings: StackSettings, binary: str, ha_layout: HaLayout) -> ComponentSpec:
    """VictoriaMetrics keeping one sample per scrape interval of the replicas' identical series."""
    topology = HaTopology(settings)
    port = topology.victoria_metrics_port
    argv = [binary, f"-httpListenAddr={topology.address(port)}", f"-storageDataPath={ha_layout.victoria_metrics_data}",
            f"-dedup.minScrapeInterval={format_duration(settings.scrape_interval)}", "-retentionPeriod=30d",
            # queries see samples as soon as they land (the default hides the last 30 s from queries)
            f"-search.latencyOffset={format_duration(max(1.0, 2 * settings.scrape_interval))}",
            "-loggerLevel=WARN"]
    return ComponentSpec("victoria-metrics", argv, topology.url(port, "/vmui/"), topology.url(port, "/health"),
                         ports=[port])


def postgres_spec(settings: StackSettings, layout: RunLayout) -> ComponentSpec:
    topology = HaTopology(settings)
    port = topology.postgres_port
    return ComponentSpec("postgres", postgres.server_argv(layout, settings.host, port),
                         postgres.database_url(settings.host, port), f"tcp://{topology.address(port)}", ports=[port])


def ha_component_specs(settings: StackSettings, layout: RunLayout, binaries: dict[str, str],
                       backend: GpuBackend) -> list[ComponentSpec]:
    """Components in start order: the database and VictoriaMetrics first, the notifiers once the database
    answers, then the single profile's order with every replica beside its first."""
    topology, ha_layout = HaTopology(settings), HaLayout(layout)
    single = {spec.name: spec for spec in component_specs(settings, layout, binaries, backend,
                                                           metrics_url=topology.victoria_metrics_url)}
    first: list[ComponentSpec] = []
    if settings.database_url:
        db_url, env, after = settings.database_url, {}, None
    else:
        first.append(postgres_spec(settings, layout))
        db_url = postgres.database_url(settings.host, topology.postgres_port)
        env, after = {"PGPASSFILE": str(postgres.pgpass_file(layout))}, "postgres"
    first.append(victoria_metrics_spec(settings, binaries["victoria-metrics"], ha_layout))
    replicas = {
        "notifier": [notifier_spec(settings, layout, replica_name("notifier", i), port, db_url,
                                   topology.alertmanager_ports()[i - 1], env=env, after=after)
                     for i, port in enumerate(topology.notifier_ports()[:NOTIFIER_REPLICAS], start=1)],
        "alertmanager": [alertmanager_spec(settings, layout, binaries, replica_name("alertmanager", i), port,
                                           ha_layout.alertmanager_data(i), cluster_flags(settings, i))
                         for i, port in enumerate(topology.alertmanager_ports()[:ALERTMANAGER_PEERS], start=1)],
        "prometheus": [prometheus_spec(settings, binaries, replica_name("prometheus", i), port,
                                       ha_layout.prometheus_config(i), ha_layout.prometheus_data(i), REMOTE_WRITE_FLAGS)
                       for i, port in enumerate(topology.prometheus_ports()[:PROMETHEUS_REPLICAS], start=1)],
    }
    # the first peer leaves the gossip mesh last: the others' leave messages need a live peer to reach,
    # and a peer left alone leaves at once (together, the last one would wait 10 s for an answer)
    replicas["alertmanager"][0].stop_last = True
    aiops = single.get("aiops")
    if aiops is not None:  # it reads VictoriaMetrics: start it once that answers, with the history in it
        aiops.after = "victoria-metrics"
        if backend.kind == "sim":
            aiops.prepare = prepare_aiops(settings, layout, backend.node_names, topology.victoria_metrics_url)
    specs = list(first)
    for name, spec in single.items():
        specs.extend(replicas.get(name, [spec]))
    return specs


__all__ = ["REPLICA_LABEL", "ha_component_specs", "postgres_spec", "victoria_metrics_spec"]
