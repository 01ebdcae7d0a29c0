"""How much does choosing `vigil`'s parameters on NAB flatter its NAB score? A cross-half check.

    .venv/bin/python bench/aiops/nab_params.py [--record] [--processes N] [--search TEXT]

`vigil aiops evaluate nab`'s held-out figure protects the threshold only: the detector's parameters are
chosen on the corpus too. Here the choosing is done by a procedure, so that it can be repeated on half
the files: a coordinate search from an earlier version's setting over candidate values per parameter, passes
until nothing changes, each step keeping the value with the best score at its own best threshold. Run
on one half of the files (the halves of `evaluate nab`), its setting and threshold score the other
half, both ways; the two raw totals are normalised together, as `evaluate nab` does. No label of the
files it scores chose the searched parameters or the threshold (the rest of the setting, and the
searched test itself, were chosen on the whole corpus).

Three searches: over the breakout test's tolerance alone from version 5 (version 6's change), over the
spike memory and the z floor from version 7 (a candidate for version 8, not shipped: docs/aiops-anomaly.md),
and over every parameter from version 5.
`--search TEXT` runs only the searches whose title holds TEXT (not with --record). Figures go to section
`aiops-nab-params` of docs/benchmarks.md with --record only.
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402
from vigil.aiops.detect.vigil_detector import VigilDetector, VigilParameters  # noqa: E402
from vigil.aiops.nab.corpus import load_corpus  # noqa: E402
from vigil.aiops.nab.evaluate import profile_curves, run_detector  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
SECTION = "aiops-nab-params"
#: version 7's setting, the shipped one (spike memory and z floor spelled out: the two the candidate search moves)
VERSION_7 = replace(VigilParameters(), spike_memory=2000, z_floor=3.0)
#: version 5, the last setting before the breakout test
VERSION_5 = replace(VERSION_7, breakout_tolerance=0.0)
STARTS = {"version 5": VERSION_5, "version 7": VERSION_7}
BREAKOUT = {"breakout_tolerance": (0.0, 0.02, 0.03, 0.05, 0.07, 0.1)}
SPIKES = {"spike_memory": (1000, 2000, 3000, 4000, 6000, 8000), "z_floor": (2.5, 3.0, 3.5, 4.0, 4.5)}
#: title -> (the setting a search starts from, candidate values per parameter, searched in this order)
SEARCHES = {
    "the breakout tolerance alone": ("version 5", BREAKOUT),
    "the spike memory and the z floor (a candidate for version 8)": ("version 7", SPIKES),
    "every parameter": ("version 5", {
        **BREAKOUT,
        "breakout_memory": (100, 300, 1000),
        "spike_memory": (1000, 2000, 3000, 4000, 6000),
        "memory": (700, 1000, 1500),
        "z_floor": (2.5, 3.0, 3.5, 4.0),
        "shift_span": (5, 10, 20),
        "season_span": (5, 10, 20, 30),
        "volatility_span": (30, 50, 100, 150),
        "warmup": (150, 200, 300),
        "quiet": (100, 200, 300),
        "escalate": (1.3, 1.5, 2.0),
        "baseline": (3000, 5000, 8000),
    }),
}
MAX_PASSES = 4
SCOPES = ("A", "B", "whole")


@dataclass(frozen=True)
class Outcome:
    """One setting's standard-profile figures: each scope at its own best threshold, and each half
    scored at the other half's best threshold (raw), for the cross-half figure."""

    own: dict  # scope -> normalised score at the scope's own best threshold
    raw_a_at_b: float  # half A's raw score at half B's best threshold
    raw_b_at_a: float


_CORPUS = None


def evaluate(params: VigilParameters) -> Outcome:
    global _CORPUS  # one corpus per worker process, loaded for its first setting
    if _CORPUS is None:
        _CORPUS = load_corpus()
    scores, _ = run_detector(_CORPUS, lambda f: VigilDetector(params))
    whole, half_a, half_b = profile_curves(_CORPUS, scores, "standard")
    curves = dict(zip(SCOPES, (half_a, half_b, whole)))
    best = {scope: curve.best() for scope, curve in curves.items()}
    return Outcome({s: curves[s].normalise(raw) for s, (_, raw) in best.items()},
                   half_a.raw_at(best["B"][0]), half_b.raw_at(best["A"][0]))


def normalisers() -> dict:
    """Each scope's threshold curve, for its `normalise` (which depends on the labels alone)."""
    corpus = load_corpus()
    curves = profile_curves(corpus, [np.zeros(len(f.series.values)) for f in corpus.files], "standard")
    return dict(zip(("whole", "A", "B"), curves))


class Runs:
    """Every setting evaluated once, in parallel, shared by all searches."""

    def __init__(self, pool: ProcessPoolExecutor):
        self.pool = pool
        self.seen: dict[VigilParameters, Outcome] = {}

    def outcomes(self, settings: list[VigilParameters]) -> list[Outcome]:
        new = [s for s in dict.fromkeys(settings) if s not in self.seen]
        for setting, outcome in zip(new, self.pool.map(evaluate, new)):
            self.seen[setting] = outcome
        return [self.seen[s] for s in settings]

    def search(self, start: VigilParameters, space: dict, scope: str) -> tuple[VigilParameters, list[str]]:
        current, trace = start, []
        for passes in range(1, MAX_PASSES + 2):
            if passes > MAX_PASSES:
                trace.append(f"stopped after {MAX_PASSES} passes, still changing")
                break
            changed = False
            for name, values in space.items():
                candidates = [replace(current, **{name: v}) for v in values]
                scores = [o.own[scope] for o in self.outcomes(candidates)]
                now = self.outcomes([current])[0].own[scope]
                best = max(range(len(values)), key=scores.__getitem__)
                if scores[best] > now + 1e-9:
                    trace.append(f"{name} {getattr(current, name)} → {values[best]}: {now:.2f} → {scores[best]:.2f}")
                    current, changed = candidates[best], True
            if not changed:
                break
        return current, trace


def changes(setting: VigilParameters, start: VigilParameters) -> str:
    """The parameters where a setting differs from `start`."""
    before = asdict(start)
    return ", ".join(f"{k}={v}" for k, v in asdict(setting).items() if before[k] != v) or "none"


def report(runs: Runs, title: str, start_name: str, space: dict, norm: dict) -> str:
    start = STARTS[start_name]
    chosen = {scope: runs.search(start, space, scope) for scope in SCOPES}
    on_a, on_b, on_whole = (runs.seen[chosen[s][0]] for s in SCOPES)
    raw_a, raw_b = on_b.raw_a_at_b, on_a.raw_b_at_a  # A scored with B's choice, B with A's
    steps = "\n".join(f"  * on {scope}: " + ("; ".join(trace) or "no change") for scope, (_, trace) in chosen.items())
    return f"""**Search over {title}** from {start_name}'s setting ({sum(len(v) for v in space.values())} candidate values). Its steps,
with the score at the searched files' own best threshold:

{steps}

| search on | its choice (changes from {start_name}) | own score | scores the other half |
|---|---|---:|---:|
| half A | {changes(chosen['A'][0], start)} | {on_a.own['A']:.1f} | {norm['B'].normalise(raw_b):.1f} (half B) |
| half B | {changes(chosen['B'][0], start)} | {on_b.own['B']:.1f} | {norm['A'].normalise(raw_a):.1f} (half A) |
| whole corpus | {changes(chosen['whole'][0], start)} | {on_whole.own['whole']:.1f} | — |

Parameters and threshold chosen on one half, scored on the other, both ways: **{norm['whole'].normalise(raw_a + raw_b):.1f}**.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_record_option(parser)
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--search", default="", help="run only the searches whose title holds this text")
    args = parser.parse_args()
    if args.search and args.record:
        parser.error("--record writes the whole section: run every search (no --search)")
    searches = {title: search for title, search in SEARCHES.items() if args.search in title}
    if not searches:
        parser.error(f"no search title holds {args.search!r}: {', '.join(SEARCHES)}")
    norm = normalisers()
    with ProcessPoolExecutor(args.processes) as pool:
        runs = Runs(pool)
        sections = [report(runs, title, start, space, norm) for title, (start, space) in searches.items()]
        start, shipped = runs.outcomes([VERSION_5, VigilParameters()])
    threshold_only = norm["whole"].normalise(shipped.raw_a_at_b + shipped.raw_b_at_a)
    text = f"""## AIOps: `vigil` parameters chosen on one NAB half, scored on the other (`bench/aiops/nab_params.py`)

Machine: {machine_summary()}. Date: {utc_now()}. Command: `.venv/bin/python bench/aiops/nab_params.py`.
Standard profile. Coordinate searches from an earlier version's setting, each step keeping the value with
the best score at its own best threshold ({len(runs.seen)} settings run).

""" + "\n".join(sections) + f"""
The shipped setting (version {VigilDetector.version}; changes from version 5: {changes(VigilParameters(), VERSION_5)}): {shipped.own['whole']:.1f} tuned, {threshold_only:.1f} with the threshold
alone held out (`evaluate nab`'s figures); half A {shipped.own['A']:.1f}, half B {shipped.own['B']:.1f} at their own
thresholds. Version 5: {start.own['whole']:.1f} tuned, half A {start.own['A']:.1f}, half B {start.own['B']:.1f}.
"""
    print(text)
    if args.record:
        write_section(DOC, SECTION, text)


if __name__ == "__main__":
    main()
