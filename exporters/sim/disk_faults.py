"""Disk faults of the simulated fleet (`disk-failing`), held beside the GPU faults of `SimulatedFleet`.

The GPU fleet's process serves the chaos API but not the disks: the node health exporter
(`vigil exporter node --simulate --sim-chaos-url`) reads these faults back from GET /chaos at each SMART
pass (`exporters.sim.smart.ChaosDiskFaults`) and degrades the disk's SMART data from the injection time.
"""

from __future__ import annotations

import threading

from vigil.exporters.sim.faults import DISK_FAULTS, Fault


class DiskFaults:
    """The active disk faults, one per (node, disk); thread-safe (the chaos API serves requests in threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: dict[tuple[str, int], Fault] = {}

    def inject(self, fault: Fault) -> Fault:
        """Record `fault`; return the active fault of that disk (a second injection keeps the first one's
        start: the disk goes on degrading from there)."""
        if fault.fault not in DISK_FAULTS:
            raise ValueError(f"{fault.fault!r} is not a disk fault")
        with self._lock:
            return self._faults.setdefault((fault.node, fault.params.get("disk", 0)), fault)

    def clear(self, node: str | None = None) -> int:
        """Forget the faults of `node` (every node for None), as a disk replacement would; count them."""
        with self._lock:
            gone = [key for key in self._faults if node is None or key[0] == node]
            for key in gone:
                del self._faults[key]
        return len(gone)

    def faults(self, order: list[str]) -> list[Fault]:
        """Active disk faults sorted by node (in `order`, the fleet's node order) and disk."""
        rank = {name: i for i, name in enumerate(order)}
        with self._lock:
            items = sorted(self._faults.items(), key=lambda item: (rank.get(item[0][0], len(rank)), item[0][1]))
        return [fault for _, fault in items]
