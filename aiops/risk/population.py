"""A seeded population of simulated GPU life histories, for calibrating the GPU risk weights.

Failure rates come from published field data and every number is in `GPU_PARAMS` with its source
(an `assumption:` source where the literature gives no number); docs/aiops-failure-prediction.md
prints the same table. The precursors are the simulated fleet's own fault models
(`exporters.sim.faults`): what `inject` sets for `ecc-storm`, `ecc-dbe` and `row-remap-failure`, the
corrected-ECC rate of an ECC storm, the 95 °C of `overheat` and the load-driven temperature of
`exporters.sim.load`, so the weights are fitted on what the simulated fleet emits.

Output: one row per GPU per observed day (a daily snapshot of the signals `aiops.risk` reads), with
`days_to_failure` (NaN for a GPU that does not fail in the period). A GPU that fails is replaced: its
rows end on its failure day. Pure numpy, deterministic for a seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vigil.exporters.sim.faults import ECC_STORM_RATE_PER_S, GpuState, Fault, inject
from vigil.exporters.sim.load import gpu_temperature

GPUS_PER_NODE = 8
OVERHEAT_C = 95.0  # the simulator's `overheat` fault pins the GPU at 95 °C (exporters/sim/nvml.py)


@dataclass(frozen=True)
class Param:
    value: float
    source: str


LLAMA3 = "Llama 3 report (Dubey et al. 2024, table 5; field notes §11)"
GPU_PARAMS: dict[str, Param] = {
    "interruptions_per_gpu_day": Param(419 / (16384 * 54), f"{LLAMA3}: 419 unexpected interruptions, 16,384 H100 x 54 days"),
    "gpu_related_share": Param(0.587, f"{LLAMA3}: GPU-related causes 58.7 %"),
    "cause_faulty_gpu": Param(0.301, f"{LLAMA3}: faulty GPU 30.1 %"),
    "cause_hbm3": Param(0.172, f"{LLAMA3}: HBM3 memory 17.2 %"),
    "cause_other_gpu": Param(0.587 - 0.301 - 0.172, f"{LLAMA3}: the rest of the GPU-related 58.7 % (SRAM, GPU system processor, thermal interface, SDC)"),
    "precursor_share_hbm3": Param(0.8, "assumption: memory failures announce themselves by ECC (field notes §9: rising corrected ECC, XID 94/92 before 48/95)"),
    "precursor_share_faulty_gpu": Param(0.2, "assumption: most faulty GPUs fall off the bus (XID 79) without warning (Titan: off-the-bus 7.8 % of failures, tracked heat)"),
    "precursor_share_other_gpu": Param(0.5, "assumption: SRAM errors show as ECC, thermal-interface faults as heat"),
    "lead_days_max": Param(14, "assumption: precursors start 1-14 days (uniform) before the failure"),
    "dbe_given_memory_precursor": Param(0.5, "assumption: an uncorrectable error (simulator's ecc-dbe: remap pending, GPU reset) during the run-up"),
    "remap_failure_given_memory_precursor": Param(0.15, "assumption: the simulator's row-remap-failure in the last 2 days"),
    "xid_92_94_per_day_in_storm": Param(1.0, "assumption: Poisson rate of XID 92/94 events during an ECC storm"),
    "healthy_ecc_share": Param(0.03, "assumption: healthy GPUs with a steady low corrected-ECC rate (0.01-5 /h)"),
    "healthy_xid94_share": Param(0.005, "assumption: healthy GPUs with one contained XID 94 in the period"),
    "healthy_dbe_share": Param(0.003, "assumption: healthy GPUs with one uncorrectable error, remapped at the next reset (1 day)"),
    "healthy_hot_slot_share": Param(0.01, "assumption: healthy GPUs running 4-10 °C above their peers (airflow), no failure"),
}


@dataclass(frozen=True)
class GpuPopulation:
    """Daily GPU rows (arrays of equal length) and per-GPU facts."""

    node: np.ndarray  # node index of each row
    gpu: np.ndarray  # GPU index (global) of each row
    day: np.ndarray
    days_to_failure: np.ndarray  # NaN: the GPU does not fail in the period
    corrected_ecc_per_hour: np.ndarray
    remap_pending: np.ndarray
    remap_failure: np.ndarray
    xid_92_94_count: np.ndarray  # events in the last 7 days
    recovery_action: np.ndarray
    temperature_c: np.ndarray
    failed: np.ndarray  # per GPU: fails in the period
    cause: np.ndarray  # per GPU: "healthy", "faulty_gpu", "hbm3", "other_gpu"
    precursor: np.ndarray  # per GPU: "none", "memory", "thermal"


def _fault_flags(name: str) -> tuple[int, int, int]:
    """(remap_pending, remap_failure, recovery_action) that the simulator's fault `name` leaves on a GPU."""
    state = GpuState()
    inject(state, Fault(name, "calibration", 0, 0.0))
    return state.remap_pending, state.remap_failure, state.recovery_action


def simulate_gpus(nodes: int = 2048, days: int = 90, seed: int = 0, params: dict[str, Param] | None = None) -> GpuPopulation:
    """`nodes` x 8 GPUs observed daily for `days`; failures and precursors drawn from `params`."""
    p = {k: v.value for k, v in (params or GPU_PARAMS).items()}
    rng = np.random.default_rng(seed)
    n, d = nodes * GPUS_PER_NODE, days
    node_of = np.repeat(np.arange(nodes), GPUS_PER_NODE)

    rate = p["interruptions_per_gpu_day"] * p["gpu_related_share"]
    failed = rng.random(n) < -np.expm1(-rate * d)
    fail_day = np.where(failed, rng.integers(1, d, size=n), d + 10**6)
    causes = np.array(["faulty_gpu", "hbm3", "other_gpu"])
    shares = np.array([p["cause_faulty_gpu"], p["cause_hbm3"], p["cause_other_gpu"]])
    cause = np.where(failed, causes[rng.choice(3, size=n, p=shares / shares.sum())], "healthy")
    warn_share = {"faulty_gpu": p["precursor_share_faulty_gpu"], "hbm3": p["precursor_share_hbm3"],
                  "other_gpu": p["precursor_share_other_gpu"], "healthy": 0.0}
    warned = rng.random(n) < np.vectorize(warn_share.get)(cause)
    # HBM3 warns by memory errors, a faulty GPU by heat, other GPU causes by either (SRAM vs thermal)
    memory = (cause == "hbm3") | ((cause == "other_gpu") & (rng.random(n) < 0.5))
    precursor = np.where(~warned, "none", np.where(memory, "memory", "thermal"))
    lead = rng.integers(1, int(p["lead_days_max"]) + 1, size=n)
    day = np.arange(d)[None, :]
    to_fail = fail_day[:, None] - day  # (n, d)
    active = (to_fail >= 0) & (to_fail <= lead[:, None])
    progress = np.clip(1.0 - to_fail / lead[:, None], 0.0, 1.0)  # 0 at onset, 1 on the failure day

    # corrected ECC per hour: a healthy trickle on a few GPUs; an ECC storm (the simulator's rate,
    # scaled down by up to 10^4) growing a hundredfold over the run-up
    ecc = np.zeros((n, d))
    trickle = rng.random(n) < p["healthy_ecc_share"]
    ecc[trickle] += np.exp(rng.uniform(np.log(0.01), np.log(5.0), size=(trickle.sum(), 1)))
    mem = precursor == "memory"
    peak = ECC_STORM_RATE_PER_S * 3600 * np.exp(rng.uniform(np.log(1e-4), 0.0, size=(n, 1)))
    ecc = np.where(mem[:, None] & active, ecc + peak * 10.0 ** (2 * (progress - 1)), ecc)

    # XID 92/94 events, counted over a 7-day window as the service's increase(...[7d]) does
    events = np.where(mem[:, None] & active, rng.poisson(p["xid_92_94_per_day_in_storm"], size=(n, d)), 0)
    lone = np.flatnonzero(rng.random(n) < p["healthy_xid94_share"])
    events[lone, rng.integers(0, d, size=len(lone))] += 1
    cumulative = np.cumsum(events, axis=1)
    xid = cumulative - np.pad(cumulative, ((0, 0), (7, 0)))[:, :d]

    pending, failure_flag, recovery = (np.zeros((n, d)) for _ in range(3))
    dbe_pending, _, dbe_recovery = _fault_flags("ecc-dbe")
    rrf_pending, rrf_failure, rrf_recovery = _fault_flags("row-remap-failure")
    dbe = mem & (rng.random(n) < p["dbe_given_memory_precursor"])
    dbe_at = fail_day - np.floor(rng.random(n) * lead).astype(int)
    after_dbe = dbe[:, None] & (day >= dbe_at[:, None]) & (to_fail >= 0)
    pending[after_dbe], recovery[after_dbe] = dbe_pending, dbe_recovery
    rrf = mem & (rng.random(n) < p["remap_failure_given_memory_precursor"])
    after_rrf = rrf[:, None] & (to_fail >= 0) & (to_fail <= 1)
    pending[after_rrf], failure_flag[after_rrf], recovery[after_rrf] = rrf_pending, rrf_failure, rrf_recovery
    reset = np.flatnonzero(rng.random(n) < p["healthy_dbe_share"])  # healthy: remapped at the next reset
    reset_day = rng.integers(0, d, size=len(reset))
    pending[reset, reset_day], recovery[reset, reset_day] = dbe_pending, dbe_recovery

    # temperature: the simulator's load-driven temperature (one job per node, same load on its GPUs),
    # a per-GPU offset and daily noise; a hot slot on a few healthy GPUs; heat rising to the
    # simulator's overheat temperature before a thermal failure
    load = rng.uniform(0.4, 1.0, size=(nodes, d))[node_of]
    temp = gpu_temperature(load) + rng.normal(0, 1.0, size=(n, 1)) + rng.normal(0, 0.8, size=(n, d))
    hot = rng.random(n) < p["healthy_hot_slot_share"]
    temp[hot] += rng.uniform(4, 10, size=(hot.sum(), 1))
    thermal = precursor == "thermal"
    temp = np.where(thermal[:, None] & active, temp + (OVERHEAT_C - temp) * progress ** 2, temp)

    observed = to_fail >= 0
    rows, cols = np.nonzero(observed)
    dtf = to_fail[rows, cols].astype(float)
    dtf[~failed[rows]] = np.nan
    return GpuPopulation(
        node=node_of[rows], gpu=rows, day=cols, days_to_failure=dtf,
        corrected_ecc_per_hour=ecc[rows, cols], remap_pending=pending[rows, cols],
        remap_failure=failure_flag[rows, cols], xid_92_94_count=xid[rows, cols].astype(float),
        recovery_action=recovery[rows, cols], temperature_c=temp[rows, cols],
        failed=failed, cause=cause, precursor=precursor,
    )
