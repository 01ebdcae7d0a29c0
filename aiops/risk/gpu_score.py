"""GPU failure risk: a logistic combination of the precursors named in the field notes (section 9).

Each GPU's signals become a logit `BIAS + sum(weight * signal)`; the risk is `sigmoid(logit)` and each
term `weight * signal` is that signal's contribution (exported as `vigil_failure_risk_reason`). The bias
and weights are read from `gpu_weights.json` beside this file: a logistic regression fitted by
`vigil aiops calibrate-risk --write` on a simulated GPU population whose failure rates come from the
Llama 3 training report (the seed, command and held-out figures are in the file; sources in
docs/aiops-failure-prediction.md). The risk is the probability of a GPU failure within the file's
`horizon_days`.

Temperature enters only relative to the other GPUs of the same node (a robust z-score against the
node median), so a hot node where every GPU is equally hot flags none of them.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

WEIGHTS_FILE = Path(__file__).with_name("gpu_weights.json")
# the signals, in the order of GpuSignals.features():
# corrected_ecc_rate       per log1p(corrected ECC errors per hour)
# remap_pending            1 when a row remap is waiting for a GPU reset
# remap_failure            1 when no spare rows are left
# xid_92_94                per log1p(count of XID 92/94 in the look-back window)
# recovery_action          1 when the driver asks for a reset, reboot or drain
# temperature_above_peers  per robust z above the node median (capped)
_CALIBRATED = json.loads(WEIGHTS_FILE.read_text())
BIAS: float = float(_CALIBRATED["bias"])
WEIGHTS: dict[str, float] = {name: float(w) for name, w in _CALIBRATED["weights"].items()}
THRESHOLD: float = float(_CALIBRATED["threshold"])  # the alarm threshold these weights were calibrated at

# Temperature spreads below this (in °C) are treated as this, so a node whose GPUs differ by a fraction
# of a degree does not turn a 1 °C difference into a huge z-score.
MIN_TEMPERATURE_SCALE_C = 2.0
MAX_TEMPERATURE_Z = 5.0
# GPUs whose recent utilization differs by at most this are peers for the temperature comparison
LOAD_BAND = 0.2


@dataclass
class GpuSignals:
    """What Prometheus says about one GPU (missing signals are 0)."""

    node: str
    gpu: str
    corrected_ecc_per_hour: float = 0.0
    remap_pending: float = 0.0
    remap_failure: float = 0.0
    xid_92_94_count: float = 0.0
    recovery_action: float = 0.0
    temperature_c: float | None = None
    utilization: float | None = None  # recent average (0..1): peers are compared at a similar load
    utilization_now: float | None = None  # the last reading (0..1): a GPU whose job just ended is no peer
    temperature_z: float = field(default=0.0)

    def features(self) -> dict[str, float]:
        """The transformed signals the weights apply to."""
        return {
            "corrected_ecc_rate": math.log1p(max(self.corrected_ecc_per_hour, 0.0)),
            "remap_pending": 1.0 if self.remap_pending > 0 else 0.0,
            "remap_failure": 1.0 if self.remap_failure > 0 else 0.0,
            "xid_92_94": math.log1p(max(self.xid_92_94_count, 0.0)),
            "recovery_action": 1.0 if self.recovery_action > 0 else 0.0,
            "temperature_above_peers": min(max(self.temperature_z, 0.0), MAX_TEMPERATURE_Z),
        }


@dataclass(frozen=True)
class GpuRisk:
    """The risk of one GPU and the contribution (logit terms) of each signal."""

    node: str
    gpu: str
    risk: float
    contributions: dict[str, float]

    @property
    def top_reason(self) -> str:
        """The signal that contributes most, or "none" when no precursor is present."""
        reason, value = max(self.contributions.items(), key=lambda item: (item[1], item[0]))
        return reason if value > 0 else "none"


def set_peer_temperature_z(gpus: list[GpuSignals]) -> None:
    """Fill `temperature_z` of each GPU: (T - peers' median) / robust spread of the peers' temperatures.

    The peers are the node's GPUs — those at a similar load (utilization within `LOAD_BAND`) when every
    GPU of the node has a utilization: a GPU that computes next to idle ones (a hung job's GPUs cooling
    beside another job's) is warmer than they are without running hot. The load is compared both over the
    last minutes (the temperature lags it) and now, where known: GPUs whose job ended a minute ago still
    average a high load but are idle and cooling. A GPU without such peers gets 0."""
    by_node: dict[str, list[GpuSignals]] = {}
    for signals in gpus:
        if signals.temperature_c is not None:
            by_node.setdefault(signals.node, []).append(signals)
    for node_gpus in by_node.values():
        by_load = all(g.utilization is not None for g in node_gpus)
        for p in node_gpus:
            peers = [q for q in node_gpus if _alike(p, q)] if by_load else node_gpus
            p.temperature_z = _robust_z(p.temperature_c, [q.temperature_c for q in peers]) if len(peers) > 1 else 0.0


def _alike(a: GpuSignals, b: GpuSignals) -> bool:
    """Within `LOAD_BAND` on every load both GPUs have (the recent average; the last reading)."""
    pairs = ((a.utilization, b.utilization), (a.utilization_now, b.utilization_now))
    return all(abs(x - y) <= LOAD_BAND for x, y in pairs if x is not None and y is not None)


def _robust_z(value: float, temps: list[float]) -> float:
    median = statistics.median(temps)
    # 1.4826 * MAD estimates the standard deviation of normal data without letting the hot GPU
    # itself inflate the spread (as a plain stdev would).
    mad = statistics.median(abs(t - median) for t in temps) * 1.4826
    return (value - median) / max(mad, MIN_TEMPERATURE_SCALE_C)


def score_gpu(signals: GpuSignals) -> GpuRisk:
    """The risk of one GPU from its signals (call `set_peer_temperature_z` on the fleet first)."""
    contributions = {name: WEIGHTS[name] * value for name, value in signals.features().items()}
    logit = BIAS + sum(contributions.values())
    risk = 1.0 / (1.0 + math.exp(-logit))
    return GpuRisk(signals.node, signals.gpu, risk, contributions)


def score_gpus(gpus: list[GpuSignals]) -> list[GpuRisk]:
    """Peer temperature z-scores, then the risk of every GPU."""
    set_peer_temperature_z(gpus)
    return [score_gpu(g) for g in gpus]
