"""The rule that picks evt's setting on the tune half: the best point-adjusted F1 among the settings at
least as precise as the floor (the precision `vigil`'s labels have), else the most precise one."""

from vigil.aiops.kpi_synth.evaluate import MIN_PRECISION, KpiScore, choose
from vigil.aiops.kpi_synth.scoring import Counts


def scored(tp, fp, fn, strict=Counts()):
    return KpiScore(adjusted=Counts(tp, fp, fn), strict=strict)


def test_the_best_f1_above_the_precision_floor_wins_not_the_best_f1():
    tune = {"loud": scored(950, 90, 50),  # F1 0.93, precision 0.913
            "careful": scored(900, 40, 100),  # F1 0.93, precision 0.957
            "quiet": scored(600, 10, 400)}  # precision 0.98, F1 0.75
    assert MIN_PRECISION == 0.952
    assert choose(tune) == "careful"
    assert choose(tune, min_precision=None) == "loud"


def test_with_no_setting_precise_enough_the_most_precise_is_chosen():
    tune = {"a": scored(900, 100, 0), "b": scored(800, 60, 200)}
    assert choose(tune) == "b"


def test_ties_on_f1_go_to_the_better_strict_f1():
    tune = {"a": scored(900, 30, 100, strict=Counts(500, 30, 500)),
            "b": scored(900, 30, 100, strict=Counts(700, 30, 300))}
    assert choose(tune) == "b"
