"""GPU failure risk: a logistic combination of the precursors named in the field notes (section 9).

Each GPU's signals become a logit `BIAS + sum(weight * signal)`; the risk is `sigmoid(logit)` and each
term `weight * signal` is that signal's contribution (exported as `vigil_failure_risk_reason`). The
weights are documented with their reasoning in `docs/aiops-failure-prediction.md`; they are not fitted
because there is no labelled GPU failure history to fit them on, and a handful of monotone, readable
weights is easier to audit than a model trained on simulated failures whose shape we chose ourselves.

Temperature enters only relative to the other GPUs of the same node (a robust z-score against the
node median), so a hot node where every GPU is equally hot flags none of them.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

# Baseline logit: a GPU with no precursor at all has risk sigmoid(-5) ~ 0.7 %.
BIAS = -5.0

# weight per unit of each transformed signal (see GpuSignals.features)
WEIGHTS: dict[str, float] = {
    "corrected_ecc_rate": 0.8,  # per log1p(corrected ECC errors per hour)
    "remap_pending": 2.0,  # a row remap is waiting for a GPU reset
    "remap_failure": 4.0,  # no spare rows left: the next uncorrectable error cannot be contained
    "xid_92_94": 1.5,  # per log1p(count of XID 92/94 in the look-back window)
    "recovery_action": 3.0,  # the driver asks for a reset, reboot or drain
    "temperature_above_peers": 0.7,  # per robust z above the node median (capped)
}

# Temperature spreads below this (in °C) are treated as this, so a node whose GPUs differ by a fraction
# of a degree does not turn a 1 °C difference into a huge z-score.
MIN_TEMPERATURE_SCALE_C = 2.0
MAX_TEMPERATURE_Z = 5.0


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
    """Fill `temperature_z` of each GPU: (T - node median) / robust spread of that node's GPUs."""
    by_node: dict[str, list[GpuSignals]] = {}
    for signals in gpus:
        if signals.temperature_c is not None:
            by_node.setdefault(signals.node, []).append(signals)
    for peers in by_node.values():
        temps = [p.temperature_c for p in peers]
        median = statistics.median(temps)
        # 1.4826 * MAD estimates the standard deviation of normal data without letting the hot GPU
        # itself inflate the spread (as a plain stdev would).
        mad = statistics.median(abs(t - median) for t in temps) * 1.4826
        scale = max(mad, MIN_TEMPERATURE_SCALE_C)
        for p in peers:
            p.temperature_z = (p.temperature_c - median) / scale if len(peers) > 1 else 0.0


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
