"""The four vigil units: what each runs, its defaults (overridable in /etc/vigil/NAME.env) and what it
relaxes of the baseline sandbox (`hardening.BASELINE`), with the reason.

GPU node: `vigil-gpu-exporter` (NVML) and `vigil-node-exporter` (SMART, InfiniBand, heartbeat).
Central host: `vigil-notifier` and `vigil-aiops`. Prometheus and Alertmanager run from Debian's own
units (docs/deploy.md says how to point them at vigil's generated configs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .hardening import Relax, hardening_lines
from .unit_file import Line, Raw, UnitFile, environment_line, exec_line, render

DEFAULT_VIGIL_BIN = "/opt/vigil/bin/vigil"  # the venv the install guide creates (docs/deploy.md)
ENV_DIR = "/etc/vigil"


@dataclass(frozen=True)
class Unit:
    """One service: `command` is vigil's argv after the binary, with `${VAR}`s from `environment`
    (defaults) and `$VIGIL_ARGS` (extra flags, split into words) from /etc/vigil/NAME.env."""

    name: str
    description: str
    command: list[str]
    environment: dict[str, str]
    relax: list[Relax] = field(default_factory=list)
    service: list[Line] = field(default_factory=list)  # StateDirectory=, LoadCredential=, DeviceAllow=, ...
    after: tuple[str, ...] = ("network.target",)
    wants: tuple[str, ...] = ()
    role: str = "GPU node"

    @property
    def file_name(self) -> str:
        return f"{self.name}.service"

    @property
    def env_file(self) -> str:
        return f"{ENV_DIR}/{self.name.removeprefix('vigil-')}.env"


def _env(name: str) -> Raw:
    return Raw("${%s}" % name)


_EXTRA = Raw("$VIGIL_ARGS")  # unbraced: split into words, and no word at all when empty

_NETWORK_ONLINE = ("network-online.target",)

GPU_EXPORTER = Unit(
    name="vigil-gpu-exporter",
    description="vigil GPU exporter (NVML)",
    command=["exporter", "gpu", "--backend", "nvml", "--listen", _env("VIGIL_LISTEN"),
             "--interval", _env("VIGIL_INTERVAL"), _EXTRA],
    environment={"VIGIL_LISTEN": "0.0.0.0:9835", "VIGIL_INTERVAL": "5s", "VIGIL_ARGS": ""},
    relax=[
        Relax("PrivateDevices", ("no",), "NVML opens /dev/nvidiactl and /dev/nvidia0..N: a private /dev has "
              "no GPU; DevicePolicy=closed and DeviceAllow= above still allow only the NVIDIA devices"),
        Relax("ProtectProc", ("default",), "job attribution reads /proc/PID/cgroup (and, when allowed, environ) "
              "of the training processes NVML lists, which belong to other users"),
    ],
    service=[Line("DeviceAllow", "char-nvidia-frontend rw",
                  why="/dev/nvidiactl and /dev/nvidiaN (major 195); the driver creates them world-readable "
                      "(NVreg_DeviceFileMode=0666), so the dynamic user opens them without a group")],
    after=("network.target", "nvidia-persistenced.service"),
)

NODE_EXPORTER = Unit(
    name="vigil-node-exporter",
    description="vigil node health exporter (SMART, InfiniBand, heartbeat)",
    command=["exporter", "node", "--listen", _env("VIGIL_LISTEN"), "--interval", _env("VIGIL_INTERVAL"), _EXTRA],
    environment={"VIGIL_LISTEN": "0.0.0.0:9101", "VIGIL_INTERVAL": "60s", "VIGIL_ARGS": ""},
    relax=[
        Relax("DynamicUser", (), "runs as root: smartctl sends ATA/SCSI pass-through (SG_IO) and NVMe admin "
              "commands, which the kernel allows only with CAP_SYS_RAWIO and CAP_SYS_ADMIN on a disk node "
              "owned by root:disk; root keeps only those two capabilities (CapabilityBoundingSet=)"),
        Relax("CapabilityBoundingSet", ("CAP_SYS_RAWIO CAP_SYS_ADMIN",),
              "CAP_SYS_RAWIO: SMART over SG_IO (SATA/SAS); CAP_SYS_ADMIN: NVMe admin passthrough "
              "(smartctl -a /dev/nvme0); every other capability of root is dropped"),
        Relax("PrivateDevices", ("no",), "smartctl opens the disks (/dev/sd*, /dev/nvme*): a private /dev has "
              "none; DevicePolicy=closed and DeviceAllow= above allow only disks, read-only"),
        Relax("PrivateUsers", ("no",), "in a user namespace root's capabilities do not reach the host's disks"),
    ],
    service=[Line("DeviceAllow", "block-sd r", why="SATA/SAS disks; smartctl opens them O_RDONLY"),
             Line("DeviceAllow", "block-blkext r"),
             Line("DeviceAllow", "char-nvme r", why="NVMe controllers (/dev/nvme0), which smartctl --scan-open lists"),
             Line("DeviceAllow", "char-sg r")],
)

NOTIFIER = Unit(
    name="vigil-notifier",
    description="vigil notifier (Alertmanager webhook receiver, on-call engine, web console)",
    command=["notifier", "serve", "--listen", _env("VIGIL_LISTEN"), "--db", _env("VIGIL_DB"),
             "--token-file", Raw("%d/webhook-token"), "--oncall-config", _env("VIGIL_ONCALL_CONFIG"),
             "--alertmanager-url", _env("VIGIL_ALERTMANAGER_URL"), "--prometheus-url", _env("VIGIL_PROMETHEUS_URL"),
             "--heartbeat", _env("VIGIL_HEARTBEAT"), "--vapid-key", Raw("%S/vigil-notifier/vapid-key.pem"), _EXTRA],
    environment={"VIGIL_LISTEN": "127.0.0.1:9095", "VIGIL_DB": "sqlite:////var/lib/vigil-notifier/notifier.db",
                 "VIGIL_ONCALL_CONFIG": f"{ENV_DIR}/oncall.yaml",
                 "VIGIL_ALERTMANAGER_URL": "http://127.0.0.1:9093", "VIGIL_PROMETHEUS_URL": "http://127.0.0.1:9090",
                 "VIGIL_HEARTBEAT": "watchdog=5m,team=platform", "VIGIL_ARGS": "",
                 # fontconfig (PDF postmortems) and matplotlib (their charts) cache here, not in a home
                 "XDG_CACHE_HOME": "/var/cache/vigil-notifier", "MPLCONFIGDIR": "/var/cache/vigil-notifier/matplotlib"},
    service=[Line("StateDirectory", "vigil-notifier",
                  why="the SQLite database (PostgreSQL: VIGIL_DB, docs/deploy.md) and the Web Push key"),
             Line("CacheDirectory", "vigil-notifier"),
             Line("LoadCredential", f"webhook-token:{ENV_DIR}/webhook-token",
                  why="the bearer token, root-only on disk, handed to the service in its credentials directory (%d)")],
    after=_NETWORK_ONLINE, wants=_NETWORK_ONLINE, role="central host",
)

AIOPS = Unit(
    name="vigil-aiops",
    description="vigil AIOps service (dynamic baselines, failure risk)",
    command=["aiops", "serve", "--listen", _env("VIGIL_LISTEN"), "--model-dir", Raw("%S/vigil-aiops"),
             "--prometheus-url", _env("VIGIL_PROMETHEUS_URL"), "--match", _env("VIGIL_MATCH"), _EXTRA],
    environment={"VIGIL_LISTEN": "127.0.0.1:9605", "VIGIL_PROMETHEUS_URL": "http://127.0.0.1:9090",
                 "VIGIL_MATCH": "vigil_gpu_utilization_ratio", "VIGIL_ARGS": ""},
    service=[Line("StateDirectory", "vigil-aiops", why="the model store (--model-dir)")],
    after=_NETWORK_ONLINE, wants=_NETWORK_ONLINE, role="central host",
)

UNITS = [GPU_EXPORTER, NODE_EXPORTER, NOTIFIER, AIOPS]


def unit_file(unit: Unit, vigil_bin: str = DEFAULT_VIGIL_BIN) -> UnitFile:
    environment = [Line("Environment", environment_line(key, value)) for key, value in unit.environment.items()]
    unit_lines = [Line("Description", unit.description), Line("After", " ".join(unit.after))]
    if unit.wants:
        unit_lines.append(Line("Wants", " ".join(unit.wants)))
    service = [
        Line("Type", "exec"),
        *environment,
        Line("EnvironmentFile", f"-{unit.env_file}", why=f"site settings override the defaults above ({unit.role})"),
        Line("ExecStart", exec_line([vigil_bin, *unit.command])),
        Line("Restart", "on-failure"),
        Line("RestartSec", "5s"),
        *unit.service,
        *hardening_lines(unit.relax),
    ]
    header = [f"{unit.file_name}: generated by `vigil deploy systemd build` (deploy/systemd/units.py); edit the "
              f"generator, or override in a drop-in (systemctl edit {unit.name}), not this file."]
    return UnitFile(header, {"Unit": unit_lines, "Service": service, "Install": [Line("WantedBy", "multi-user.target")]})


def render_units(vigil_bin: str = DEFAULT_VIGIL_BIN) -> dict[str, str]:
    """{file name: unit-file text} of every unit, with `vigil_bin` as the binary."""
    return {unit.file_name: render(unit_file(unit, vigil_bin)) for unit in UNITS}
