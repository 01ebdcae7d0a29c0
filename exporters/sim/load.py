"""Deterministic simulated GPU load.

The load of a simulated GPU is a pure function of (node, gpu, wall-clock time): a daily cycle (training
jobs busier in working hours), a weekly dip at weekends, a per-GPU phase and level, and bounded noise
seeded by the time bucket. Because it is pure, the AIOps backfill can generate weeks of history that
match what the live simulator exports now, so baselines learned on that history fit the live series.
"""

from __future__ import annotations

import math
import zlib

DAY_S = 86_400.0
WEEK_S = 7 * DAY_S
NOISE_STEP_S = 15.0


def _unit_hash(*parts: object) -> float:
    """A stable pseudo-random number in [0, 1) from the given parts (not Python's salted hash)."""
    return zlib.crc32("/".join(str(p) for p in parts).encode()) / 2**32


def gpu_load(node: str, gpu: int, t: float) -> float:
    """GPU utilization as a fraction in [0, 1] at Unix time `t` under normal operation."""
    level = 0.55 + 0.2 * _unit_hash(node, gpu, "level")
    phase = 2 * math.pi * _unit_hash(node, gpu, "phase") * 0.15
    daily = 0.3 * math.sin(2 * math.pi * (t % DAY_S) / DAY_S - math.pi / 2 + phase)
    weekday = int((t // DAY_S + 3) % 7)  # 0 = Monday (1970-01-01 was a Thursday)
    weekend = -0.15 if weekday >= 5 else 0.0
    noise = 0.08 * (_unit_hash(node, gpu, int(t // NOISE_STEP_S)) - 0.5)
    return min(1.0, max(0.0, level + daily + weekend + noise))


def gpu_temperature(load: float, ambient_c: float = 32.0) -> float:
    """Steady-state GPU temperature (Celsius) that follows load: about 35 C idle, 78 C at full load."""
    return ambient_c + 3.0 + 43.0 * load


def gpu_power(load: float, limit_w: float = 700.0) -> float:
    """Power draw in watts: idle floor plus a share of the limit proportional to load."""
    return 0.12 * limit_w + 0.8 * limit_w * load
