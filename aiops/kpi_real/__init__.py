"""Real operations KPIs: the AIOps Challenge 2018 files, their halves and the challenge's scoring
(`challenge.py`); `bench/aiops/kpi_real.py` runs `vigil aiops detect` over them."""

from vigil.aiops.kpi_real.challenge import (KpiFile, KpiFileError, challenge_counts, halves, read_dir, read_kpi,
                                            script_counts)

__all__ = ["KpiFile", "KpiFileError", "challenge_counts", "halves", "read_dir", "read_kpi", "script_counts"]
