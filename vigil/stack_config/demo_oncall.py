"""The demo's on-call file, used when the settings name none: one DRI whose pages land in the local inbox."""

from __future__ import annotations


def demo_oncall_config() -> dict:
    return {
        "targets": {"demo-dri": {"name": "Demo DRI", "channels": [{"type": "inbox"}]}},
        "routes": [
            {"match": {"severity": "critical"}, "notify": "demo-dri"},
            {"match": {"severity": "warning"}, "notify": "demo-dri"},
        ],
        "default": "demo-dri",
    }
