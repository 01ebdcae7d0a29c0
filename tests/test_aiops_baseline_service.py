"""The serve runtime without HTTP: store reloads, refit timing, and what the collector publishes."""

from __future__ import annotations

import os
import time

import numpy as np
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from vigil.aiops.baseline import synthetic
from vigil.aiops.baseline.collector import BaselineCollector, BaselineSnapshot
from vigil.aiops.baseline.fit import fit_series
from vigil.aiops.baseline.models import band
from vigil.aiops.baseline.service import BaselineService, ServiceConfig
from vigil.aiops.baseline.store import load_store, save_store
from vigil.aiops.baseline.train import TrainSettings
from vigil.aiops.history.series import Series

NOW = 1_767_225_600.0 + 3600


def entry(kind: str, seed: int, labels: dict) -> dict:
    t = synthetic.grid(days=14)
    return fit_series(Series(f"vigil_test_{kind}", labels, t, synthetic.GENERATORS[kind](t, np.random.default_rng(seed))), 300.0)


def config(tmp_path, url=None, sensitivity=None) -> ServiceConfig:
    return ServiceConfig(tmp_path, TrainSettings(), 3600.0, url, ("up",) if url else (), sensitivity)


def test_service_loads_the_store_and_reloads_it_when_train_rewrites_it(tmp_path):
    service = BaselineService(config(tmp_path))
    assert service.load() is False and service.current() is None
    save_store(tmp_path, [entry("stable", 1, {"node": "a"})], {"sensitivity": 1.0, "trained_at": NOW})
    assert service.load() is True and len(service.current().entries) == 1
    save_store(tmp_path, [entry("stable", 1, {"node": "a"}), entry("trending", 2, {"node": "b"})], {"sensitivity": 1.0})
    os.utime(tmp_path / "baselines.json", (time.time() + 5, time.time() + 5))  # coarse mtime clocks
    service.refit()  # without Prometheus a refit is a reload
    assert len(service.current().entries) == 2


def test_first_refit_is_immediate_without_a_model_or_with_an_old_one(tmp_path):
    service = BaselineService(config(tmp_path, url="http://127.0.0.1:1"))
    assert service.first_refit_delay() == 0.0
    save_store(tmp_path, [entry("stable", 1, {})], {"trained_at": time.time() - 7200})
    service.load()
    assert service.first_refit_delay() == 0.0
    save_store(tmp_path, [entry("stable", 1, {})], {"trained_at": time.time()})
    os.utime(tmp_path / "baselines.json", (time.time() + 5, time.time() + 5))
    service.load()
    assert 3500 < service.first_refit_delay() <= 3601  # trained_at is stored to the second


def test_collector_publishes_the_band_for_now_with_contract_labels(tmp_path):
    entries = [entry("periodic", 3, {"node": "n1", "gpu": "0", "job": "gpu", "instance": "n1:9400"})]
    save_store(tmp_path, entries, {"sensitivity": 1.0, "trained_at": NOW - 60, "fit_seconds": 0.25})
    snapshot = BaselineSnapshot.from_store(load_store(tmp_path), sensitivity=2.0)
    registry = CollectorRegistry()
    registry.register(BaselineCollector(lambda: snapshot, clock=lambda: NOW))
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for s in family.samples
    }
    value, lower, upper = band(load_store(tmp_path)["series"][0]["model"], np.array([NOW]), 2.0)
    labels = (("gpu", "0"), ("metric", "vigil_test_periodic"), ("node", "n1"))  # job and instance dropped
    assert samples[("vigil_baseline_expected", labels)] == value[0]
    assert samples[("vigil_baseline_lower", labels)] == lower[0] < value[0]
    assert samples[("vigil_baseline_upper", labels)] == upper[0] > value[0]
    assert samples[("vigil_baseline_fit_duration_seconds", ())] == 0.25
    assert samples[("vigil_baseline_last_fit_timestamp_seconds", ())] == NOW - 60
    assert samples[("vigil_baseline_series_by_class", (("class", "periodic"),))] == 1


def test_collector_without_a_model_says_zero_series():
    registry = CollectorRegistry()
    registry.register(BaselineCollector(lambda: None))
    text = generate_latest(registry).decode()
    assert "vigil_baseline_series 0.0" in text and "vigil_baseline_upper{" not in text
