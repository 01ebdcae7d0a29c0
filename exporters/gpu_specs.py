"""Every metric the NVML GPU exporter publishes, declared once (names and labels are a contract).

The collector builds its metric families from `SPECS` and `docs/metrics.md` is generated from it.
All per-GPU metrics carry `node`, `gpu` (index) and `uuid`.
"""

from __future__ import annotations

from vigil.exporters.spec import MetricSpec

GPU = ("node", "gpu", "uuid")


def _spec(name: str, type_: str, unit: str, labels: tuple[str, ...], help_: str, source: str) -> MetricSpec:
    return MetricSpec(name=name, type=type_, unit=unit, labels=labels, help=help_, source=source)


# The DCGM profiling metrics, declared once for both backends (`exporters.dcgm` publishes these with its
# own source). NVML computes them with GPM (GPU Performance Monitoring, Hopper and newer) between the
# samples of two consecutive cycles (`exporters.gpm`): (name, NVML_GPM_METRIC_* it comes from, help).
_PROFILING = (
    ("vigil_gpu_sm_active_ratio", "SM_UTIL", "Fraction of time at least one warp was resident, averaged over SMs."),
    ("vigil_gpu_sm_occupancy_ratio", "SM_OCCUPANCY", "Resident warps relative to the SM maximum."),
    ("vigil_gpu_tensor_pipe_active_ratio", "ANY_TENSOR_UTIL", "Fraction of cycles the tensor pipe was active."),
    ("vigil_gpu_dram_active_ratio", "DRAM_BW_UTIL", "Fraction of cycles the memory interface was busy."),
)
GPM_METRICS = {name: f"NVML_GPM_METRIC_{metric}" for name, metric, _ in _PROFILING}  # metric -> pynvml constant
PROFILING: list[MetricSpec] = [
    _spec(name, "gauge", "ratio", GPU, help_,
          f"nvmlGpmMetricsGet {GPM_METRICS[name]} / 100 (Hopper and newer; from the second cycle on)")
    for name, _, help_ in _PROFILING]

SPECS: list[MetricSpec] = [
    _spec("vigil_gpu_up", "gauge", "", GPU,
          "1 when NVML answers for the GPU, 0 when it is lost (GPU_IS_LOST, RESET_REQUIRED, GPU_NOT_FOUND)",
          "nvmlDeviceGetHandleByIndex / any per-GPU call"),
    _spec("vigil_gpu_collection_stalled", "gauge", "", GPU,
          "1 while a read of the GPU has been stuck in NVML longer than --gpu-timeout (the GPU then shows up 0)",
          "exporter"),
    _spec("vigil_gpu_info", "info", "", GPU + ("name", "driver", "cuda", "pci_bus_id", "serial"),
          "Static description of the GPU; always 1",
          "nvmlDeviceGetName, nvmlSystemGetDriverVersion, nvmlSystemGetCudaDriverVersion, nvmlDeviceGetPciInfo, nvmlDeviceGetSerial"),
    _spec("vigil_gpu_utilization_ratio", "gauge", "ratio", GPU,
          "Fraction of the last sample period during which a kernel ran", "nvmlDeviceGetUtilizationRates().gpu"),
    _spec("vigil_gpu_memory_utilization_ratio", "gauge", "ratio", GPU,
          "Fraction of the last sample period during which device memory was read or written",
          "nvmlDeviceGetUtilizationRates().memory"),
    *PROFILING,
    _spec("vigil_gpu_memory_used_bytes", "gauge", "bytes", GPU, "Device memory in use", "nvmlDeviceGetMemoryInfo().used"),
    _spec("vigil_gpu_memory_free_bytes", "gauge", "bytes", GPU, "Device memory free", "nvmlDeviceGetMemoryInfo().free"),
    _spec("vigil_gpu_memory_total_bytes", "gauge", "bytes", GPU, "Device memory installed", "nvmlDeviceGetMemoryInfo().total"),
    _spec("vigil_gpu_temperature_celsius", "gauge", "celsius", GPU + ("sensor",),
          "Temperature of the GPU die (sensor=gpu) or its HBM (sensor=memory)",
          "nvmlDeviceGetTemperature; field 82 (NVML_FI_DEV_MEMORY_TEMP)"),
    _spec("vigil_gpu_power_watts", "gauge", "watts", GPU, "Power draw", "nvmlDeviceGetPowerUsage (mW)"),
    _spec("vigil_gpu_power_limit_watts", "gauge", "watts", GPU, "Enforced power limit",
          "nvmlDeviceGetEnforcedPowerLimit (mW)"),
    _spec("vigil_gpu_energy_joules_total", "counter", "joules", GPU, "Energy consumed since the driver loaded",
          "field 83, else nvmlDeviceGetTotalEnergyConsumption (mJ)"),
    _spec("vigil_gpu_clock_hertz", "gauge", "hertz", GPU + ("clock",), "Current SM or memory clock",
          "nvmlDeviceGetClockInfo (MHz)"),
    _spec("vigil_gpu_fan_speed_ratio", "gauge", "ratio", GPU, "Fan speed as a fraction of its maximum",
          "nvmlDeviceGetFanSpeed (absent on boards without fans)"),
    _spec("vigil_gpu_performance_state", "gauge", "", GPU, "Performance state: 0 (P0, maximum) .. 15 (minimum)",
          "nvmlDeviceGetPerformanceState"),
    _spec("vigil_gpu_persistence_mode", "gauge", "", GPU, "1 when persistence mode is on", "nvmlDeviceGetPersistenceMode"),
    _spec("vigil_gpu_ecc_errors_total", "counter", "", GPU + ("error_type", "counter_type"),
          "ECC errors (corrected/uncorrected); the volatile count drops to 0 on a GPU reset or driver reload",
          "fields 3-6, else nvmlDeviceGetTotalEccErrors"),
    _spec("vigil_gpu_retired_pages_total", "counter", "", GPU + ("cause",),
          "Retired memory pages by cause (pre-Ampere GPUs)",
          "fields 29-30, else nvmlDeviceGetRetiredPages"),
    _spec("vigil_gpu_retired_pages_pending", "gauge", "", GPU, "1 when a page retirement waits for a reboot",
          "field 31, else nvmlDeviceGetRetiredPagesPendingStatus"),
    _spec("vigil_gpu_remapped_rows_total", "counter", "", GPU + ("error_type",),
          "Memory rows remapped after corrected/uncorrected errors (Ampere and later)",
          "fields 142-145, else nvmlDeviceGetRemappedRows"),
    _spec("vigil_gpu_remap_pending", "gauge", "", GPU, "1 when a row remapping waits for a GPU reset",
          "nvmlDeviceGetRemappedRows"),
    _spec("vigil_gpu_remap_failure", "gauge", "", GPU, "1 when a row remapping failed (replace the GPU)",
          "nvmlDeviceGetRemappedRows"),
    _spec("vigil_gpu_recovery_action", "gauge", "", GPU,
          "Recommended recovery: 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset",
          "nvmlDeviceGetFieldValues field 230 (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION)"),
    _spec("vigil_gpu_pcie_replays_total", "counter", "", GPU, "PCIe replays", "field 94, else nvmlDeviceGetPcieReplayCounter"),
    _spec("vigil_gpu_nvlink_errors_total", "counter", "", GPU + ("link", "error_type"),
          "NVLink errors: replay, recovery, crc_flit; crc_data only from the per-link call. By default one "
          "total per GPU summed over its links (link=\"all\", as dcgm-exporter and the DCGM backend); "
          "per link (link=\"0\"..\"17\") with `--nvlink-per-link`",
          "nvmlDeviceGetFieldValues fields 161-163 per link, else nvmlDeviceGetNvLinkErrorCounter"),
    _spec("vigil_gpu_clock_event_active", "gauge", "", GPU + ("reason",),
          "1 while the reason holds clocks down (gpu_idle, sw_power_cap, hw_slowdown, sw_thermal, hw_thermal, ...)",
          "nvmlDeviceGetCurrentClocksEventReasons"),
    _spec("vigil_gpu_clock_event_seconds_total", "counter", "seconds", GPU + ("reason",),
          "Time clocks were held down, by policy (power, thermal, sync_boost, board_limit, low_utilization, reliability)",
          "nvmlDeviceGetViolationStatus (ns)"),
    _spec("vigil_gpu_xid_errors_total", "counter", "", GPU + ("xid", "class"),
          "XID events by number; class = critical, warning, application or unknown", "nvmlEventSetWait"),
    _spec("vigil_gpu_last_xid_timestamp_seconds", "gauge", "seconds", GPU, "Unix time of the last XID event",
          "nvmlEventSetWait"),
    _spec("vigil_gpu_xid_last_seen_timestamp_seconds", "gauge", "seconds", GPU + ("xid", "class"),
          "Unix time this XID last occurred on the GPU (the rules tell a new occurrence from a counter "
          "back after a failed scrape by it)", "nvmlEventSetWait"),
    _spec("vigil_gpu_process_memory_bytes", "gauge", "bytes", GPU + ("pid",),
          "Device memory held by a compute process (host PID)", "nvmlDeviceGetComputeRunningProcesses"),
    _spec("vigil_gpu_process_sm_utilization_ratio", "gauge", "ratio", GPU + ("pid",),
          "SM utilization of a process over the last collection interval", "nvmlDeviceGetProcessUtilization"),
    _spec("vigil_gpu_mig_mode", "gauge", "", GPU, "1 when MIG mode is enabled", "nvmlDeviceGetMigMode"),
    _spec("vigil_gpu_mig_instance_memory_used_bytes", "gauge", "bytes", GPU + ("mig_uuid",),
          "Memory in use in a MIG instance", "nvmlDeviceGetMigDeviceHandleByIndex, nvmlDeviceGetMemoryInfo"),
    _spec("vigil_node_gpus_visible", "gauge", "", ("node",), "GPUs that answer NVML on the node now",
          "nvmlDeviceGetCount and per-GPU reads"),
    _spec("vigil_node_gpus_expected", "gauge", "", ("node",),
          "GPUs the node should have (--expected-gpus, else the first successful count)", "configuration"),
    _spec("vigil_exporter_collection_duration_seconds", "gauge", "seconds", ("node",),
          "Duration of the last NVML collection cycle", "exporter"),
    _spec("vigil_exporter_last_collection_timestamp_seconds", "gauge", "seconds", ("node",),
          "Unix time the last collection cycle finished (stale when NVML hangs)", "exporter"),
    _spec("vigil_exporter_nvml_errors_total", "counter", "", ("node", "code"),
          "NVML calls that returned an error, by error name (not_supported, gpu_is_lost, ...)", "exporter"),
]

SPEC_BY_NAME = {spec.name: spec for spec in SPECS}
