"""The rule benchmark's (bench/rules/run.py) summary of rule work, on figures worked out by hand."""

import pytest
from bench_support import load_bench

run = load_bench("rules/run.py")
rules_report = load_bench("rules/rules_report.py")


def test_rule_work_is_counted_a_minute_at_each_groups_interval_in_units_of_a_plain_selector():
    result = {"nodes": 1250, "intervals_s": {"vigil-gpu": 15, "vigil-gpu-load": 60},
              "rules_ms": {"vigil-gpu/GpuUncorrectableEccErrors": [90, 100, 400],   # median 100: the unit
                           "vigil-gpu/GpuFallenOffBus": [300, 300],                    # median 300
                           "vigil-gpu-load/GpuThermalThrottling": [200, 250, 150],     # median 200
                           "vigil-gpu-load/NeverEvaluated": []}}
    (line,) = [text for text in rules_report.work_summary([result]) if text.startswith("- ")]
    # a minute: vigil-gpu (100 + 300) x 4 evaluations + vigil-gpu-load 200 x 1 = 1,800 ms = 18 units
    assert line == "- 1250 nodes: unit 100 ms; 18.0 units a minute; an evaluation: vigil-gpu 4.0, vigil-gpu-load 2.0"


def test_gc_cycles_are_read_from_the_go_trace_and_evaluations_during_one_are_told_apart():
    stack = load_bench("rules/stack.py")
    log = ("ts=2026-11-24T09:12:00Z caller=main.go level=info msg=\"Starting Prometheus\"\n"
           "gc 24 @120.500s 3%: 0.10+1499.8+0.10 ms clock, 0.20+900/700/0+0.20 ms cpu, 3452->3500->1855 MB, "
           "3600 MB goal, 0 MB stacks, 0 MB globals, 2 P\n"
           "gc 25 @300.000s 2%: 0.5+499+0.5 ms clock, 1.0+300/200/0+1.0 ms cpu, 3000->3100->1900 MB, "
           "3700 MB goal, 0 MB stacks, 0 MB globals, 2 P\n")
    cycles = stack.gc_cycles(log, start=1000.0)
    assert cycles == [(1120.5, 1122.0), (1300.0, 1300.5)]
    result = {"window": [1100.0, 1200.0], "groups": {"g": {"last_ms": 300, "max_ms": 2000, "evaluations": 3},
                                                     "h": {"last_ms": 900, "max_ms": 900, "evaluations": 1}},
              "evaluations": {"g": [[1110.0, 500], [1119.0, 2000], [1150.0, 300]],   # 1119 + 2 s overlaps gc 24
                              "h": [[1121.0, 900]]}}                                  # inside gc 24
    out = run.with_gc(result, cycles)
    assert (out["gc_cycles"], out["gc_mark_ms"]) == (1, [1500])   # gc 25 is after the window
    assert out["groups"]["g"]["max_outside_gc_ms"] == 500 and out["groups"]["g"]["during_gc"] == 1
    assert out["groups"]["h"]["max_outside_gc_ms"] is None and out["groups"]["h"]["during_gc"] == 1
    assert rules_report.group_cells(out["groups"]["g"]) == "300 / 2000 | 500 (1)"
    assert rules_report.group_cells(out["groups"]["h"]) == "900 / 900 | - (1)"


def test_only_rule_evaluations_inside_the_window_are_counted():
    started = 1795513021.5  # 2026-11-24T09:37:01.5Z
    assert run.evaluated_after("2026-11-24T09:37:01.623456789Z", started)
    assert not run.evaluated_after("2026-11-24T09:37:01.123Z", started)   # the one before the window
    assert not run.evaluated_after("0001-01-01T00:00:00Z", started)       # never evaluated yet
    assert not run.evaluated_after("", started)


def test_the_probe_reads_named_rules_from_the_generated_file_and_refuses_unknown_names(tmp_path):
    probe = load_bench("rules/probe.py")
    rules = tmp_path / "vigil-rules.yml"
    rules.write_text("groups:\n- name: g\n  rules:\n  - record: gpu:x:eq1\n    expr: x == 1\n"
                     "  - alert: XHigh\n    expr: x > 2\n")
    assert probe.expressions(rules, ["XHigh", "gpu:x:eq1"]) == {"XHigh": "x > 2", "gpu:x:eq1": "x == 1"}
    with pytest.raises(SystemExit, match="^not in the generated rules: Nope$"):
        probe.expressions(rules, ["XHigh", "Nope"])


def test_the_xid_recurring_bench_history_gives_every_series_three_occasions_and_their_times():
    """bench/rules/xid_recurring.py: each counter appears 3 times in the week (first event, two node reboots
    of 10 minutes), its own last time holds the minute of its latest appearance, and its GPU's the newest
    of its two XIDs'."""
    import numpy as np

    bench = load_bench("rules/xid_recurring.py")
    end = 1_800_000_000.0
    rows = bench.history(16, 7, end)
    assert len(rows) == 16 + 16 + 8  # two XIDs a GPU, each with its time; the GPU's time
    for g in range(8):
        group = rows[5 * g:5 * g + 5]
        counters, per_xid, per_gpu = group[0:4:2], group[1:4:2], group[4]
        assert len({c[1]["xid"] for c in counters}) == 2 and "xid" not in per_gpu[1]
        latest = []
        for (_, labels, t, values), (_, xid_labels, _, seen) in zip(counters, per_xid):
            present = ~np.isnan(values)
            appearances = np.flatnonzero(present & ~np.concatenate(([False], present[:-1])))
            assert len(appearances) == 3 and t[appearances[0]] < t[0] + 86400
            assert np.all(np.diff(t[appearances]) >= 86400)  # reboots on separate days: separate occasions
            assert xid_labels == labels and np.array_equal(np.isnan(seen), ~present)
            assert seen[-1] == t[appearances[-1]]
            latest.append(seen)
        assert np.array_equal(per_gpu[3], np.fmax(*latest), equal_nan=True)
