"""How dcgm-exporter's fields map to vigil's GPU metrics, for both of its naming schemes.

dcgm-exporter 4.9.0 renamed 23 default fields to their DCGM 4.7 names and changed units on eleven of
them (MHz→Hz, mJ→J, %→0–1, MiB→bytes); the driver label `DCGM_FI_DRIVER_VERSION` became
`DCGM_FI_SYSTEM_DRIVER_VERSION`, and 4.8.3 renamed `Hostname` to `hostname`. One `FieldMap` row holds
both names of a field, the unit each is published in and the vigil metric (plus fixed labels) it becomes.
`docs/exporters-dcgm-node.md` carries the same table for readers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

# Unit of a DCGM value -> conversion to vigil's base unit. Divisions (not multiplications by 0.01 or
# 1e-3) because IEEE division is correctly rounded: 87 / 100 is the same double as float("0.87"), so a
# pre-4.9 page and a 4.9 page of the same GPU give bit-identical vigil values.
TO_BASE_UNIT: dict[str, Callable[[float], float]] = {
    "": lambda v: v,
    "C": lambda v: v,
    "W": lambda v: v,
    "Hz": lambda v: v,
    "J": lambda v: v,
    "B": lambda v: v,
    "s": lambda v: v,
    "ratio": lambda v: v,
    "MHz": lambda v: v * 1_000_000,
    "mJ": lambda v: v / 1000,
    "%": lambda v: v / 100,
    "MiB": lambda v: v * 1_048_576,
    "ns": lambda v: v / 1e9,
}


@dataclass(frozen=True)
class FieldMap:
    """One DCGM field under its pre-4.9 and 4.9 names, and the vigil series it becomes."""

    old: str
    old_unit: str
    new: str
    new_unit: str
    metric: str
    labels: tuple[tuple[str, str], ...] = ()


def _row(old, old_unit, new, new_unit, metric, **labels) -> FieldMap:
    return FieldMap(old, old_unit, new, new_unit, metric, tuple(sorted(labels.items())))


_F = "DCGM_FI_DEV_"
_P = "DCGM_FI_PROF_"
FIELD_MAPS: tuple[FieldMap, ...] = (
    _row(_F + "SM_CLOCK", "MHz", _F + "SM_CLOCK_HERTZ", "Hz", "vigil_gpu_clock_hertz", clock="sm"),
    _row(_F + "MEM_CLOCK", "MHz", _F + "MEMORY_CLOCK_HERTZ", "Hz", "vigil_gpu_clock_hertz", clock="memory"),
    _row(_F + "GPU_TEMP", "C", _F + "GPU_TEMP_CELSIUS", "C", "vigil_gpu_temperature_celsius", sensor="gpu"),
    _row(_F + "MEMORY_TEMP", "C", _F + "MEMORY_TEMP_CELSIUS", "C", "vigil_gpu_temperature_celsius", sensor="memory"),
    _row(_F + "POWER_USAGE", "W", _F + "BOARD_POWER_WATTS", "W", "vigil_gpu_power_watts"),
    _row(_F + "POWER_MGMT_LIMIT", "W", _F + "POWER_MGMT_LIMIT", "W", "vigil_gpu_power_limit_watts"),
    _row(_F + "TOTAL_ENERGY_CONSUMPTION", "mJ", _F + "GPU_ENERGY_JOULES_TOTAL", "J", "vigil_gpu_energy_joules_total"),
    _row(_F + "GPU_UTIL", "%", _F + "GPU_UTIL_RATIO", "ratio", "vigil_gpu_utilization_ratio"),
    _row(_F + "MEM_COPY_UTIL", "%", _F + "MEMORY_UTIL_RATIO", "ratio", "vigil_gpu_memory_utilization_ratio"),
    _row(_F + "FB_FREE", "MiB", _F + "FB_FREE_BYTES", "B", "vigil_gpu_memory_free_bytes"),
    _row(_F + "FB_USED", "MiB", _F + "FB_USED_BYTES", "B", "vigil_gpu_memory_used_bytes"),
    _row(_F + "FB_TOTAL", "MiB", _F + "FB_CAPACITY_BYTES", "B", "vigil_gpu_memory_total_bytes"),
    _row(_F + "FB_RESERVED", "MiB", _F + "FB_RESERVED_BYTES", "B", "vigil_gpu_memory_reserved_bytes"),
    _row(_F + "FAN_SPEED", "%", _F + "FAN_SPEED_RATIO", "ratio", "vigil_gpu_fan_speed_ratio"),
    _row(_F + "PSTATE", "", _F + "PSTATE", "", "vigil_gpu_performance_state"),
    _row(_F + "PCIE_REPLAY_COUNTER", "", _F + "PCIE_REPLAY_TOTAL", "", "vigil_gpu_pcie_replays_total"),
    _row(_F + "XID_ERRORS", "", _F + "XID_ERROR", "", "vigil_gpu_last_xid_code"),
    _row(_F + "ECC_SBE_VOL_TOTAL", "", _F + "ECC_SBE_VOL_TOTAL", "", "vigil_gpu_ecc_errors_total",
         error_type="corrected", counter_type="volatile"),
    _row(_F + "ECC_DBE_VOL_TOTAL", "", _F + "ECC_DBE_VOL_TOTAL", "", "vigil_gpu_ecc_errors_total",
         error_type="uncorrected", counter_type="volatile"),
    _row(_F + "ECC_SBE_AGG_TOTAL", "", _F + "ECC_SBE_AGG_TOTAL", "", "vigil_gpu_ecc_errors_total",
         error_type="corrected", counter_type="aggregate"),
    _row(_F + "ECC_DBE_AGG_TOTAL", "", _F + "ECC_DBE_AGG_TOTAL", "", "vigil_gpu_ecc_errors_total",
         error_type="uncorrected", counter_type="aggregate"),
    _row(_F + "RETIRED_SBE", "", _F + "PAGE_RETIRED_SBE_TOTAL", "", "vigil_gpu_retired_pages_total",
         cause="multiple_single_bit"),
    _row(_F + "RETIRED_DBE", "", _F + "PAGE_RETIRED_DBE_TOTAL", "", "vigil_gpu_retired_pages_total",
         cause="double_bit"),
    _row(_F + "RETIRED_PENDING", "", _F + "PAGE_RETIRED_PENDING", "", "vigil_gpu_retired_pages_pending"),
    _row(_F + "CORRECTABLE_REMAPPED_ROWS", "", _F + "ROW_REMAP_CORRECTABLE_TOTAL", "",
         "vigil_gpu_remapped_rows_total", error_type="corrected"),
    _row(_F + "UNCORRECTABLE_REMAPPED_ROWS", "", _F + "ROW_REMAP_UNCORRECTABLE_TOTAL", "",
         "vigil_gpu_remapped_rows_total", error_type="uncorrected"),
    _row(_F + "ROW_REMAP_PENDING", "", _F + "ROW_REMAP_PENDING", "", "vigil_gpu_remap_pending"),
    _row(_F + "ROW_REMAP_FAILURE", "", _F + "ROW_REMAP_FAILED", "", "vigil_gpu_remap_failure"),
    # dcgm-exporter publishes NVLink error counters summed over links; vigil labels that sum link="all".
    _row(_F + "NVLINK_REPLAY_ERROR_COUNT_TOTAL", "", _F + "NVLINK_REPLAY_ERROR_COUNT_TOTAL", "",
         "vigil_gpu_nvlink_errors_total", link="all", error_type="replay"),
    _row(_F + "NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "", _F + "NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "",
         "vigil_gpu_nvlink_errors_total", link="all", error_type="recovery"),
    _row(_F + "NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "", _F + "NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "",
         "vigil_gpu_nvlink_errors_total", link="all", error_type="crc_flit"),
    _row(_F + "NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "", _F + "NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "",
         "vigil_gpu_nvlink_errors_total", link="all", error_type="crc_data"),
    _row(_F + "POWER_VIOLATION", "ns", _F + "GPU_POWER_THROTTLE_SECONDS_TOTAL", "s",
         "vigil_gpu_clock_event_seconds_total", reason="power"),
    _row(_F + "THERMAL_VIOLATION", "ns", _F + "GPU_THERMAL_THROTTLE_SECONDS_TOTAL", "s",
         "vigil_gpu_clock_event_seconds_total", reason="thermal"),
    _row(_F + "SYNC_BOOST_VIOLATION", "ns", _F + "GPU_SYNC_BOOST_THROTTLE_SECONDS_TOTAL", "s",
         "vigil_gpu_clock_event_seconds_total", reason="sync_boost"),
    _row(_P + "GR_ENGINE_ACTIVE", "ratio", _P + "GR_ENGINE_UTIL_RATIO", "ratio", "vigil_gpu_graphics_engine_active_ratio"),
    _row(_P + "SM_ACTIVE", "ratio", _P + "SM_UTIL_RATIO", "ratio", "vigil_gpu_sm_active_ratio"),
    _row(_P + "SM_OCCUPANCY", "ratio", _P + "SM_OCCUPANCY_RATIO", "ratio", "vigil_gpu_sm_occupancy_ratio"),
    _row(_P + "PIPE_TENSOR_ACTIVE", "ratio", _P + "TENSOR_UTIL_RATIO", "ratio", "vigil_gpu_tensor_pipe_active_ratio"),
    _row(_P + "DRAM_ACTIVE", "ratio", _P + "DRAM_UTIL_RATIO", "ratio", "vigil_gpu_dram_active_ratio"),
)

# The clock-event bitmask (pre-4.9 DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, 4.9 DCGM_FI_DEV_CLOCKS_EVENT_REASONS);
# bits as in nvml.h / DCGM_CLOCKS_EVENT_REASON_*; labels as the NVML backend (exporters.gpu_reader) writes them.
CLOCK_EVENT_FIELDS = (_F + "CLOCK_THROTTLE_REASONS", _F + "CLOCKS_EVENT_REASONS")
CLOCK_EVENT_BITS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal"),
    (0x40, "hw_thermal"),
    (0x80, "hw_power_brake"),
)

HOSTNAME_LABELS = ("hostname", "Hostname")  # 4.8.3+ first
DRIVER_LABELS = ("DCGM_FI_SYSTEM_DRIVER_VERSION", "DCGM_FI_DRIVER_VERSION")  # 4.9+ first
MIG_INSTANCE_LABEL = "GPU_I_ID"

# DCGM "blank" values that leak when a field is unsupported, not found or not permitted: the INT64
# range starting at 0x7ffffffffffffff0 (e.g. 9223372036854775794), the INT32 range from 0x7ffffff0 and
# the FP64 values 2**47 .. 2**47+3 (DCGM_FP64_BLANK and friends).
# Integers, not floats: the parser returns ints for integer text, and float(0x7ffffffffffffff0) rounds up
# to 2**63, which the leaked int 9223372036854775794 is below. Python compares int and float exactly.
_INT64_BLANK = 0x7FFFFFFFFFFFFFF0
_INT32_BLANKS = frozenset(range(0x7FFFFFF0, 0x80000000))
_FP64_BLANKS = frozenset(2**47 + i for i in range(4))


def is_blank(value: float) -> bool:
    """True when `value` is one of DCGM's sentinels for "no value", never a measurement."""
    return value >= _INT64_BLANK or value in _INT32_BLANKS or value in _FP64_BLANKS


def field_index() -> dict[str, tuple[FieldMap, str]]:
    """DCGM field name (either scheme) -> (its row, the unit it is published in)."""
    index: dict[str, tuple[FieldMap, str]] = {}
    for row in FIELD_MAPS:
        index[row.old] = (row, row.old_unit)
        index.setdefault(row.new, (row, row.new_unit))
    return index
