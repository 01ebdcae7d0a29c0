"""An NVML module wrapped so that every `nvml*` function call is timed and its NVML errors counted.

Used by the exporter benchmarks to split a collection cycle into time inside NVML (the driver, or the
simulator) and time in our own code, and to list what a real GPU refuses (NOT_SUPPORTED and the like).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from typing import Any

from vigil.exporters.gpu_reader import error_names


class TimedNvml:
    """Delegates to `inner` (pynvml or the simulator); adds up time and calls per NVML function."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._error_names = error_names(inner)
        self.spent = 0.0
        self.calls = 0
        self.per_function: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])  # name -> [calls, seconds]
        self.errors: Counter[tuple[str, str]] = Counter()  # (function, error) -> count

    def __dir__(self) -> list[str]:
        return dir(self._inner)

    def reset(self) -> None:
        self.spent, self.calls = 0.0, 0
        self.per_function.clear()
        self.errors.clear()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not (callable(value) and name.startswith("nvml")):
            return value

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return value(*args, **kwargs)
            except self._inner.NVMLError as error:
                code = getattr(error, "value", None)
                self.errors[(name, self._error_names.get(code, str(code)))] += 1
                raise
            finally:
                took = time.perf_counter() - started
                self.spent += took
                self.calls += 1
                entry = self.per_function[name]
                entry[0] += 1
                entry[1] += took
        return timed

