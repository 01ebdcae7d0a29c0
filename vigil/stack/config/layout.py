"""The run directory's layout: where each generated file, secret and data directory of a stack lives."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunLayout:
    """Paths inside the run directory `root` (docs/architecture.md, "Run directory", lists them)."""

    root: Path

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def secrets_dir(self) -> Path:
        return self.root / "secrets"

    @property
    def token_file(self) -> Path:
        return self.secrets_dir / "webhook-token"

    @property
    def vapid_key(self) -> Path:
        """The notifiers' Web Push (VAPID) private key, made by the first notifier to start."""
        return self.secrets_dir / "vapid-key.pem"

    @property
    def demo_password_file(self) -> Path:
        """The demo person's web-console password (the demo on-call file holds only its hash)."""
        return self.secrets_dir / "console-demo-password"

    @property
    def prometheus_config(self) -> Path:
        return self.root / "prometheus" / "prometheus.yml"

    @property
    def rules_dir(self) -> Path:
        return self.root / "prometheus" / "rules"

    @property
    def prometheus_data(self) -> Path:
        return self.root / "prometheus" / "data"

    @property
    def alertmanager_config(self) -> Path:
        return self.root / "alertmanager" / "alertmanager.yml"

    @property
    def alertmanager_data(self) -> Path:
        return self.root / "alertmanager" / "data"

    @property
    def oncall_config(self) -> Path:
        return self.root / "oncall.yaml"

    @property
    def notifier_db(self) -> Path:
        return self.root / "notifier.db"

    @property
    def aiops_dir(self) -> Path:
        return self.root / "aiops"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def lock_file(self) -> Path:
        return self.root / "supervisor.lock"

    @property
    def stopped_file(self) -> Path:
        """When the stack's supervisor last stopped (`{"stopped_at": RFC 3339}`; `runstate.record_stopped`)."""
        return self.root / "stopped.json"
