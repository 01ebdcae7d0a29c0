"""NAB scoring against hand-computed cases, and the exact threshold sweep against a naive scorer."""

import math

import numpy as np
import pytest

from vigil.aiops.nab.scoring import ThresholdCurve, file_weights, probation_length, scaled_sigmoid

STANDARD = {"tpWeight": 1.0, "fnWeight": 1.0, "fpWeight": 0.11}
LOW_FN = {"tpWeight": 1.0, "fnWeight": 2.0, "fpWeight": 0.11}

# One file of 20 rows: probation = floor(0.15 * 20) = 3 rows (0, 1, 2 are never scored).
# One window over rows 10..14 (width 5).
N, WINDOW = 20, [(10, 14)]
SIGMA_MINUS_1 = 2 / (1 + math.exp(-5)) - 1  # σ(-1) = 2/1.0067379 - 1 = 0.9866143


def raw_with_detections(rows, cost=STANDARD, n=N, windows=WINDOW):
    """Raw score of one file when exactly `rows` are detections (score 1, others 0, threshold 0.5)."""
    scores = np.zeros(n)
    scores[list(rows)] = 1.0
    curve = ThresholdCurve([(scores, file_weights(n, windows, cost))], cost)
    return curve.raw_at(0.5), curve


def test_probation_length_is_15_percent_capped_at_750():
    assert probation_length(20) == 3
    assert probation_length(1000) == 150
    assert probation_length(4032) == 604  # floor(604.8)
    assert probation_length(22695) == 750


def test_scaled_sigmoid_values():
    # σ(y) = 2/(1+e^{5y}) - 1: σ(-1) = 0.98661, σ(0) = 0, σ(1) = -0.98661, y >= 3 -> exactly -1
    assert scaled_sigmoid(-1.0) == pytest.approx(0.986614, abs=1e-6)
    assert scaled_sigmoid(0.0) == pytest.approx(0.0)
    assert scaled_sigmoid(1.0) == pytest.approx(-0.986614, abs=1e-6)
    assert scaled_sigmoid(3.0) == -1.0


def test_detection_at_window_start_earns_the_full_true_positive():
    # row 10: y = -(14 - 10 + 1)/5 = -1 -> σ(-1)/σ(-1) * tpWeight = 1.0
    raw, curve = raw_with_detections([10])
    assert raw == pytest.approx(1.0)
    # normalised: S_null = -1 (one window missed), S_perfect = +1 -> 100 * (1 + 1) / 2 = 100
    assert curve.normalise(raw) == pytest.approx(100.0)


def test_later_detection_earns_less():
    # row 12: y = -(14 - 12 + 1)/5 = -0.6; σ(-0.6) = 2/(1 + e^-3) - 1 = 2/1.0497871 - 1 = 0.9051483
    # worth = 0.9051483 / 0.9866143 = 0.9174285
    raw, _ = raw_with_detections([12])
    assert raw == pytest.approx(0.9174285, abs=1e-6)
    # last row of the window: y = -(14 - 14 + 1)/5 = -0.2; σ(-0.2) = 2/(1 + e^-1) - 1 = 0.4621172
    # worth = 0.4621172 / 0.9866143 = 0.4683869
    assert raw_with_detections([14])[0] == pytest.approx(0.4683869, abs=1e-6)


def test_only_the_earliest_detection_of_a_window_counts():
    # rows 11 and 13: only row 11 counts: y = -0.8, σ(-0.8) = 2/(1 + e^-4) - 1 = 0.9640276
    # worth = 0.9640276 / 0.9866143 = 0.9771074; row 13 adds nothing (it is no false positive either)
    raw, _ = raw_with_detections([11, 13])
    assert raw == pytest.approx(0.9771074, abs=1e-6)


def test_missed_window_costs_fn_weight_and_early_false_positive_costs_fp_weight():
    # nothing detected: -fnWeight = -1
    assert raw_with_detections([])[0] == pytest.approx(-1.0)
    # row 5 (after probation, before any window): -fpWeight = -0.11, plus the missed window: -1.11
    assert raw_with_detections([5])[0] == pytest.approx(-1.11)
    # low-FN profile: the missed window costs -2
    assert raw_with_detections([5], cost=LOW_FN)[0] == pytest.approx(-2.11)


def test_detection_during_probation_is_ignored():
    assert raw_with_detections([1])[0] == pytest.approx(-1.0)


def test_false_positive_after_a_window_costs_by_distance():
    # row 16: y = |14 - 16| / (5 - 1) = 0.5; σ(0.5) = 2/(1 + e^2.5) - 1 = 2/13.182494 - 1 = -0.8482836
    # cost = 0.11 * -0.8482836 = -0.0933112; plus the missed window -1 -> -1.0933112
    assert raw_with_detections([16])[0] == pytest.approx(-1.0933112, abs=1e-6)
    # row 19: y = 5/4 = 1.25 -> σ = 2/(1 + e^6.25) - 1 = -0.9961...; cost -0.1095716
    assert raw_with_detections([19])[0] == pytest.approx(-1 + 0.11 * (2 / (1 + math.exp(6.25)) - 1), abs=1e-9)


def test_window_entirely_in_probation_is_not_counted():
    weights = file_weights(100, [(2, 8), (50, 60)], STANDARD)  # probation = 15 rows
    assert weights.n_windows == 1


def naive_raw(files, threshold, cost):
    """Direct transcription of the rules, one threshold at a time (the reference for the sweep)."""
    total = 0.0
    for scores, windows in files:
        n = len(scores)
        start = probation_length(n)
        best = {}
        for k, (left, right) in enumerate(windows):
            if right >= start:
                best[k] = -cost["fnWeight"]
        for i in range(start, n):
            if scores[i] < threshold:
                continue
            inside = [k for k, (l, r) in enumerate(windows) if l <= i <= r]
            if inside:
                l, r = windows[inside[0]]
                worth = scaled_sigmoid(-(r - i + 1) / (r - l + 1)) / SIGMA_MINUS_1 * cost["tpWeight"]
                best[inside[0]] = max(best[inside[0]], float(worth))
            else:
                before = [(l, r) for l, r in windows if r < i]
                if before and before[-1][1] - before[-1][0] > 0:
                    l, r = before[-1]
                    total += float(scaled_sigmoid((i - r) / (r - l))) * cost["fpWeight"]
                else:
                    total += -cost["fpWeight"]
        total += sum(best.values())
    return total


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_threshold_sweep_matches_naive_scoring_at_every_threshold(seed):
    rng = np.random.default_rng(seed)
    files = []
    for n, windows in [(200, [(60, 80), (150, 170)]), (120, [(40, 55)]), (90, [])]:
        scores = np.round(rng.random(n), 2)  # rounding makes ties, which must be handled as one threshold
        files.append((scores, windows))
    curve = ThresholdCurve([(s, file_weights(len(s), w, LOW_FN)) for s, w in files], LOW_FN)
    for threshold in [1.1, 0.99, 0.95, 0.9, 0.8, 0.5, 0.31, 0.0]:
        assert curve.raw_at(threshold) == pytest.approx(naive_raw(files, threshold, LOW_FN), abs=1e-9)
    best_threshold, best_raw = curve.best()
    candidates = sorted({1.1, *np.concatenate([s for s, _ in files]).tolist()})
    assert best_raw == pytest.approx(max(naive_raw(files, t, LOW_FN) for t in candidates), abs=1e-9)
    assert best_raw == pytest.approx(naive_raw(files, best_threshold, LOW_FN), abs=1e-9)


def test_held_out_halves_alternate_within_categories_and_never_leave_one_empty():
    from types import SimpleNamespace

    from vigil.aiops.nab.evaluate import split_halves

    def files(*names):
        return [SimpleNamespace(name=n, category=n.split("/", 1)[0]) for n in names]

    whole = files("a/2.csv", "a/1.csv", "b/1.csv", "b/2.csv")
    assert split_halves(whole) == ([1, 2], [0, 3])  # each category split in name order
    subset = files("b/1.csv", "a/1.csv", "c/1.csv")  # one file per category: alternate over all files
    first, second = split_halves(subset)
    assert first and second and sorted(first + second) == [0, 1, 2]
