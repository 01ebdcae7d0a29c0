"""How much does choosing `vigil`'s parameters on NAB flatter its NAB score? A cross-half check.

    .venv/bin/python bench/aiops/nab_params.py [--record]

`vigil aiops evaluate nab`'s held-out figure protects the threshold only: the detector's parameters
were chosen by hand on the whole corpus. Here the parameters are chosen too, from a small grid around
the shipped ones (warm-up × quiet period × shift span), on one half of the files together with
the threshold, and the choice scores the other half, both ways (the halves of `evaluate nab`). The two
raw totals are normalised together, as `evaluate nab` does. Figures go to section `aiops-nab-params` of
docs/benchmarks.md with --record only.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402
from vigil.aiops.detect.vigil_detector import VigilDetector, VigilParameters  # noqa: E402
from vigil.aiops.nab.corpus import load_corpus  # noqa: E402
from vigil.aiops.nab.evaluate import profile_curves, run_detector  # noqa: E402
from vigil.aiops.nab.scoring import ThresholdCurve  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
SECTION = "aiops-nab-params"
GRID = {"warmup": (200, 300), "quiet": (200, 100, 300), "shift_span": (10, 5, 20)}  # must hold the shipped setting


def curves(corpus, params: dict) -> tuple[ThresholdCurve, ThresholdCurve, ThresholdCurve]:
    """Standard-profile threshold curves of half A, half B and the whole corpus for one setting."""
    scores, _ = run_detector(corpus, lambda f: VigilDetector(VigilParameters(**params)))
    whole, half_a, half_b = profile_curves(corpus, scores, "standard")
    return half_a, half_b, whole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_record_option(parser)
    args = parser.parse_args()
    corpus = load_corpus()
    settings = [dict(zip(GRID, values)) for values in itertools.product(*GRID.values())]
    results = [(p, *curves(corpus, p)) for p in settings]
    defaults = VigilParameters()
    shipped = next(r for r in results if all(getattr(defaults, name) == value for name, value in r[0].items()))

    def own(curve: ThresholdCurve) -> float:
        return curve.normalise(curve.best()[1])

    rows = [f"| {p['warmup']} | {p['quiet']} | {p['shift_span']}{' *' if p is shipped[0] else ''} | {own(w):.1f} | "
            f"{own(a):.1f} | {own(b):.1f} |" for p, a, b, w in results]
    on_a = max(results, key=lambda r: r[1].best()[1])  # parameters and threshold chosen on A ...
    on_b = max(results, key=lambda r: r[2].best()[1])
    raw_b = on_a[2].raw_at(on_a[1].best()[0])  # ... score B
    raw_a = on_b[1].raw_at(on_b[2].best()[0])
    whole = on_a[3]
    threshold_only = whole.normalise(shipped[2].raw_at(shipped[1].best()[0]) + shipped[1].raw_at(shipped[2].best()[0]))
    best = max(results, key=lambda r: r[3].best()[1])
    text = f"""## AIOps: `vigil` parameters chosen on one NAB half, scored on the other (`bench/aiops/nab_params.py`)

Machine: {machine_summary()}. Date: {utc_now()}. Command: `.venv/bin/python bench/aiops/nab_params.py`.
Standard profile. Grid: warm-up {GRID['warmup']}, quiet period {GRID['quiet']}, shift span
{GRID['shift_span']} (* the shipped setting). Each half's own figure uses its own best threshold.

| warm-up | quiet | shift span | whole corpus | half A | half B |
|---:|---:|---:|---:|---:|---:|
""" + "\n".join(rows) + f"""

* Parameters and threshold chosen on half A ({on_a[0]}) score half B {on_a[2].normalise(raw_b):.1f}; chosen
  on half B ({on_b[0]}) they score half A {on_b[1].normalise(raw_a):.1f}. Together: **{whole.normalise(raw_a + raw_b):.1f}**.
* The shipped setting with its threshold alone held out (`evaluate nab`'s held-out figure): {threshold_only:.1f}.
* The grid's best on the whole corpus: {best[0]}, {own(best[3]):.1f}.
"""
    print(text)
    if args.record:
        write_section(DOC, SECTION, text)


if __name__ == "__main__":
    main()
