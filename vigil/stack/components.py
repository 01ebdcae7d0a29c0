"""The components of a local stack: which binaries, which flags, which health checks."""

from __future__ import annotations

import shutil
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from vigil.common.durations import format_duration
from vigil.common.hostport import format_host_port, http_url

from vigil.stack.settings import StackSettings
from vigil.stack.config import RunLayout
from vigil.stack.supervisor import ComponentSpec

SYSTEM_BINARIES = {
    "prometheus": ("prometheus", "prometheus"),
    "promtool": ("promtool", "prometheus"),
    "alertmanager": ("prometheus-alertmanager", "prometheus-alertmanager"),
    "amtool": ("amtool", "prometheus-alertmanager"),
    "node-exporter": ("prometheus-node-exporter", "prometheus-node-exporter"),
}
HA_BINARIES = {"victoria-metrics": ("victoria-metrics", "victoria-metrics")}  # the ha profile's long-term store
# the sharded profile's global store and the evaluator of its global rules (one Debian package)
SHARDED_BINARIES = {**HA_BINARIES, "vmalert": ("vmalert", "victoria-metrics")}
PROFILE_BINARIES = {"ha": HA_BINARIES, "sharded": SHARDED_BINARIES}


class MissingBinaries(Exception):
    """Debian packages the stack needs are not installed; the message has the command to fix it."""


def find_binaries(profile: str = "single") -> dict[str, str]:
    found, missing = {}, set()
    wanted = {**SYSTEM_BINARIES, **PROFILE_BINARIES.get(profile, {})}
    for key, (binary, package) in wanted.items():
        path = shutil.which(binary)
        if path:
            found[key] = path
        else:
            missing.add(package)
    if missing:
        packages = " ".join(sorted(missing))
        raise MissingBinaries(f"missing Debian packages: {packages}\n  install them with: sudo apt-get install -y {packages}")
    return found


@dataclass(frozen=True)
class GpuBackend:
    """Which GPU exporter backend the stack runs and the node names it exports."""

    kind: str  # "sim" or "nvml"
    node_names: list[str]


def detect_gpu_backend(settings: StackSettings, requested: str = "auto") -> GpuBackend:
    """Real GPUs when NVML answers (or when asked), the simulated fleet otherwise."""
    if requested == "auto":
        requested = "nvml" if _nvml_available() else "sim"
    if requested == "nvml":
        return GpuBackend("nvml", [socket.gethostname()])
    return GpuBackend("sim", [f"node-{i}" for i in range(1, settings.sim_nodes + 1)])


def _nvml_available() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        return True
    except Exception:  # any NVML/library failure means "no usable GPU here"
        return False


def vigil_argv(*args: str) -> list[str]:
    """A `vigil` sub-command run by this interpreter (so a venv works without being activated).

    `-P` keeps the current directory off `sys.path`: a user's folder named like one of ours (a rule
    author's `rules/`, say) must not shadow the installed package in the child.
    """
    return [sys.executable, "-P", "-m", "vigil.cli", *args]


def node_exporter_flags(systemd_dir: Path = Path("/run/systemd/system")) -> list[str]:
    """Where systemd is not running (a container), its collector logs an error at every scrape: turn it off.

    `systemd_dir` is how systemd itself tells it booted the machine (sd_booted(3)).
    """
    return [] if systemd_dir.is_dir() else ["--no-collector.systemd"]


def go_log_flags(settings: StackSettings) -> list[str]:
    """`--log.level` of Prometheus, Alertmanager and node_exporter, when the stack asks for other than info."""
    return [] if settings.log_level == "info" else [f"--log.level={settings.log_level.replace('warning', 'warn')}"]


def vigil_log_flags(settings: StackSettings) -> list[str]:
    """`--log-level` of vigil's own servers, when the stack asks for other than info."""
    return [] if settings.log_level == "info" else ["--log-level", settings.log_level]


def notifier_spec(settings: StackSettings, layout: RunLayout, name: str, port: int, db_url: str,
                  alertmanager_port: int, env: dict[str, str] | None = None, after: str | None = None,
                  prometheus_url: str | None = None) -> ComponentSpec:
    """A `vigil notifier serve` on `port` storing into `db_url`, reconciling with the Alertmanager on
    `alertmanager_port` at start; `prometheus_url`: where postmortems read charts (default: the Prometheus)."""
    host, p = settings.host, settings.ports
    argv = vigil_argv("notifier", "serve", "--listen", format_host_port(host, port), "--db", db_url,
                      "--token-file", str(layout.token_file), "--vapid-key", str(layout.vapid_key),
                      "--oncall-config", str(settings.oncall_config or layout.oncall_config),
                      "--alertmanager-url", http_url(host, alertmanager_port),
                      "--resolve-gone-after", format_duration(settings.resolve_gone_after),
                      "--prometheus-url", prometheus_url or http_url(host, p.prometheus),  # postmortems' charts
                      # the Watchdog's heartbeat (alertmanager.yml): page when it stops
                      "--heartbeat", f"watchdog={format_duration(settings.heartbeat_timeout)},team=platform",
                      *(["--grafana-url", settings.grafana_url] if settings.grafana_url else []),
                      *vigil_log_flags(settings))
    return ComponentSpec(name, argv, http_url(host, port), http_url(host, port, "/healthz"), ports=[port],
                         env=env or {}, after=after)


def alertmanager_spec(settings: StackSettings, layout: RunLayout, binaries: dict[str, str], name: str, port: int,
                      data: Path, cluster: list[str] | None = None) -> ComponentSpec:
    """An Alertmanager on `port`; `cluster`: its gossip flags (None: no cluster, the single profile)."""
    url = http_url(settings.host, port)
    argv = [binaries["alertmanager"], f"--config.file={layout.alertmanager_config}", f"--storage.path={data}",
            f"--web.listen-address={format_host_port(settings.host, port)}",
            *(cluster if cluster is not None else ["--cluster.listen-address="]), f"--web.external-url={url}",
            *go_log_flags(settings)]
    return ComponentSpec(name, argv, url, http_url(settings.host, port, "/-/ready"), ports=[port])


def prometheus_spec(settings: StackSettings, binaries: dict[str, str], name: str, port: int, config: Path,
                    data: Path, extra: tuple[str, ...] = ()) -> ComponentSpec:
    url = http_url(settings.host, port)
    argv = [binaries["prometheus"], f"--config.file={config}", f"--storage.tsdb.path={data}",
            f"--web.listen-address={format_host_port(settings.host, port)}",
            f"--rules.alert.resend-delay={format_duration(settings.resend_delay)}",
            "--storage.tsdb.retention.time=30d", "--web.enable-lifecycle", f"--web.external-url={url}", *extra,
            *go_log_flags(settings)]
    return ComponentSpec(name, argv, url, http_url(settings.host, port, "/-/ready"), ports=[port])


def aiops_spec(settings: StackSettings, name: str, port: int, model_dir: Path, metrics_url: str,
               query_url: str | None = None) -> ComponentSpec:
    """An AIOps service on `port` keeping its models in `model_dir`, learning from and scoring the series
    of the Prometheus-compatible API at `metrics_url`; `query_url`: where its questions are answered
    (default: `metrics_url`)."""
    listen, url = format_host_port(settings.host, port), http_url(settings.host, port)
    query = ("--query-url", query_url) if query_url else ()
    return ComponentSpec(name, vigil_argv("aiops", "serve", "--listen", listen, "--model-dir", str(model_dir),
                                          "--prometheus-url", metrics_url, "--match", "vigil_gpu_utilization_ratio",
                                          "--risk-interval", format_duration(max(5.0, 5 * settings.scrape_interval)),
                                          *query, *vigil_log_flags(settings)),
                         f"{url}/metrics", f"{url}/healthz", ports=[port])


def component_specs(settings: StackSettings, layout: RunLayout, binaries: dict[str, str], backend: GpuBackend,
                    metrics_url: str | None = None) -> list[ComponentSpec]:
    """Components in start order (dependencies first); `metrics_url`: where the AIOps service reads
    history (default: the Prometheus)."""
    p = settings.ports
    host = settings.host

    def url(port: int, path: str = "") -> str:
        return http_url(host, port, path)

    def listen(port: int) -> str:
        return format_host_port(host, port)

    node_ports = [p.gpu_node(i) for i in range(1, len(backend.node_names) + 1)]
    if backend.kind == "sim":
        gpu_argv = vigil_argv("exporter", "gpu", "--backend", "sim", "--sim-nodes", str(settings.sim_nodes),
                          "--sim-gpus", str(settings.sim_gpus), "--sim-jobs", str(settings.sim_jobs),
                          "--sim-job-hangs", str(settings.sim_job_hangs),
                          "--listen", listen(node_ports[0]),
                          "--control-listen", listen(p.gpu_control), "--interval", str(settings.exporter_interval))
        gpu = ComponentSpec("gpu-fleet", gpu_argv, url(node_ports[0], "/metrics"), url(p.gpu_control, "/healthz"),
                            ports=[p.gpu_control, *node_ports])
    else:
        gpu_argv = vigil_argv("exporter", "gpu", "--backend", "nvml", "--listen", listen(node_ports[0]),
                          "--node", backend.node_names[0], "--interval", str(settings.exporter_interval))
        gpu = ComponentSpec("gpu-exporter", gpu_argv, url(node_ports[0], "/metrics"), url(node_ports[0], "/metrics"),
                            ports=node_ports)
    specs = [
        notifier_spec(settings, layout, "notifier", p.notifier, f"sqlite:///{layout.notifier_db}", p.alertmanager),
        alertmanager_spec(settings, layout, binaries, "alertmanager", p.alertmanager, layout.alertmanager_data),
        ComponentSpec("node-exporter", [binaries["node-exporter"], *node_exporter_flags(), f"--web.listen-address={listen(p.node_exporter)}",
                                        *go_log_flags(settings)],
                      url(p.node_exporter, "/metrics"), url(p.node_exporter, "/metrics"), ports=[p.node_exporter]),
        gpu,
    ]
    if settings.node_health:
        # simulated disks: a SMART pass per scrape, so that `vigil chaos inject disk-failing` shows at once
        chaos = ["--sim-chaos-url", url(p.gpu_control), "--interval", format_duration(max(1.0, settings.scrape_interval))] \
            if backend.kind == "sim" else []
        specs.append(ComponentSpec("node-health", vigil_argv("exporter", "node", "--listen", listen(p.node_health), "--simulate",
                                                         "--node", backend.node_names[0], *chaos),
                                   url(p.node_health, "/metrics"), url(p.node_health, "/metrics"), ports=[p.node_health]))
    specs.append(prometheus_spec(settings, binaries, "prometheus", p.prometheus, layout.prometheus_config, layout.prometheus_data))
    if settings.aiops and not (layout.aiops_dir / "disk_model.json").exists():
        # First start: learn the disk failure model on a simulated SMART fleet; the AIOps service
        # picks the model up on its next refresh, so nothing waits for this job.
        specs.append(ComponentSpec("train-disk-model", vigil_argv("aiops", "train-disk", "--simulate", "--disks", "2000",
                                                               "--model-dir", str(layout.aiops_dir)),
                                   "", "", oneshot=True))
    if settings.aiops:
        specs.append(aiops_spec(settings, "aiops", p.aiops, layout.aiops_dir, metrics_url or url(p.prometheus)))
    return specs
