"""Stack settings: one validated object built from the config file and the command line.

Precedence: command-line flags > config file (`--config vigil.yaml`) > defaults. The stack listens on
loopback only; a non-loopback host is refused because the demo components have no TLS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
MAX_SIM_NODES = 89  # node targets use port_base+10 … port_base+99


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


class StackSettings(BaseModel):
    """Everything `vigil up` needs; durations are seconds."""

    model_config = ConfigDict(extra="forbid")

    run_dir: Path = Path(".vigil")
    host: str = "127.0.0.1"
    port_base: int = Field(9600, ge=1024, le=65400)
    sim_nodes: int = Field(4, ge=1, le=MAX_SIM_NODES)
    sim_gpus: int = Field(8, ge=1, le=16)
    scrape_interval: float = Field(2.0, gt=0, le=300)
    evaluation_interval: float = Field(2.0, gt=0, le=300)
    exporter_interval: float = Field(1.0, gt=0, le=60)
    group_wait: float = Field(1.0, ge=0, le=600)
    group_interval: float = Field(2.0, gt=0, le=3600)
    repeat_interval: float = Field(4 * 3600.0, gt=0)
    resend_delay: float = Field(2.0, gt=0, le=300)
    max_for: float | None = Field(10.0, ge=0, description="cap on every rule's `for` (None: as written)")
    aiops: bool = True
    backfill_days: float = Field(14.0, ge=0, le=30)
    node_health: bool = True
    oncall_config: Path | None = None

    @field_validator("host")
    @classmethod
    def _loopback_only(cls, value: str) -> str:
        if value not in LOOPBACK_HOSTS:
            raise ValueError(f"{value!r} is not a loopback address; the local stack listens on 127.0.0.1 only")
        return value

    @model_validator(mode="after")
    def _intervals_consistent(self) -> "StackSettings":
        if self.evaluation_interval < self.scrape_interval / 4:
            raise ValueError("evaluation_interval is far below scrape_interval; rules would see stale data")
        return self

    @property
    def ports(self) -> Ports:
        return Ports(base=self.port_base)

    @property
    def run_path(self) -> Path:
        return self.run_dir.resolve()


class SettingsError(Exception):
    """A configuration mistake the user must fix; the message lists every problem."""


def load_settings(config_file: Path | None, overrides: dict[str, Any]) -> StackSettings:
    """Merge the config file (if any) with command-line overrides (None values are ignored)."""
    data: dict[str, Any] = {}
    if config_file is not None:
        try:
            loaded = yaml.safe_load(config_file.read_text()) or {}
        except OSError as exc:
            raise SettingsError(f"{config_file}: cannot read: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{config_file}:{mark.line + 1}" if mark else str(config_file)
            raise SettingsError(f"{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
        if not isinstance(loaded, dict):
            raise SettingsError(f"{config_file}: expected a mapping of settings at the top level")
        data.update(loaded.get("stack", loaded))
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return StackSettings(**data)
    except ValidationError as exc:
        where = f"{config_file}: " if config_file else ""
        problems = [f"{where}{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors()]
        raise SettingsError("\n".join(problems)) from None
