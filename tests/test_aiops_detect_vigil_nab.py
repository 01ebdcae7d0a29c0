"""vigil's detector on the whole NAB corpus: above the published floor (earthgecko Skyline, 58.2)."""

import os
from pathlib import Path

import pytest

from vigil.aiops.detect import stored_thresholds
from vigil.aiops.nab.corpus import DEFAULT_NAB_DIR, NabCorpusError, load_corpus
from vigil.aiops.nab.evaluate import evaluate

FLOOR = 58.2  # earthgecko Skyline's published standard score


@pytest.fixture(scope="module")
def result():
    root = Path(os.environ.get("NAB_DIR", DEFAULT_NAB_DIR))
    try:
        corpus = load_corpus(root)
    except NabCorpusError as exc:
        pytest.fail(f"{exc} (set NAB_DIR to the corpus location)")
    return evaluate(corpus, "vigil")


@pytest.mark.slow
def test_vigil_beats_the_floor_tuned_and_held_out(result):
    standard = result.profiles["standard"]
    assert standard.tuned > FLOOR
    assert standard.holdout > FLOOR  # thresholds never saw the labels of the files they score


@pytest.mark.slow
def test_stored_default_thresholds_belong_to_this_detector_version(result):
    stored = stored_thresholds()["vigil"]
    assert stored["parameters"] == result.parameters, "re-run: vigil aiops evaluate nab --save-thresholds"
    for profile, outcome in result.profiles.items():
        assert stored[profile] == pytest.approx(outcome.threshold)
