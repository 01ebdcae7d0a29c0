"""The rule benchmark's (bench/rules/run.py) summary of rule work, on figures worked out by hand."""

from bench_support import load_bench

run = load_bench("rules/run.py")


def test_rule_work_is_counted_a_minute_at_each_groups_interval_in_units_of_a_plain_selector():
    result = {"nodes": 1250, "intervals_s": {"vigil-gpu": 15, "vigil-gpu-load": 60},
              "rules_ms": {"vigil-gpu/GpuUncorrectableEccErrors": [90, 100, 400],   # median 100: the unit
                           "vigil-gpu/GpuFallenOffBus": [300, 300],                    # median 300
                           "vigil-gpu-load/GpuThermalThrottling": [200, 250, 150],     # median 200
                           "vigil-gpu-load/NeverEvaluated": []}}
    (line,) = [text for text in run.work_summary([result]) if text.startswith("- ")]
    # a minute: vigil-gpu (100 + 300) x 4 evaluations + vigil-gpu-load 200 x 1 = 1,800 ms = 18 units
    assert line == "- 1250 nodes: unit 100 ms; 18.0 units a minute; an evaluation: vigil-gpu 4.0, vigil-gpu-load 2.0"
