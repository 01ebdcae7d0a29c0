"""NVML field ids read in one batched `nvmlDeviceGetFieldValues` call per GPU per cycle.

One batched call replaces about 80 single calls on an 8-link-plus GPU (ECC counts, row remapping,
retired pages, PCIe replays, energy, recovery action and three error counters per NVLink). A field the
driver does not support comes back with its own NOT_SUPPORTED status; the reader then falls back to the
dedicated call for that value, so older drivers still export it.
"""

from __future__ import annotations

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

_UNSCOPED = (*ECC.values(), *RETIRED.values(), RETIRED_PENDING, MEMORY_TEMP, TOTAL_ENERGY_MJ, PCIE_REPLAY,
             REMAPPED_CORRECTED, REMAPPED_UNCORRECTED, REMAPPED_PENDING, REMAPPED_FAILURE, RECOVERY_ACTION)

FieldValues = dict[tuple[int, int], float]


def request(links: list[int]) -> list[tuple[int, int]]:
    """The (field id, scope id) pairs to read for a GPU with the given active NVLinks."""
    return [(field, 0) for field in _UNSCOPED] + [(field, link) for link in links for field in NVLINK_DL.values()]


def parse(values: Any) -> FieldValues:
    """{(field id, scope id): value} of the fields that answered; failed fields are left out."""
    out: FieldValues = {}
    for value in values or ():
        if value.nvmlReturn == 0:
            # the union member named by valueType (NVML_VALUE_TYPE_*: an ABI constant of NVML)
            out[(value.fieldId, value.scopeId)] = getattr(value.value, _UNION_MEMBER.get(value.valueType, "ullVal"))
    return out


_UNION_MEMBER = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
