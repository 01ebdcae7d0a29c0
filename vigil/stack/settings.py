"""Stack settings: one validated object built from the config file and the command line.

Precedence: command-line flags > config file (`--config vigil.yaml`) > defaults. The stack listens on
loopback only; a non-loopback host is refused because the demo components have no TLS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from vigil.common.click_types import is_http_url
from vigil.common.durations import parse_duration
from vigil.common.yaml_source import Located, line_at, plain, read_yaml
from vigil.notifier.heartbeat_spec import MAX_TIMEOUT_S
from vigil.notifier.settings import DEFAULT_RESOLVE_GONE_AFTER_S

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
MAX_SIM_NODES = 89  # node targets use port_base+10 … port_base+99
HA_PORTS = 9  # the ha profile's extra components take port_base+91 … port_base+99 (stack_config.ha)
# the sharded profile's extra components take port_base+90 … port_base+99 (stack_config.sharded), which
# holds up to MAX_SHARDS Prometheus shards and as many AIOps services
SHARDED_PORTS = 10
MAX_SHARDS = 5


class Ports(BaseModel):
    """Port layout derived from one base port, so two stacks side by side differ by one flag."""

    model_config = ConfigDict(frozen=True)
    base: int

    @property
    def prometheus(self) -> int:
        return self.base

    @property
    def alertmanager(self) -> int:
        return self.base + 1

    @property
    def node_exporter(self) -> int:
        return self.base + 2

    @property
    def notifier(self) -> int:
        return self.base + 3

    @property
    def gpu_control(self) -> int:
        return self.base + 4

    @property
    def aiops(self) -> int:
        return self.base + 5

    @property
    def node_health(self) -> int:
        return self.base + 6

    def gpu_node(self, index: int) -> int:
        """Port of simulated GPU node `index` (1-based)."""
        return self.base + 9 + index


def _seconds(value: Any) -> Any:
    """A duration written as text (`30s`, `1h30m`, `10`) as seconds; numbers and the rest go to pydantic."""
    return parse_duration(value) if isinstance(value, str) else value


Seconds = Annotated[float, BeforeValidator(_seconds)]


class StackSettings(BaseModel):
    """Everything `vigil up` needs; durations are seconds (the file may also write `30s`, `1h30m`)."""

    model_config = ConfigDict(extra="forbid")

    run_dir: Path = Path(".vigil")
    host: str = "127.0.0.1"
    port_base: int = Field(9600, ge=1024, le=65400)
    sim_nodes: int = Field(4, ge=1, le=MAX_SIM_NODES)
    sim_gpus: int = Field(8, ge=1, le=16)
    sim_jobs: int = Field(6, ge=0, le=1000)  # simulated training jobs (exporters.sim.jobs); 0: none
    sim_job_hangs: float = Field(0.0, ge=0, le=0.85)  # share of jobs that hang on their own; 0: only chaos job-hang
    scrape_interval: Seconds = Field(2.0, gt=0, le=300)
    evaluation_interval: Seconds = Field(2.0, gt=0, le=300)
    exporter_interval: Seconds = Field(1.0, gt=0, le=60)
    group_wait: Seconds = Field(1.0, ge=0, le=600)
    group_interval: Seconds = Field(2.0, gt=0, le=3600)
    repeat_interval: Seconds = Field(4 * 3600.0, gt=0)
    resend_delay: Seconds = Field(2.0, gt=0, le=300)
    # the Watchdog reaches the notifier's heartbeat every `watchdog_repeat_interval`; the notifier pages
    # when it has not heard it for `heartbeat_timeout` (docs/notifier.md, Heartbeats)
    watchdog_repeat_interval: Seconds = Field(60.0, gt=0, le=3600)
    heartbeat_timeout: Seconds = Field(180.0, gt=0, le=MAX_TIMEOUT_S)  # the notifier's own bound
    # the notifier resolves an incident whose alerts Alertmanager has not held this long (docs/notifier.md)
    resolve_gone_after: Seconds = Field(DEFAULT_RESOLVE_GONE_AFTER_S, gt=0)
    max_for: Seconds | None = Field(10.0, ge=0, description="cap on every rule's `for` (None: as written)")
    # the demo on-call file's `incidents.resolve_after`: a resolution waits this long, so an alert that
    # flaps (resolves and fires again within it) stays one incident and one page (docs/oncall.md)
    resolve_after: Seconds = Field(60.0, ge=0, le=86400)
    aiops: bool = True
    backfill_days: float = Field(14.0, ge=0, le=30)
    node_health: bool = True
    oncall_config: Path | None = None
    # every component's log level (the notifier and AIOps service, Prometheus, Alertmanager, node_exporter);
    # at every level no secret is written in clear (docs/architecture.md, Secrets)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # "ha": two Prometheus replicas, a 3-peer Alertmanager cluster, two notifiers on one PostgreSQL and
    # VictoriaMetrics (docs/scaling.md, "HA topology"); "sharded": `shards` hashmod Prometheus shards, one
    # AIOps service each, VictoriaMetrics and vmalert for the global rules (docs/scaling.md, "Sharded
    # topology"); "single": one of each (the default)
    profile: Literal["single", "ha", "sharded"] = "single"
    shards: int = Field(2, ge=2, le=MAX_SHARDS)  # sharded: how many Prometheus shards
    database_url: str | None = None  # ha: the notifiers' PostgreSQL (None: a throwaway server in the run dir)
    grafana_url: str | None = None  # the Grafana with vigil's dashboards: firing pages link to them

    @field_validator("grafana_url")
    @classmethod
    def _grafana_is_a_url(cls, value: str | None) -> str | None:
        if value is not None and not is_http_url(value):
            raise ValueError(f"{value!r} is not an http:// or https:// URL with a host (e.g. http://127.0.0.1:3000)")
        return value

    @field_validator("host")
    @classmethod
    def _loopback_only(cls, value: str) -> str:
        if value not in LOOPBACK_HOSTS:
            raise ValueError(f"{value!r} is not a loopback address; the local stack listens on loopback only")
        return value

    @model_validator(mode="after")
    def _ha_fits(self) -> "StackSettings":
        problems = []
        if self.profile == "ha" and self.sim_nodes > MAX_SIM_NODES - HA_PORTS:
            problems.append(f"the ha profile runs at most {MAX_SIM_NODES - HA_PORTS} simulated nodes "
                            f"(its extra components use the top {HA_PORTS} ports of the range)")
        if self.profile == "sharded" and self.sim_nodes > MAX_SIM_NODES - SHARDED_PORTS:
            problems.append(f"the sharded profile runs at most {MAX_SIM_NODES - SHARDED_PORTS} simulated nodes "
                            f"(its extra components use the top {SHARDED_PORTS} ports of the range)")
        if "shards" in self.model_fields_set and self.profile != "sharded":
            problems.append(f"shards is the sharded profile's (the profile is {self.profile}; add profile: sharded)")
        if self.database_url is not None and self.profile != "ha":
            problems.append("database_url is the ha profile's (the single profile's notifier keeps SQLite in the run dir)")
        if self.database_url is not None and not self.database_url.startswith("postgresql://"):
            problems.append("database_url must be a postgresql://USER@HOST:PORT/DB URL (two notifiers share it)")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _intervals_consistent(self) -> "StackSettings":
        if self.evaluation_interval < self.scrape_interval / 4:
            raise ValueError("evaluation_interval is far below scrape_interval; rules would see stale data")
        beat = self.watchdog_repeat_interval + self.group_interval  # the longest gap between two Watchdog posts
        if self.heartbeat_timeout < 2 * beat:
            raise ValueError(f"heartbeat_timeout must be at least twice watchdog_repeat_interval + group_interval "
                             f"({2 * beat:g}s): one late Watchdog notification would page")
        return self

    @property
    def ports(self) -> Ports:
        return Ports(base=self.port_base)

    @property
    def run_path(self) -> Path:
        return self.run_dir.resolve()


class SettingsError(Exception):
    """A configuration mistake the user must fix; the message lists every problem (`file:line: ...`)."""


def load_settings(config_file: Path | None, overrides: dict[str, Any]) -> StackSettings:
    """Merge the config file (if any) with command-line overrides (None values are ignored).

    The file's settings are the `stack:` mapping (or the whole file when it has no `stack:` key). Every
    mistake is reported at once, a mistake in the file as `file:line: key: message`.
    """
    section: Located | None = None
    document = None
    problems: list[tuple[int, str]] = []
    if config_file is not None:
        document = read_yaml(config_file, "stack config")
        if not document.readable:
            raise SettingsError("\n".join(document.messages()))
        section, problems = _settings_section(document.root)
    data = plain(section) if section is not None else {}
    given = {key: value for key, value in overrides.items() if value is not None}
    data.update(given)
    command_line: list[str] = []
    try:
        settings = StackSettings(**data)
    except ValidationError as exc:
        settings = None
        for error in exc.errors():
            loc = error["loc"]
            message = _message(error)
            if loc and loc[0] in given:
                command_line.append(f"{_name(loc)}: {message} (from the command line)")
            elif section is not None:
                problems.append((line_at(section, loc), f"{_name(loc)}: {message}"))
            else:
                command_line.append(f"{_name(loc)}: {message}")
    if problems or command_line or (document is not None and document.problems):
        raise SettingsError("\n".join([*(document.messages(problems) if document else []), *command_line]))
    return settings


def _settings_section(root: Located | None) -> tuple[Located | None, list[tuple[int, str]]]:
    """The mapping of settings in the file (`stack:` or the top level), and what is wrong with its shape."""
    if root is None:
        return None, []  # an empty file: the defaults
    if not root.is_map():
        return None, [(root.line, "expected a mapping of settings (under `stack:`) at the top level")]
    section = root.value.get("stack", root)
    if not section.is_map():
        return None, [(section.line, "`stack` must be a mapping of settings")]
    return section, []


def _name(loc: tuple) -> str:
    return ".".join(map(str, loc)) or "settings"


def _message(error: dict) -> str:
    if error["type"] == "extra_forbidden":
        return f"unknown setting (known: {', '.join(StackSettings.model_fields)})"
    return error["msg"].removeprefix("Value error, ")
