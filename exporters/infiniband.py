"""InfiniBand port state and error counters from sysfs (`/sys/class/infiniband/<dev>/ports/<n>/`).

Plain file reads, cheap enough for every scrape. The root is configurable so tests build a fake tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# Counters in ports/<n>/counters/ that count errors (the data and packet counters are node_exporter's).
ERROR_COUNTERS = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
)


@dataclass
class IbPort:
    device: str
    port: str
    state: str  # e.g. "ACTIVE", "DOWN", "INIT"
    physical_state: str  # e.g. "LinkUp", "Polling", "Disabled"
    rate: str  # e.g. "200 Gb/sec (4X HDR)"
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def up(self) -> bool:
        return self.state == "ACTIVE" and self.physical_state == "LinkUp"


def _read_state(path: Path) -> str:
    """sysfs writes states as "4: ACTIVE"; keep the name."""
    try:
        text = path.read_text().strip()
    except OSError:
        return ""
    return text.split(":", 1)[-1].strip()


def read_ports(sysfs_root: str | Path = "/sys") -> list[IbPort]:
    """Every port of every InfiniBand device under `sysfs_root`; [] when there is none."""
    base = Path(sysfs_root) / "class" / "infiniband"
    ports = []
    for dev_dir in sorted(base.glob("*")):
        for port_dir in sorted((dev_dir / "ports").glob("*")):
            rate = port_dir / "rate"
            port = IbPort(
                device=dev_dir.name,
                port=port_dir.name,
                state=_read_state(port_dir / "state"),
                physical_state=_read_state(port_dir / "phys_state"),
                rate=rate.read_text().strip() if rate.is_file() else "",
            )
            for counter in ERROR_COUNTERS:
                try:
                    port.errors[counter] = int((port_dir / "counters" / counter).read_text().strip())
                except (OSError, ValueError):
                    continue  # counter absent on this HCA or unreadable: skip, don't invent a zero
            ports.append(port)
    return ports
