"""`vigil aiops train` / `serve` as a user runs them: summaries, served metrics, clean exits, clear errors."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import requests
from click.testing import CliRunner

from vigil.aiops.baseline import synthetic
from vigil.aiops.baseline.store import load_store
from vigil.common.ports import free_port
from vigil.cli import main as vigil_main

VIGIL = str(Path(sys.executable).with_name("vigil"))


@pytest.fixture
def history_csv(tmp_path) -> Path:
    """A long-layout CSV with one series of each class, labelled like exporter series."""
    t = synthetic.grid(days=14)
    rows = []
    for i, (kind, make) in enumerate(sorted(synthetic.GENERATORS.items())):
        x = make(t, np.random.default_rng(i))
        rows += [f"{int(s)},{float(v)!r},vigil_test_{kind},node-{i},{i},gpu,10.0.0.{i}:9400" for s, v in zip(t, x)]
    path = tmp_path / "history.csv"
    path.write_text("timestamp,value,metric,node,gpu,job,instance\n" + "\n".join(rows) + "\n")
    return path


def run(*args):
    return CliRunner().invoke(vigil_main, ["aiops", *args])


def test_train_from_csv_prints_a_summary_per_class(history_csv, tmp_path):
    result = run("train", "--input", str(history_csv), "--model-dir", str(tmp_path / "m"))
    assert result.exit_code == 0, result.output
    assert "5 baselines" in result.output
    for kind in synthetic.GENERATORS:
        assert any(line.startswith(kind) and " 1 " in line for line in result.output.splitlines()), result.output
    store = load_store(tmp_path / "m")
    assert {e["metric"]: e["class"] for e in store["series"]} == {f"vigil_test_{k}": k for k in synthetic.GENERATORS}


@pytest.mark.parametrize(
    "args,message",
    [
        (["train", "--model-dir", "M"], "give either --prometheus-url with --match, or --input FILE"),
        (["train", "--model-dir", "M", "--prometheus-url", "http://x"], "needs at least one --match"),
        (["train", "--model-dir", "M", "--input", "a.csv", "--lookback", "two weeks"], "'two weeks' is not a duration"),
        (["train", "--model-dir", "M", "--input", "a.csv", "--sensitivity", "0"], "must be above 0"),
        (["train", "--model-dir", "M", "--input", "missing.csv"], "missing.csv: no such file"),
        (["train", "--model-dir", "M", "--prometheus-url", "http://127.0.0.1:1", "--match", "up"], "cannot reach Prometheus at http://127.0.0.1:1"),
        (["serve", "--model-dir", "EMPTY"], "no model store in EMPTY"),
        (["serve", "--model-dir", "M", "--listen", "nowhere"], "'nowhere' is not HOST:PORT"),
    ],
)
def test_cli_errors_are_one_clear_line(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.csv").write_text("timestamp,value\n0,1\n")
    result = run(*args)
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, (AttributeError, TypeError, KeyError))


def test_bad_value_in_input_names_the_line(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("timestamp,value\n0,1\n300,2\n600,oops\n")
    result = run("train", "--input", str(path), "--model-dir", str(tmp_path / "m"))
    assert result.exit_code == 1 and "h.csv: line 4: value 'oops' is not a number" in result.output
    assert not (tmp_path / "m").exists()


def test_too_short_history_is_reported_and_nothing_written(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("timestamp,value\n0,1\n300,2\n")
    result = run("train", "--input", str(path), "--model-dir", str(tmp_path / "m"))
    assert result.exit_code == 1
    assert "skipped: h: 2 usable points" in result.output and "nothing written" in result.output


def test_corrupt_store_is_a_clear_error(tmp_path):
    (tmp_path / "baselines.json").write_text('{"format": "something-else"}')
    result = run("serve", "--model-dir", str(tmp_path))
    assert result.exit_code == 1 and "not a vigil baseline store" in result.output


def wait_for_health(proc: subprocess.Popen, port: int) -> requests.Response:
    """The first /healthz answer of a `vigil aiops serve` that is starting (healthy or not)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
        except requests.ConnectionError:
            assert time.monotonic() < deadline and proc.poll() is None, "serve did not come up"
            time.sleep(0.3)


def test_serve_from_a_trained_store_exposes_bands_and_stops_on_sigint(history_csv, tmp_path):
    assert run("train", "--input", str(history_csv), "--model-dir", str(tmp_path / "m")).exit_code == 0
    port = free_port()
    proc = subprocess.Popen(
        [VIGIL, "aiops", "serve", "--listen", f"127.0.0.1:{port}", "--model-dir", str(tmp_path / "m")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        health = wait_for_health(proc, port)
        assert health.status_code == 200
        text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        samples = {}
        for line in text.splitlines():
            if line.startswith("vigil_baseline_") and "{" in line:
                name_labels, value = line.rsplit(" ", 1)
                samples[name_labels] = float(value)
        labels = '{gpu="2",metric="vigil_test_spiky",node="node-2"}'  # job and instance dropped
        assert samples[f"vigil_baseline_lower{labels}"] <= samples[f"vigil_baseline_expected{labels}"] <= samples[f"vigil_baseline_upper{labels}"]
        assert 'vigil_baseline_series_by_class{class="trending"} 1.0' in text
        assert "vigil_baseline_last_fit_timestamp_seconds" in text and "vigil_baseline_fit_duration_seconds" in text
        assert requests.get(f"http://127.0.0.1:{port}/nope", timeout=5).status_code == 404
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "Traceback" not in out


def test_serve_with_prometheus_down_stays_up_unhealthy_and_says_why(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [VIGIL, "aiops", "serve", "--listen", f"127.0.0.1:{port}", "--model-dir", str(tmp_path / "m"),
         "--prometheus-url", "http://127.0.0.1:1", "--match", "vigil_gpu_utilization_ratio"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        health = wait_for_health(proc, port)
        assert health.status_code == 503 and "no baseline model" in health.text
        assert "vigil_baseline_series 0.0" in requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    finally:
        time.sleep(1)  # let the first (failing) training attempt log
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "refit failed (the previous model, if any, stays served)" in out and "cannot reach Prometheus at http://127.0.0.1:1" in out
    assert "Traceback" not in out
