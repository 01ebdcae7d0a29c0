"""Clock-limit violation times come from the batched field values, with the per-policy call as fallback.

On a real H100 (driver 580) the fields NVML_FI_DEV_PERF_POLICY_* answer the same nanoseconds as
nvmlDeviceGetViolationStatus, in the one batched call instead of six calls of about 0.8 ms each.
"""

from __future__ import annotations

import pytest
from bench_support import load_bench
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from vigil.exporters.nvml_collector import NvmlCollector
from vigil.exporters.sim.faults import Fault
from vigil.exporters.sim.nvml import SimulatedNvml

NODE = "node-1"
TimedNvml = load_bench("exporters/timed_nvml.py").TimedNvml  # counts the calls of each NVML function
START = 1_700_000_000.0


def thermal_seconds(unsupported: frozenset[str]) -> tuple[dict[tuple[str, str], float], object]:
    """Each GPU's clock-event seconds by reason after 90 s of a thermal throttle on GPU 1."""
    now = [START]
    sim = SimulatedNvml(NODE, 2, unsupported=unsupported, clock=lambda: now[0])
    counting = TimedNvml(sim)
    collector = NvmlCollector(counting, NODE, watch_xids=False, clock=lambda: now[0])
    registry = CollectorRegistry()
    registry.register(collector)
    collector.refresh()
    sim.inject(Fault("thermal-throttle", NODE, 1, now[0]))
    now[0] += 90
    collector.refresh()
    seconds = {(s.labels["gpu"], s.labels["reason"]): s.value
               for family in text_string_to_metric_families(generate_latest(registry).decode())
               for s in family.samples if s.name == "vigil_gpu_clock_event_seconds_total"}
    return seconds, counting


def test_violation_times_come_from_the_batch_without_the_per_policy_calls() -> None:
    seconds, counting = thermal_seconds(frozenset())
    assert counting.per_function["nvmlDeviceGetViolationStatus"][0] == 0
    assert seconds[("1", "thermal")] == pytest.approx(90, abs=1)
    assert seconds[("0", "thermal")] == 0 and seconds[("1", "power")] == 0
    assert len(seconds) == 2 * 6  # six reasons a GPU


def test_a_driver_without_field_values_gets_the_same_times_from_the_per_policy_calls() -> None:
    batched, _ = thermal_seconds(frozenset())
    fallback, counting = thermal_seconds(frozenset({"nvmlDeviceGetFieldValues"}))
    assert counting.per_function["nvmlDeviceGetViolationStatus"][0] == 2 * 2 * 6  # two cycles, two GPUs, six policies
    assert fallback == batched
