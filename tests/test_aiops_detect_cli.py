"""`vigil aiops detect` and `vigil aiops evaluate nab` as a user runs them."""

import csv
import io
import json
import math
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from vigil.aiops.detect import DETECTORS, default_threshold
from vigil.cli import main


def write_series(path, n=900, spike_at=700):
    lines = ["timestamp,value"]
    for i in range(n):
        value = 50 + 5 * math.sin(i / 20) + (80 if i == spike_at else 0)
        lines.append(f"2024-03-{1 + i // 288:02d} {(i % 288) * 5 // 60:02d}:{(i % 288) * 5 % 60:02d}:00,{value:.3f}")
    path.write_text("\n".join(lines) + "\n")
    return path


def run(*args):
    """Invoke `vigil ...`; result.stdout is stdout alone, result.output has stderr too (click >= 8.2)."""
    return CliRunner().invoke(main, list(args))


def test_detect_to_stdout_scores_and_labels_every_row(tmp_path):
    source = write_series(tmp_path / "gpu_temp.csv")
    result = run("aiops", "detect", str(source))
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 900
    assert list(rows[0]) == ["timestamp", "value", "anomaly_score", "label"]
    threshold = default_threshold("vigil")
    for row in rows:
        score = float(row["anomaly_score"])
        assert 0.0 <= score <= 1.0
        assert row["label"] == ("1" if score >= threshold else "0")
    assert rows[700]["label"] == "1"  # the spike
    assert rows[700]["timestamp"] == "2024-03-03 10:20:00"
    assert sum(r["label"] == "1" for r in rows) <= 3


def test_detect_writes_output_file_with_explicit_threshold(tmp_path):
    source = write_series(tmp_path / "in.csv")
    out = tmp_path / "scores.csv"
    result = run("aiops", "detect", str(source), "--output", str(out), "--threshold", "0", "--detector",
                 "windowed-gaussian")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 900 and all(r["label"] == "1" for r in rows)  # threshold 0 flags everything


@pytest.mark.parametrize("content, expected", [
    ("timestamp,value\n2024-01-01 00:00:00,1\n2024-01-01 00:05:00,abc\n", "bad.csv:3: bad value 'abc'"),
    ("timestamp,value\n2024-01-01 00:00:00,1\nnot-a-time,2\n", "bad.csv:3: bad timestamp 'not-a-time'"),
    ("timestamp,value\n2024-01-01 00:00:00,1,7\n", "bad.csv:2: expected 2 columns"),
    ("", "bad.csv: file is empty"),
    ("timestamp,value\n", "bad.csv: no data rows"),
    ("time,val\n2024-01-01 00:00:00,1\n", "bad.csv:1: header must be 'timestamp,value'"),
])
def test_detect_rejects_bad_csv_with_file_and_line(tmp_path, content, expected):
    bad = tmp_path / "bad.csv"
    bad.write_text(content)
    result = run("aiops", "detect", str(bad))
    assert result.exit_code == 1
    assert expected in result.stderr
    assert "Traceback" not in result.output


def test_detect_missing_file_and_bad_threshold(tmp_path):
    result = run("aiops", "detect", str(tmp_path / "nope.csv"))
    assert result.exit_code == 1 and "cannot open" in result.output
    source = write_series(tmp_path / "in.csv", n=50)
    result = run("aiops", "detect", str(source), "--threshold", "1.5")
    assert result.exit_code == 2 and "threshold" in result.output.lower()


def test_evaluate_without_corpus_says_where_it_looked(tmp_path):
    result = run("aiops", "evaluate", "nab", "--nab-dir", str(tmp_path / "missing"), "--no-record")
    assert result.exit_code == 1
    assert "NAB corpus not found" in result.output and "--nab-dir" in result.output


def make_mini_corpus(root):
    """A two-file NAB-shaped corpus: one spike per file, labelled with a window around it."""
    (root / "data" / "demo").mkdir(parents=True)
    windows = {}
    for k, spike in enumerate((1400, 1600)):
        name = f"demo/series_{k}.csv"
        write_series(root / "data" / name, n=2000, spike_at=spike)
        stamp = lambda i: f"2024-03-{1 + i // 288:02d} {(i % 288) * 5 // 60:02d}:{(i % 288) * 5 % 60:02d}:00.000000"
        windows[name] = [[stamp(spike - 50), stamp(spike + 50)]]
    (root / "labels").mkdir()
    (root / "labels" / "combined_windows.json").write_text(json.dumps(windows))
    (root / "config").mkdir()
    cost = lambda fp, fn: {"CostMatrix": {"tpWeight": 1.0, "fnWeight": fn, "fpWeight": fp, "tnWeight": 1.0}}
    (root / "config" / "profiles.json").write_text(json.dumps(
        {"standard": cost(0.11, 1.0), "reward_low_FP_rate": cost(0.22, 1.0), "reward_low_FN_rate": cost(0.11, 2.0)}))
    (root / "results").mkdir()
    (root / "results" / "published_final_results.json").write_text(json.dumps({}))


def test_evaluate_nab_json_and_history_record(tmp_path):
    make_mini_corpus(tmp_path / "nab")
    bench = tmp_path / "benchmarks.md"
    bench.write_text("# Benchmarks\n\n<!-- section:other -->\nsomeone else's\n<!-- /section:other -->\n")
    args = ["aiops", "evaluate", "nab", "--nab-dir", str(tmp_path / "nab"), "--json", "--record", "--benchmarks-file", str(bench)]
    result = run(*args, "--detector", "vigil", "--detector", "null")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["points"] == 4000
    by_name = {r["detector"]: r for r in report["results"]}
    # both spikes are found near the labelled point: each window earns about σ(-0.5)/σ(-1) = 0.86,
    # normalised 100 * (0.86 + 1) / 2 = 93
    assert by_name["vigil"]["profiles"]["standard"]["tuned"] > 90
    assert by_name["null"]["profiles"]["standard"]["tuned"] == 0.0
    assert set(by_name["vigil"]["profiles"]) == {"standard", "low_fp", "low_fn"}
    standard = by_name["vigil"]["profiles"]["standard"]
    assert set(standard) == {"tuned", "threshold", "holdout", "holdout_thresholds", "holdout_halves"}
    assert len(standard["holdout_halves"]) == 2
    run(*args, "--detector", "null")
    text = bench.read_text()
    assert "someone else's" in text  # other sections untouched
    section = text.split("<!-- section:aiops-nab -->")[1].split("<!-- /section:aiops-nab -->")[0]
    assert sum(line.startswith("| 20") for line in section.splitlines()) == 3  # a history: 2 + 1 rows


def nab_rows(text: str) -> int:
    section = text.split("<!-- section:aiops-nab -->")[1].split("<!-- /section:aiops-nab -->")[0]
    return sum(line.startswith("| 20") for line in section.splitlines())


def test_evaluate_nab_prints_the_figures_and_writes_nothing_without_record(tmp_path):
    make_mini_corpus(tmp_path / "nab")
    docs = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"  # the default --benchmarks-file
    rows_before = nab_rows(docs.read_text())
    bench = tmp_path / "benchmarks.md"
    bench.write_text("# Benchmarks\n")
    for extra in ([], ["--benchmarks-file", str(bench)]):
        result = run("aiops", "evaluate", "nab", "--nab-dir", str(tmp_path / "nab"), "--detector", "null", *extra)
        assert result.exit_code == 0, result.output
        assert "null" in result.stdout and "standard" in result.stdout  # the table
        assert "recorded in" not in result.output
    assert bench.read_text() == "# Benchmarks\n"
    assert nab_rows(docs.read_text()) == rows_before


# --- options operators need: --sensitivity, --warmup, --format, --explain, and input errors ---------------

def detect_json(*args):
    result = run("aiops", "detect", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_sensitivity_moves_the_threshold_not_the_scores(tmp_path):
    source = str(write_series(tmp_path / "in.csv"))
    tuned = default_threshold("vigil")
    runs = {level: detect_json(source, "--sensitivity", level) for level in ("low", "medium", "high", "1", "0")}
    assert runs["medium"]["threshold"] == pytest.approx(tuned)
    assert runs["0"]["threshold"] > runs["low"]["threshold"] > tuned > runs["high"]["threshold"] > runs["1"]["threshold"]
    # documented mapping: the score odds t / (1 - t) scale by 2 ** (1 - 2s); vigil's odds are its ratio to
    # the recent record, so sensitivity 1 flags at half the record and 0 at twice it
    odds = lambda t: t / (1 - t)
    assert odds(runs["1"]["threshold"]) == pytest.approx(odds(tuned) / 2)
    assert odds(runs["0"]["threshold"]) == pytest.approx(odds(tuned) * 2)
    scores = [r["anomaly_score"] for r in runs["medium"]["rows"]]
    for run_ in runs.values():
        assert [r["anomaly_score"] for r in run_["rows"]] == scores
        assert all(r["label"] == int(r["anomaly_score"] >= run_["threshold"]) for r in run_["rows"])
    flagged = [runs[level]["flagged"] for level in ("0", "low", "medium", "high", "1")]
    assert flagged == sorted(flagged) and flagged[-1] > flagged[0]


@pytest.mark.parametrize("args, message", [
    (["--sensitivity", "extreme"], "'extreme' is not low, medium, high or a number"),
    (["--sensitivity", "1.5"], "outside 0..1"),
    (["--sensitivity", "high", "--threshold", "0.5"], "--threshold or --sensitivity, not both"),
    (["--warmup", "5"], "needs a warm-up of more than 20 points"),
    (["--warmup", "-1"], "--warmup"),
    (["--format", "xml"], "--format"),
])
def test_bad_options_are_usage_errors(tmp_path, args, message):
    result = run("aiops", "detect", str(write_series(tmp_path / "in.csv", n=50)), *args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_warmup_withholds_labels_and_lets_vigil_start_sooner(tmp_path):
    source = str(write_series(tmp_path / "in.csv", n=900))
    everything = detect_json(source, "--detector", "windowed-gaussian", "--threshold", "0", "--warmup", "100")
    labels = [r["label"] for r in everything["rows"]]
    assert labels[:100] == [0] * 100 and labels[100:] == [1] * 800
    assert everything["warmup"] == 100
    # a 190-point series with a spike at row 150: vigil's default warm-up (200 points) never labels it,
    # a warm-up of 60 does
    short = str(write_series(tmp_path / "short.csv", n=190, spike_at=150))
    assert detect_json(short)["flagged"] == 0
    rows = detect_json(short, "--warmup", "60")["rows"]
    assert rows[150]["label"] == 1 and sum(r["label"] for r in rows[:150]) == 0


def test_json_carries_the_same_rows_as_csv(tmp_path):
    source = str(write_series(tmp_path / "in.csv"))
    doc = detect_json(source)
    csv_rows = list(csv.DictReader(io.StringIO(run("aiops", "detect", source, "--format", "csv").stdout)))
    assert run("aiops", "detect", source, "--format", "csv").stdout == run("aiops", "detect", source).stdout
    assert doc["file"] == source and doc["detector"] == "vigil" and doc["rows_scored"] == 900
    assert doc["threshold"] == pytest.approx(default_threshold("vigil"))
    assert doc["flagged"] == sum(r["label"] for r in doc["rows"]) >= 1
    assert [(r["timestamp"], f"{r['anomaly_score']:.6f}", str(r["label"])) for r in doc["rows"]] == \
        [(r["timestamp"], r["anomaly_score"], r["label"]) for r in csv_rows]
    out = tmp_path / "out.json"
    result = run("aiops", "detect", source, "--format", "json", "--output", str(out))
    assert result.exit_code == 0 and json.loads(out.read_text()) == doc


def test_explain_says_which_test_flagged_with_its_numbers(tmp_path):
    source = str(write_series(tmp_path / "in.csv"))
    result = run("aiops", "detect", source, "--explain")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == ["timestamp", "value", "anomaly_score", "label", "explanation"]
    flagged = [r for r in rows if r["label"] == "1"]
    assert flagged and rows[700] in flagged
    for i, row in enumerate(rows):
        if i < 200:  # vigil's own warm-up
            assert row["explanation"].startswith("warm-up: "), row
            continue
        if row["label"] == "0":
            assert row["explanation"] == ""
            continue
        why = row["explanation"]
        assert any(test in why for test in ("spike", "level shift", "daily pattern", "volatility", "breakout")), why
        assert "x the recent record" in why
        assert f"score {float(row['anomaly_score']):.3f} >= threshold {default_threshold('vigil'):.3f}" in why
    gaussian = detect_json(source, "--explain", "--detector", "windowed-gaussian", "--warmup", "10")
    spike = gaussian["rows"][700]
    assert spike["label"] == 1 and "std from the mean" in spike["explanation"]
    assert all(r["explanation"].startswith("warm-up: not labelled, row ") for r in gaussian["rows"][:10])
    assert all(r["explanation"] is None for r in gaussian["rows"][10:] if r["anomaly_score"] < gaussian["threshold"])


def one_line_error(path, *args):
    result = run("aiops", "detect", str(path), *args)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_file_without_timestamp_value_columns(tmp_path):
    bad = tmp_path / "cpu.csv"
    bad.write_text("time,cpu\n2024-01-01 00:00:00,1\n")
    assert one_line_error(bad) == (f"Error: {bad}:1: header must be 'timestamp,value', got 'time,cpu' "
                                   "(no column 'timestamp' or 'value')")
    bad.write_text("2024-01-01 00:00:00,1\n2024-01-01 00:05:00,2\n")
    assert "the first line holds data: add the header line 'timestamp,value'" in one_line_error(bad)


def test_non_numeric_value_names_its_row(tmp_path):
    bad = tmp_path / "m.csv"
    bad.write_text("timestamp,value\n2024-01-01 00:00:00,1\n2024-01-01 00:05:00,2\n2024-01-01 00:10:00,n/a\n")
    assert one_line_error(bad) == f"Error: {bad}:4: bad value 'n/a' (want a number)"


def test_unsorted_timestamps_name_both_rows_unless_allowed(tmp_path):
    bad = tmp_path / "m.csv"
    bad.write_text("timestamp,value\n2024-01-01 00:00:00,1\n2024-01-01 00:10:00,2\n2024-01-01 00:05:00,3\n")
    assert one_line_error(bad) == (f"Error: {bad}:4: timestamp '2024-01-01 00:05:00' is earlier than "
                                   "'2024-01-01 00:10:00' on line 3: rows must be in time order (sort the file, "
                                   "or pass --allow-unsorted)")
    bad.write_text("timestamp,value\n2024-01-01 00:00:00,1\n2024-01-01 00:05:00+00:00,2\n")
    assert "mix a UTC offset with none" in one_line_error(bad)
    bad.write_text("timestamp,value\n2024-01-01 00:00:00,1\n2024-01-01 00:10:00,2\n2024-01-01 00:05:00,3\n")
    result = run("aiops", "detect", str(bad), "--allow-unsorted")
    assert result.exit_code == 0, result.output
    assert [r["timestamp"] for r in csv.DictReader(io.StringIO(result.stdout))] == \
        ["2024-01-01 00:00:00", "2024-01-01 00:10:00", "2024-01-01 00:05:00"]  # file order


# --- a file that is all warm-up says so; a UTF-8 byte-order mark is accepted -------------------------------

def write_spiked(path, n=600, spike_at=400, spike_rows=10, bom=False):
    """`n` GPU temperatures 5 minutes apart around 60 °C, +25 °C for `spike_rows` rows from `spike_at`."""
    start = datetime(2024, 3, 1)
    lines = ["timestamp,value"]
    for i in range(n):
        value = 60 + 2 * math.sin(i / 12) + 0.3 * math.sin(i * 1.7) + (25 if spike_at <= i < spike_at + spike_rows else 0)
        lines.append(f"{start + timedelta(minutes=5 * i):%Y-%m-%d %H:%M:%S},{value:.3f}")
    path.write_text(("\ufeff" if bom else "") + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_file_that_is_all_warm_up_says_so_and_how_to_fix_it(tmp_path):
    source = write_spiked(tmp_path / "gpu_temp.csv")
    out = tmp_path / "scores.csv"
    result = run("aiops", "detect", str(source), "--detector", "evt", "--output", str(out), "--explain")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(out.open()))
    # evt's default warm-up is 2.5 days: 720 points at 5 minutes, more than the file
    assert len(rows) == 600 and not any(r["label"] == "1" for r in rows)
    assert "600 rows scored, 0 labelled anomalous" in result.stderr
    assert "600 warm-up rows unlabelled" in result.stderr
    assert "hint: 600 of 600 rows were the evt detector's warm-up" in result.stderr
    assert "--warmup N" in result.stderr and result.stdout == ""
    assert all(r["explanation"].startswith("warm-up: ") for r in rows), rows[0]
    # the hint works: a shorter warm-up labels the spike, and no hint is given
    result = run("aiops", "detect", str(source), "--detector", "evt", "--output", str(out), "--warmup", "200")
    assert result.exit_code == 0, result.output
    labels = [r["label"] for r in csv.DictReader(out.open())]
    assert "1" in labels[400:410] and "200 warm-up rows unlabelled" in result.stderr
    assert "hint:" not in result.stderr


@pytest.mark.parametrize("detector", sorted(DETECTORS))
def test_explain_marks_each_detectors_warm_up_rows(tmp_path, detector):
    source = write_spiked(tmp_path / "gpu_temp.csv", n=400, spike_at=300)
    doc = detect_json(str(source), "--detector", detector, "--explain", "--threshold", "0.5")
    rows = doc["rows"]
    warm = [i for i, r in enumerate(rows) if (r["explanation"] or "").startswith("warm-up")]
    assert warm == list(range(doc["warmup_rows"])), (detector, warm[:5], doc["warmup_rows"])
    own = {"vigil": 200, "vigil-points": 288, "evt": 400, "evt-alarms": 400, "windowed-gaussian": 1, "null": 0}[detector]
    # evt: 2.5 days at 5 minutes is 720 points, more than the file; vigil-points: one day, 288 points
    assert doc["warmup_rows"] == own
    assert all(r["anomaly_score"] == 0 for r in rows[:own])
    assert all(r["label"] == 0 for r in rows[:own])
    hinted = run("aiops", "detect", str(source), "--detector", detector).stderr
    assert ("hint:" in hinted) == (own * 2 >= len(rows))


def test_a_byte_order_mark_is_accepted(tmp_path):
    plain = write_spiked(tmp_path / "plain.csv")
    marked = write_spiked(tmp_path / "marked.csv", bom=True)
    assert marked.read_bytes()[:3] == b"\xef\xbb\xbf"
    result = run("aiops", "detect", str(marked), "--warmup", "100")
    assert result.exit_code == 0, result.output
    assert result.stdout == run("aiops", "detect", str(plain), "--warmup", "100").stdout
    assert result.stdout.startswith("timestamp,value,")
