"""NVML field ids read in one batched `nvmlDeviceGetFieldValues` call per GPU per cycle.

One batched call replaces about 80 single calls on an 8-link-plus GPU (ECC counts, row remapping,
retired pages, PCIe replays, energy, recovery action, clock-limit violation times and three error counters
per NVLink). A field the
driver does not support comes back with its own NOT_SUPPORTED status; the reader then falls back to the
dedicated call for that value, so older drivers still export it.
"""

from __future__ import annotations

import ctypes
import struct
from typing import Any

ECC = {  # (error_type, counter_type) -> field id
    ("corrected", "volatile"): 3, ("uncorrected", "volatile"): 4,
    ("corrected", "aggregate"): 5, ("uncorrected", "aggregate"): 6,
}
RETIRED = {"multiple_single_bit": 29, "double_bit": 30}
RETIRED_PENDING = 31
MEMORY_TEMP = 82
TOTAL_ENERGY_MJ = 83
PCIE_REPLAY = 94
REMAPPED_CORRECTED, REMAPPED_UNCORRECTED, REMAPPED_PENDING, REMAPPED_FAILURE = 142, 143, 144, 145
NVLINK_DL = {"replay": 161, "recovery": 162, "crc_flit": 163}  # scopeId = link
RECOVERY_ACTION = 230
# time spent under each clock-limiting policy, in ns: the same counters as nvmlDeviceGetViolationStatus
# (checked on an H100, driver 580: equal values, the field a sample older), six calls of about 0.8 ms
# each there against 0.5 ms more for the whole batch
VIOLATION = {0: 74, 1: 75, 2: 76, 3: 77, 4: 78, 5: 79}  # NVML_PERF_POLICY_* -> NVML_FI_DEV_PERF_POLICY_*

_UNSCOPED = (*ECC.values(), *RETIRED.values(), RETIRED_PENDING, MEMORY_TEMP, TOTAL_ENERGY_MJ, PCIE_REPLAY,
             REMAPPED_CORRECTED, REMAPPED_UNCORRECTED, REMAPPED_PENDING, REMAPPED_FAILURE, RECOVERY_ACTION,
             *VIOLATION.values())

FieldValues = dict[tuple[int, int], float]


def request(links: list[int]) -> list[tuple[int, int]]:
    """The (field id, scope id) pairs to read for a GPU with the given active NVLinks."""
    return [(field, 0) for field in _UNSCOPED] + [(field, link) for link in links for field in NVLINK_DL.values()]


def parse(values: Any) -> FieldValues:
    """{(field id, scope id): value} of the fields that answered; failed fields are left out."""
    return _parse_raw(values) if isinstance(values, ctypes.Array) else {}  # None: the call failed


# the struct format of the union member named by valueType (NVML_VALUE_TYPE_*: an ABI constant of NVML)
_UNION_FORMAT = {0: struct.Struct("=d"), 1: struct.Struct("=I"), 2: struct.Struct("=L"), 3: struct.Struct("=Q"),
                 4: struct.Struct("=q"), 5: struct.Struct("=i"), 6: struct.Struct("=H")}
_U32 = struct.Struct("=I")


def _parse_raw(values: ctypes.Array) -> FieldValues:
    """Decode pynvml's ctypes array from its bytes, using the struct's own field offsets.

    Reading ~70 records attribute by attribute goes through pynvml's Python-level __getattribute__
    five times per record; this was the largest cost of a collection cycle."""
    record = values._type_
    size = ctypes.sizeof(record)
    field_at, scope_at = record.fieldId.offset, record.scopeId.offset
    type_at, ret_at, value_at = record.valueType.offset, record.nvmlReturn.offset, record.value.offset
    raw = ctypes.string_at(ctypes.addressof(values), ctypes.sizeof(values))
    out: FieldValues = {}
    unpack = _U32.unpack_from
    for base in range(0, len(raw), size):
        if unpack(raw, base + ret_at)[0] != 0:
            continue
        kind = _UNION_FORMAT.get(unpack(raw, base + type_at)[0], _UNION_FORMAT[3])
        out[(unpack(raw, base + field_at)[0], unpack(raw, base + scope_at)[0])] = kind.unpack_from(raw, base + value_at)[0]
    return out
