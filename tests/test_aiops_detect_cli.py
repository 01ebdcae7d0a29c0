"""`vigil aiops detect` and `vigil aiops evaluate nab` as a user runs them."""

import csv
import io
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from vigil.aiops.detect import default_threshold
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
