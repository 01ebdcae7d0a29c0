"""`train` over a generator: the same entries as over the whole list, read one series at a time."""

from __future__ import annotations

import numpy as np

from vigil.aiops.baseline import synthetic
from vigil.aiops.baseline.store import load_store, save_store
from vigil.aiops.baseline.train import TrainSettings, train
from vigil.aiops.history.series import Series

SETTINGS = TrainSettings()


def fleet() -> list[Series]:
    t = synthetic.grid(days=14)
    kinds = sorted(synthetic.GENERATORS)
    out = [Series(f"vigil_test_{kind}", {"node": f"n{i}", "job": "a", "instance": f"n{i}:1"}, t,
                  synthetic.GENERATORS[kind](t, np.random.default_rng(i)))
           for i, kind in enumerate(kinds * 2)]
    # the same identity once job/instance are dropped, fewer points: reported as skipped
    out.append(Series(out[0].name, {"node": "n0", "job": "b", "instance": "n0:2"}, t[:500], out[0].values[:500]))
    out.append(Series("vigil_test_short", {"node": "n1"}, t[:5], np.ones(5)))  # too short: skipped
    return out


def test_training_over_a_generator_gives_the_entries_of_training_over_the_list(tmp_path):
    whole = train(fleet(), SETTINGS)
    fitted = []

    def one_at_a_time():
        for i, series in enumerate(fleet()):
            assert len(fitted) == i  # train asked for the next series only after fitting the previous one
            yield series

    streamed = train(one_at_a_time(), SETTINGS, on_series=lambda: fitted.append(1))
    assert streamed.entries == whole.entries and streamed.skipped == whole.skipped
    assert streamed.read == whole.read == len(fleet()) and len(whole.entries) == len(fleet()) - 2
    assert any("same labels as another series" in reason for reason in whole.skipped)
    save_store(tmp_path / "list", whole.entries, {})
    save_store(tmp_path / "stream", streamed.entries, {})
    assert (tmp_path / "list" / "baselines.json").read_bytes() == (tmp_path / "stream" / "baselines.json").read_bytes()
    assert len(load_store(tmp_path / "stream")["series"]) == len(whole.entries)
