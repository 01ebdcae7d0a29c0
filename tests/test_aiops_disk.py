"""Disk failure prediction: simulated fleet, features, model skill at 0.1 % false alarms, no leakage."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from vigil.aiops.disk.features import add_features, feature_names
from vigil.aiops.disk.model import (
    TrainingConfig, evaluate, fit_classifier, label_rows, load_model, save_model, split_disks, threshold_for_far,
    train_disk_model,
)
from vigil.aiops.disk.simulate import FleetSpec, simulate_fleet
from vigil.cli.aiops_risk import train_disk

FLEET = FleetSpec(disks=2500, days=100, seed=7)


@pytest.fixture(scope="module")
def fleet() -> pd.DataFrame:
    return simulate_fleet(FLEET)


@pytest.fixture(scope="module")
def trained(fleet):
    return train_disk_model(fleet, TrainingConfig(seed=7))


def test_simulation_is_deterministic_and_a_failing_history_ends_on_its_failure_day(fleet):
    again = simulate_fleet(FLEET)
    pd.testing.assert_frame_equal(fleet, again)
    last = fleet.groupby("disk").tail(1)
    failing = last[last["failure"] == 1]
    assert fleet["failure"].sum() == len(failing) > 50
    assert set(fleet.loc[fleet["failure"] == 1, "pattern"]) == {"reallocation", "pending_burst", "timeout", "sudden"}
    healthy_last_day = last.loc[last["failure"] == 0, "day"]
    assert (healthy_last_day == FLEET.days - 1).all()
    # false-alarm bait exists: healthy disks with nonzero reallocated sectors
    healthy = fleet[fleet["pattern"] == "healthy"]
    assert healthy.groupby("disk")["smart_5"].max().gt(0).mean() > 0.08


def test_window_deltas_use_the_first_day_before_a_full_window():
    history = pd.DataFrame(
        {"disk": ["a"] * 5, "day": range(5), "smart_5": [0, 0, 2, 5, 5], "smart_187": 0, "smart_188": 0,
         "smart_197": [0, 1, 0, 0, 3], "smart_198": 0, "smart_194": [30, 32, 34, 36, 38]}
    )
    f = add_features(history).set_index("day")
    assert f["smart_5_d1"].tolist() == [0, 0, 2, 3, 0]
    assert f["smart_5_d3"].tolist() == [0, 0, 2, 5, 5]
    assert f.loc[4, "smart_197_d3"] == 2 and f.loc[3, "smart_197_d3"] == 0
    assert f["smart_5_d14"].tolist() == [0, 0, 2, 5, 5]
    assert f["smart_5_up_days14"].tolist() == [0, 0, 1, 2, 2]
    assert f["smart_197_d1"].tolist() == [0, 1, -1, 0, 3]
    assert f.loc[4, "temperature_mean7"] == 34
    assert "smart_9" not in feature_names() and "day" not in feature_names()
    with pytest.raises(ValueError, match="smart_198"):
        add_features(history.drop(columns=["smart_198"]))


@pytest.mark.slow
def test_model_detects_predictable_failures_at_a_tenth_of_a_percent_false_alarms(trained):
    model, ev = trained
    # measured on this fleet: detection 0.655 of 29 failing test disks (the "sudden" ones, about a
    # quarter, are undetectable by construction), lead 10 days, 0.006 % false alarms per disk-day; the
    # bounds leave room for seed and library changes, not for a broken model
    assert ev.test_failing_disks >= 25
    assert ev.detection_rate >= 0.5
    assert ev.false_alarm_rate_disk_days <= 0.003
    assert ev.median_lead_days is not None and ev.median_lead_days >= 3
    assert ev.detection_rate_at_test_far >= 0.5 and ev.median_lead_days_at_test_far >= 3
    for pattern in ("reallocation", "pending_burst", "timeout"):
        assert ev.detection_by_pattern[pattern] >= 0.7, pattern
    # honest about what cannot be predicted: failures without precursors are (nearly) never caught
    assert ev.detection_by_pattern["sudden"] <= 0.25
    assert model.metadata["target_false_alarm_rate_per_disk_day"] == 0.001


@pytest.mark.slow
def test_power_on_hours_alone_score_near_chance(fleet):
    """Leakage check: a model on power-on hours (= disk age) only must not find the failures."""
    config = TrainingConfig(seed=7)
    featured = label_rows(add_features(fleet), config.horizon_days)
    train_ids, val_ids, test_ids = split_disks(featured, config)
    model = fit_classifier(featured[featured["disk"].isin(train_ids)], ["smart_9"], seed=7)
    val = featured[featured["disk"].isin(val_ids) & featured["days_to_failure"].isna()]
    model.threshold = threshold_for_far(model.score(val), config.false_alarm_rate)
    ev = evaluate(model, featured[featured["disk"].isin(test_ids)], config.horizon_days)
    # At the operating point (0.1 % false alarms) power-on hours find (almost) nothing, while the
    # SMART-window model finds most predictable failures (test above).
    assert ev.detection_rate <= 0.1
    # Row-level AUC is noisy: the ~25 failing test disks contribute ~20 near-identical rows each.
    # Measured: 0.43-0.54 for seeds 1, 2, 3, 7 (0.685 once, with an earlier simulator); chance is 0.5,
    # the SMART model ~0.70 (its positives include the unpredictable sudden failures).
    assert ev.roc_auc_disk_days < 0.72


def test_disks_never_straddle_the_split(fleet):
    config = TrainingConfig(seed=1)
    parts = split_disks(fleet, config)
    assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    assert set().union(*parts) == set(fleet["disk"])
    failing = set(fleet.loc[fleet["failure"] == 1, "disk"])
    assert 0.15 < len(failing & parts[2]) / len(failing) < 0.25


def test_threshold_allows_at_most_the_target_share_of_healthy_scores():
    scores = np.linspace(0, 1, 10001)
    threshold = threshold_for_far(scores, 0.001)
    assert (scores > threshold).mean() <= 0.001
    assert (scores >= threshold).mean() > 0.001


def test_saved_model_scores_like_the_trained_one(trained, fleet, tmp_path):
    model, _ = trained
    save_model(model, tmp_path)
    loaded = load_model(tmp_path)
    rows = add_features(fleet[fleet["disk"].isin(["disk-1", "disk-2"])])
    np.testing.assert_allclose(loaded.score(rows), model.score(rows))
    meta = json.loads((tmp_path / "disk_model.json").read_text())
    assert meta["features"] == feature_names()
    assert meta["threshold"] == loaded.threshold
    assert {"detection_rate", "median_lead_days", "false_alarm_rate_disk_days"} <= set(meta["metrics"])
    assert meta["trained_at"].endswith("Z")
    assert load_model(tmp_path / "empty") is None


@pytest.mark.slow
def test_cli_trains_from_simulation_and_from_the_written_history(tmp_path):
    runner = CliRunner()
    history = tmp_path / "history.csv"
    result = runner.invoke(train_disk, ["--simulate", "--disks", "800", "--days", "60", "--model-dir",
                                        str(tmp_path / "m1"), "--write-history", str(history)])
    assert result.exit_code == 0, result.output
    assert "detection rate at exactly 0.10% false alarms per disk-day on the test disks" in result.output
    assert (tmp_path / "m1" / "disk_model.joblib").exists()
    result = runner.invoke(train_disk, ["--input", str(history), "--model-dir", str(tmp_path / "m2"), "--json"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.output)
    assert metrics["test_disks"] == 160


def test_cli_rejects_bad_input_without_a_traceback(tmp_path):
    runner = CliRunner()
    no_label = tmp_path / "nolabel.csv"
    no_label.write_text("serial_number,date,smart_5_raw\nA,2024-01-01,0\n")
    result = runner.invoke(train_disk, ["--input", str(no_label), "--model-dir", str(tmp_path / "m")])
    assert result.exit_code == 1 and "missing column(s) failure" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    result = runner.invoke(train_disk, ["--simulate", "--input", str(no_label), "--model-dir", str(tmp_path / "m")])
    assert result.exit_code == 2 and "exactly one of" in result.output
    never_fails = tmp_path / "nofail.csv"
    never_fails.write_text("disk,day,failure,smart_5\nA,0,0,0\nA,1,0,0\n")
    result = runner.invoke(train_disk, ["--input", str(never_fails), "--model-dir", str(tmp_path / "m")])
    assert result.exit_code == 1 and "no row has failure=1" in result.output
    assert not (tmp_path / "m").exists()
