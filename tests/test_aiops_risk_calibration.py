"""Failure-risk calibration: populations reproduce their sourced rates, fitted scores beat chance on the
held-out half at their false-alarm targets, and `vigil aiops calibrate-risk` reports and writes them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from vigil.aiops.disk.model import TrainingConfig, save_model, threshold_for_far, train_disk_model
from vigil.aiops.disk.simulate import FleetSpec, simulate_fleet
from vigil.aiops.risk import gpu_score, nvme_score
from vigil.aiops.risk.calibrate import (GPU_FEATURES, GPU_HORIZON_DAYS, calibrate_gpu, calibrate_nvme, calibrate_sata,
                                       gpu_feature_matrix)
from vigil.aiops.risk.calibrate_eval import evaluate, split_units
from vigil.aiops.risk.detection_search import DetectionObjective, search_direction
from vigil.aiops.risk.gpu_score import GpuSignals, score_gpus
from vigil.aiops.risk.population import GPU_PARAMS, simulate_gpus
from vigil.aiops.risk.population_disks import NVME_PARAMS, SATA_PARAMS, simulate_nvme, simulate_sata
from vigil.cli.aiops_risk import calibrate_risk

from bench_support import load_bench


def _within(observed: float, expected: float, n: int, sigmas: float = 4.0) -> bool:
    """`observed` share of `n` draws is within `sigmas` binomial standard errors of `expected`."""
    return abs(observed - expected) <= sigmas * np.sqrt(expected * (1 - expected) / n)


@pytest.fixture(scope="module")
def gpus():
    return simulate_gpus(nodes=2048, days=90, seed=11)


def test_gpu_population_reproduces_the_llama3_rates(gpus):
    p = {k: v.value for k, v in GPU_PARAMS.items()}
    n = len(gpus.failed)
    assert n == 16384
    per_day = p["interruptions_per_gpu_day"] * p["gpu_related_share"]
    assert abs(per_day * 1000 - 0.47 * 0.587) < 0.01  # 0.47 interruptions per 1,000 GPU-days, 58.7 % GPU
    assert _within(gpus.failed.mean(), -np.expm1(-per_day * 90), n)
    failed = gpus.cause[gpus.failed]
    total = p["cause_faulty_gpu"] + p["cause_hbm3"] + p["cause_other_gpu"]
    for cause in ("faulty_gpu", "hbm3", "other_gpu"):
        assert _within((failed == cause).mean(), p[f"cause_{cause}"] / total, len(failed)), cause
    hbm = gpus.precursor[gpus.cause == "hbm3"]
    assert _within((hbm == "memory").mean(), p["precursor_share_hbm3"], len(hbm))
    assert set(gpus.precursor[~gpus.failed]) == {"none"}
    # a GPU's rows end on its failure day: it is replaced
    last = gpus.days_to_failure[np.r_[gpus.gpu[1:] != gpus.gpu[:-1], True]]
    assert (last[~np.isnan(last)] == 0).all() and np.isnan(last).sum() == (~gpus.failed).sum()


def test_disk_populations_reproduce_their_rates_with_the_simulators_precursors():
    sata, nvme = simulate_sata(disks=6000, days=60, seed=5), simulate_nvme(disks=6000, days=60, seed=5)
    for history, params in ((sata, SATA_PARAMS), (nvme, NVME_PARAMS)):
        per_disk = history.groupby("disk").agg(failed=("failure", "max"), pattern=("pattern", "first"))
        assert _within(per_disk["failed"].mean(), params["failure_fraction"].value, len(per_disk))
        failing = per_disk[per_disk["failed"] == 1]
        assert _within((failing["pattern"] == "sudden").mean(), params["no_warning_share"].value, len(failing))
    # SATA precursors are the simulator's SMART faults: the named counter grows to the failure day
    last = sata.groupby("disk").tail(1).set_index("pattern")
    for pattern, attr in (("reallocation", "smart_5"), ("pending_burst", "smart_197"), ("timeout", "smart_188")):
        assert (last.loc[pattern, attr] > 0).mean() > 0.8, pattern
    media = nvme[(nvme["pattern"] == "media_errors") & (nvme["failure"] == 1)]
    assert (media["media_errors"] > 0).mean() > 0.9 and (media["available_spare"] < 1).mean() > 0.5


def test_vectorized_gpu_features_are_the_ones_the_service_scores(gpus):
    features = gpu_feature_matrix(gpus)
    rows = np.flatnonzero((gpus.node == 3) & (gpus.day == 40))
    hot = np.argmax(gpus.temperature_c[rows])
    signals = [GpuSignals(node="n", gpu=str(i), corrected_ecc_per_hour=gpus.corrected_ecc_per_hour[r],
                          remap_pending=gpus.remap_pending[r], remap_failure=gpus.remap_failure[r],
                          xid_92_94_count=gpus.xid_92_94_count[r], recovery_action=gpus.recovery_action[r],
                          temperature_c=float(gpus.temperature_c[r])) for i, r in enumerate(rows)]
    score_gpus(signals)
    for s, r in zip(signals, rows):
        assert np.allclose(list(s.features().values()), features[r])
    assert features[rows[hot], 5] > 0


@pytest.fixture(scope="module")
def gpu_fit():
    return calibrate_gpu(seed=2, days=60, nodes=512)


def test_fitted_gpu_weights_beat_chance_and_hold_their_false_alarm_targets(gpu_fit):
    model, report = gpu_fit
    assert report.held_out_failing > 20 and report.roc_auc > 0.55
    at_1, at_01 = {p.target_false_alarm_rate: p for p in report.points}[0.01], report.points[0]
    chance = 1 - (1 - 0.01) ** report.horizon_days  # a random score alarming on 1 % of days
    assert at_1.detection_rate > 3 * chance
    assert at_1.detection_rate <= report.detectable_share + 0.05  # failures without precursors stay unseen
    assert 0.004 < at_1.held_out_false_alarm_rate < 0.015
    assert at_01.held_out_false_alarm_rate < 0.003
    assert at_1.median_lead_days >= 1
    assert model["weights"]["corrected_ecc_rate"] > 0 and model["weights"]["xid_92_94"] > 0


def test_calibrated_gpu_weights_detect_at_least_what_the_hand_set_ones_do_at_the_operating_point():
    """The log-loss fit alone detected 31 % at 0.1 % false alarms where the hand-set weights detected 42 %;
    the weights searched for detection there must not fall behind them on the held-out half of the same
    population, at either operating point. The shipped calibration's size and seed: on a quarter of it,
    one failing GPU is 3 % of the held-out ones, and either may win by one."""
    hand = load_bench("aiops/calibrate.py")
    pop = simulate_gpus(nodes=2048, days=90, seed=0)
    features = gpu_feature_matrix(pop)
    held_out = split_units(pop.gpu, ~np.isnan(pop.days_to_failure), 0)
    weights = np.array([hand.HAND_SET_WEIGHTS[name] for name in GPU_FEATURES])
    hand_report = evaluate("gpu, hand-set", hand.HAND_SET_BIAS + features @ weights, pop.gpu,
                           pop.days_to_failure, held_out, GPU_HORIZON_DAYS)
    _, report = calibrate_gpu(seed=0, days=90, nodes=2048)
    assert report.held_out_failing > 150
    for ours, theirs in zip(report.points, hand_report.points):
        assert ours.detection_rate >= theirs.detection_rate, (ours, theirs)


def test_alarm_thresholds_let_at_most_their_share_of_healthy_scores_exceed_them():
    healthy = np.random.default_rng(5).normal(size=10_001)
    for far in (0.0, 0.001, 0.01, 0.5):
        threshold = threshold_for_far(healthy, far)
        assert np.mean(healthy > threshold) <= far  # at most that share above
        assert np.mean(healthy >= threshold) > far  # and the smallest such threshold: one more is over
    assert threshold_for_far(np.array([3.0, 1.0, 2.0]), 1.0) == 0.0


def test_the_detection_search_only_takes_gains():
    pop = simulate_gpus(nodes=256, days=45, seed=4)
    features = gpu_feature_matrix(pop)
    rows = ~split_units(pop.gpu, ~np.isnan(pop.days_to_failure), 4)
    objective = DetectionObjective(features, pop.gpu, pop.days_to_failure, rows, GPU_HORIZON_DAYS, 0.001)
    start = np.ones(features.shape[1])
    found, detected = search_direction(objective, start, seed=4, steps=80)
    assert detected == objective(found) >= objective(start) and (found >= 0).all()
    assert search_direction(objective, start, seed=4, steps=80)[1] == detected  # seeded: the same again


def test_nvme_and_sata_thresholds_hold_their_false_alarm_targets(tmp_path):
    nvme_model, nvme = calibrate_nvme(seed=3, days=60, disks=2000)
    disk_model, _ = train_disk_model(simulate_fleet(FleetSpec(disks=800, days=60, seed=3)), TrainingConfig(seed=3))
    threshold, sata = calibrate_sata(disk_model, seed=3, days=60, disks=2000)
    for report in (nvme, sata):
        at_01, at_1 = report.points
        assert 0.004 < at_1.held_out_false_alarm_rate < 0.015, report.kind  # ties at the threshold err low
        assert at_01.held_out_false_alarm_rate < 0.003, report.kind
        chance = 1 - 0.99 ** report.horizon_days  # a random score's detection at 1 % false alarms per day
        assert at_1.detection_rate / report.detectable_share > 3 * chance, report.kind
    assert threshold == sata.points[0].threshold
    flagged = nvme_score.feature_matrix([4], [300], [200], [0.1], [0.6])
    clean = nvme_score.feature_matrix([0], [0], [0], [0.1], [1.0])
    assert nvme_score.score(flagged, nvme_model)[0] > nvme_model["threshold"] > nvme_score.score(clean, nvme_model)[0]


def test_cli_prints_the_held_out_table_and_writes_the_model_files(tmp_path):
    model_dir = tmp_path / "models"
    disk_model, _ = train_disk_model(simulate_fleet(FleetSpec(disks=600, days=45, seed=4)), TrainingConfig(seed=4))
    save_model(disk_model, model_dir)
    args = ["--seed", "4", "--days", "60", "--gpu-nodes", "256", "--disks", "800", "--model-dir", str(model_dir),
            "--weights-dir", str(tmp_path / "w"), "--write"]
    result = CliRunner().invoke(calibrate_risk, args)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:2] == ["kind", "held-out"]
    assert [line.split()[0] for line in lines[1:7]] == ["gpu", "gpu", "sata", "sata", "nvme", "nvme"]
    assert [line.split()[5] for line in lines[1:7]] == ["0.1%", "1.0%"] * 3
    assert "chance" in lines[0] and "lead p10" in lines[0]
    written = json.loads((tmp_path / "w" / "gpu_weights.json").read_text())
    assert written["seed"] == 4 and "calibrate-risk --seed 4" in written["command"]
    assert set(written["weights"]) == set(gpu_score.WEIGHTS)
    assert json.loads((tmp_path / "w" / "nvme_weights.json").read_text())["threshold"] > 0
    disk_meta = json.loads((model_dir / "disk_model.json").read_text())
    assert disk_meta["calibration"]["seed"] == 4 and disk_meta["threshold"] != disk_model.threshold


def test_cli_names_a_weights_dir_it_cannot_write_without_a_traceback(tmp_path):
    model_dir = tmp_path / "models"
    disk_model, _ = train_disk_model(simulate_fleet(FleetSpec(disks=600, days=45, seed=4)), TrainingConfig(seed=4))
    save_model(disk_model, model_dir)
    (tmp_path / "f").write_text("a file, so no folder can be made under it")
    args = ["--seed", "4", "--days", "60", "--gpu-nodes", "256", "--disks", "800", "--model-dir", str(model_dir),
            "--weights-dir", str(tmp_path / "f" / "w"), "--write"]
    result = CliRunner().invoke(calibrate_risk, args)
    assert result.exit_code == 1 and "cannot write the calibrated models" in result.output, result.output
    assert str(tmp_path / "f" / "w") in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_cli_refuses_a_corrupt_disk_model_without_a_traceback(tmp_path):
    (tmp_path / "disk_model.joblib").write_text("not a model")
    result = CliRunner().invoke(calibrate_risk, ["--model-dir", str(tmp_path), "--gpu-nodes", "16", "--disks", "200"])
    assert result.exit_code == 1 and "cannot load the disk model" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_cli_will_not_write_weights_fitted_on_too_few_failures(tmp_path):
    model_dir = tmp_path / "models"
    disk_model, _ = train_disk_model(simulate_fleet(FleetSpec(disks=600, days=45, seed=4)), TrainingConfig(seed=4))
    save_model(disk_model, model_dir)
    args = ["--gpu-nodes", "16", "--disks", "200", "--days", "31", "--model-dir", str(model_dir)]
    result = CliRunner().invoke(calibrate_risk, args + ["--weights-dir", str(tmp_path / "w"), "--write"])
    assert result.exit_code == 1 and "too few failures to calibrate on: gpu (0)" in result.output
    assert not (tmp_path / "w").exists()
    assert "calibration" not in json.loads((model_dir / "disk_model.json").read_text())
    shown = CliRunner().invoke(calibrate_risk, args + ["--json"])  # without --write: figures and a warning
    assert shown.exit_code == 0 and "warning: too few failures" in shown.stderr
    figures = json.loads(shown.stdout)
    assert set(figures) == {"gpu", "sata", "nvme"} and figures["gpu"]["held_out_failing"] == 0
    assert [p["target_false_alarm_rate"] for p in figures["nvme"]["points"]] == [0.001, 0.01]


def test_calibration_is_deterministic_for_a_seed(gpu_fit):
    again = calibrate_gpu(seed=2, days=60, nodes=512)
    assert again[0] == gpu_fit[0] and again[1] == gpu_fit[1]
    assert calibrate_gpu(seed=3, days=60, nodes=512)[0] != gpu_fit[0]


def test_the_service_scores_with_the_shipped_calibrated_weights():
    shipped = json.loads(gpu_score.WEIGHTS_FILE.read_text())
    assert shipped["command"].startswith("vigil aiops calibrate-risk") and "seed" in shipped
    assert gpu_score.WEIGHTS == shipped["weights"] and gpu_score.BIAS == shipped["bias"]
    assert "Llama 3" in shipped["sources"]["interruptions_per_gpu_day"]
    nvme = nvme_score.load_weights()
    assert set(nvme["weights"]) == set(nvme_score.FEATURES) and nvme["command"] == shipped["command"]
