"""Stable identities of simulated GPUs: UUIDs, serial numbers and PCI bus ids.

All are pure functions of the node name and GPU index, so a GPU keeps its identity across runs and
the AIOps history generated offline matches what the live simulator exports.
"""

from __future__ import annotations

import hashlib
import zlib

# PCI buses of the eight GPUs of an HGX H100 board (domain 0); a ninth GPU onward gets the next board
_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


def _uuid(prefix: str, key: str) -> str:
    digits = hashlib.sha256(key.encode()).hexdigest()
    return f"{prefix}-{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:32]}"


def device_uuid(node: str, index: int) -> str:
    """`GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` of a simulated GPU."""
    return _uuid("GPU", f"{node}/gpu{index}")


def mig_uuid(node: str, gpu: int, slot: int) -> str:
    """`MIG-...` UUID of MIG instance `slot` on a simulated GPU."""
    return _uuid("MIG", f"{node}/gpu{gpu}/mig{slot}")


def device_serial(node: str, index: int) -> str:
    """A 13-digit board serial number."""
    return f"{1650000000000 + zlib.crc32(f'{node}/{index}'.encode()) % 10**9:013d}"


def pci_bus(index: int) -> int:
    """PCI bus number of the GPU (0x18, 0x2A, ... on the first board)."""
    return _BUSES[index % 8] + 0x100 * (index // 8)
