"""The scorer on the real NAB corpus reproduces published figures of reimplemented reference detectors.

The corpus is found at $NAB_DIR, else at ../shared/data/nab beside the repository (as in CI).
"""

import os
from pathlib import Path

import pytest

from vigil.aiops.nab.corpus import DEFAULT_NAB_DIR, NabCorpusError, load_corpus
from vigil.aiops.nab.evaluate import PROFILES, evaluate


@pytest.fixture(scope="module")
def corpus():
    root = Path(os.environ.get("NAB_DIR", DEFAULT_NAB_DIR))
    try:
        return load_corpus(root)
    except NabCorpusError as exc:
        pytest.fail(f"{exc} (set NAB_DIR to the corpus location)")


def test_missing_corpus_is_a_clear_error(tmp_path):
    with pytest.raises(NabCorpusError, match="NAB corpus not found"):
        load_corpus(tmp_path)


@pytest.mark.slow
def test_corpus_shape(corpus):
    assert len(corpus.files) == 58
    assert corpus.n_points == 365_558
    assert sum(len(f.windows) for f in corpus.files) == 116


@pytest.mark.slow
def test_null_detector_scores_zero_everywhere(corpus):
    result = evaluate(corpus, "null")
    for profile in PROFILES:
        assert result.profiles[profile].tuned == pytest.approx(0.0, abs=1e-9)


@pytest.mark.slow
def test_windowed_gaussian_reproduces_published_scores(corpus):
    published = corpus.published["windowedGaussian"]
    result = evaluate(corpus, "windowed-gaussian")
    assert result.profiles["standard"].tuned == pytest.approx(published["standard"], abs=2.0)  # 40.1 vs 39.6
    assert result.profiles["low_fn"].tuned == pytest.approx(published["reward_low_FN_rate"], abs=2.0)  # 47.7 vs 47.4
    # low FP: 23.9 vs 20.9 published; the gap is documented in docs/aiops-anomaly.md
    assert result.profiles["low_fp"].tuned == pytest.approx(published["reward_low_FP_rate"], abs=3.5)


@pytest.mark.slow
def test_relative_entropy_reproduces_published_scores_exactly(corpus):
    # a detector whose scores are only 0 or 1 leaves the scorer no slack: all three profiles must
    # match NAB's published figures to the second decimal
    published = corpus.published["relativeEntropy"]
    result = evaluate(corpus, "relative-entropy")
    assert result.profiles["standard"].tuned == pytest.approx(published["standard"], abs=0.01)  # 54.64
    assert result.profiles["low_fp"].tuned == pytest.approx(published["reward_low_FP_rate"], abs=0.01)  # 47.60
    assert result.profiles["low_fn"].tuned == pytest.approx(published["reward_low_FN_rate"], abs=0.01)  # 58.84
