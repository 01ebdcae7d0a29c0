"""Simulated GPU fleet: the NVML function surface, smartctl and dcgm-exporter pages, without hardware."""
