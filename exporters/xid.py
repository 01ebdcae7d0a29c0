"""XID events: their severity class, and the watcher that receives them from NVML.

XIDs arrive through `nvmlEventSetWait`, not by polling, so the exporter counts every one of them (a
gauge holding only the last XID, as dcgm-exporter publishes, hides repeats). The watcher survives NVML
errors (driver reload, lost GPU) by freeing its event set and registering again with backoff, and
registers GPUs that come back (after a reset) on its next rescan.

A watcher is a step function (`poll`) driven either by its own thread, which blocks in
`nvmlEventSetWait` (one node: `vigil exporter gpu`), or by an `XidPump`, one thread that polls the event
sets of many watchers without blocking (the simulated fleet: one thread for 2,500 nodes instead of one
each, woken at once when the chaos API injects a fault).
"""

from __future__ import annotations

import ctypes
import threading
import time
from typing import Any, Callable

# class of each XID, from NVIDIA's XID catalog and operators' practice (field notes, section 3)
_CRITICAL = (48, 62, 64, 74, 79, 95, 119, 120, 140, 143, 158)
_WARNING = (92, 94)
_APPLICATION = (13, 31, 43, 45, 68)
XID_CLASSES: dict[int, str] = {
    **{x: "critical" for x in _CRITICAL}, **{x: "warning" for x in _WARNING}, **{x: "application" for x in _APPLICATION},
}
# what the watcher registers for: SBE, DBE and XID events (pynvml's nvmlEventType* bits)
EVENT_MASK = 0x1 | 0x2 | 0x8
XID_EVENT_TYPE = 0x8


def xid_class(xid: int) -> str:
    """critical / warning / application, or "unknown" for an XID not in the table."""
    return XID_CLASSES.get(xid, "unknown")


def handle_key(handle: Any) -> int:
    """A hashable identity of an NVML handle: the device address for pynvml's ctypes pointers."""
    if isinstance(handle, ctypes._Pointer):  # pynvml handles are POINTER(struct c_nvmlDevice_t)
        return ctypes.cast(handle, ctypes.c_void_p).value or 0
    return id(handle)


class XidWatcher:
    """Waits for XID events on all GPUs and reports each as `on_xid(gpu_index, xid, unix_time)`.

    `handles()` returns the collector's cached {gpu index: handle}. Only events of type XidCriticalError
    carry an XID number in `eventData`; ECC events are used to wake up but are not counted as XIDs.
    """

    def __init__(self, nvml: Any, handles: Callable[[], dict[int, Any]], on_xid: Callable[[int, int, float], None],
                 *, wait_ms: int = 500, rescan_s: float = 10.0, max_backoff_s: float = 30.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.nvml = nvml
        self.handles = handles
        self.on_xid = on_xid
        self.wait_ms = wait_ms
        self.rescan_s = rescan_s
        self.max_backoff_s = max_backoff_s
        self.clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # one poll at a time (the pump and close() may overlap)
        self._event_set: Any = None
        self._registered: dict[int, int] = {}  # handle key -> gpu index
        self._last_scan = 0.0
        self._retry_at = 0.0  # monotonic time before which no new event set is tried
        self._backoff = 1.0
        self.registrations = 0  # how many event sets were set up (tests check re-registration)

    def start(self) -> None:
        """Register the GPUs now (an XID reaches only event sets registered before it), then watch in a
        thread of its own (blocking waits of `wait_ms`)."""
        self.poll(0)
        self._thread = threading.Thread(target=self._run, name="vigil-xid-watcher", daemon=True)
        self._thread.start()

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.close()

    def close(self) -> None:
        """Free the event set (a watcher driven by a pump is closed after the pump stops); a poll stuck
        in NVML (a hung driver) keeps its set."""
        if self._lock.acquire(timeout=1.0):
            try:
                self._drop_set(retry=False)
            finally:
                self._lock.release()

    def poll(self, wait_ms: int) -> None:
        """One step: set up an event set when there is none (with backoff after failures), register the
        GPUs not yet registered every `rescan_s`, then hand on every waiting event, waiting at most
        `wait_ms` for the first. NVML errors are absorbed: the set is freed and tried again later."""
        with self._lock:
            if self._stop.is_set():
                return
            now = time.monotonic()
            if self._event_set is None:
                if now < self._retry_at:
                    return
                try:
                    self._event_set = self.nvml.nvmlEventSetCreate()
                except self.nvml.NVMLError:
                    self._retry_at = now + self._next_backoff()
                    return
                self.registrations += 1
                self._registered, self._last_scan = {}, 0.0
            if now - self._last_scan >= self.rescan_s:
                self._register()
                self._last_scan = now
            self._drain(wait_ms)

    def seconds_to_retry(self) -> float:
        """How long the next `poll` will do nothing (no event set, waiting out a backoff)."""
        return max(0.0, self._retry_at - time.monotonic()) if self._event_set is None else 0.0

    def _next_backoff(self) -> float:
        backoff = self._backoff
        self._backoff = min(self.max_backoff_s, self._backoff * 2)
        return backoff

    def _drop_set(self, retry: bool = True) -> None:
        if self._event_set is not None:
            try:
                self.nvml.nvmlEventSetFree(self._event_set)
            except self.nvml.NVMLError:
                pass
            self._event_set = None
        if retry:  # the driver went away or the set broke: start over after a pause
            self._retry_at = time.monotonic() + self._next_backoff()

    def _register(self) -> None:
        """Register every cached GPU not yet registered; lost GPUs are retried on the next rescan."""
        for index, handle in self.handles().items():
            if index in self._registered.values() or handle is None:
                continue
            try:
                supported = self.nvml.nvmlDeviceGetSupportedEventTypes(handle)
                self.nvml.nvmlDeviceRegisterEvents(handle, EVENT_MASK & supported, self._event_set)
            except self.nvml.NVMLError:
                continue
            self._registered[handle_key(handle)] = index

    def _drain(self, wait_ms: int) -> None:
        while True:
            try:
                data = self.nvml.nvmlEventSetWait(self._event_set, wait_ms)
            except self.nvml.NVMLError_Timeout:
                self._backoff = 1.0  # the set works
                return
            except self.nvml.NVMLError:
                self._drop_set()
                return
            self._backoff = 1.0
            wait_ms = 0  # take what is already waiting, then return
            if data.eventType & XID_EVENT_TYPE:
                index = self._registered.get(handle_key(data.device))
                if index is not None:
                    self.on_xid(index, int(data.eventData), self.clock())

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll(self.wait_ms)
            pause = self.seconds_to_retry()
            if pause > 0:
                self._stop.wait(pause)


class XidPump:
    """Polls the event sets of many watchers from one thread, every `period_s` or at once on `wake()`.

    Polls never block (a zero wait), so one thread serves any number of nodes; the cost is a sweep over
    the watchers per period (about 10 µs a node with the simulator).
    """

    def __init__(self, watchers: list[XidWatcher], period_s: float = 1.0) -> None:
        self.watchers = watchers
        self.period_s = period_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="vigil-xid-pump", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Sweep now (an event was just delivered, e.g. a fault injected through the chaos API)."""
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        for watcher in self.watchers:
            watcher.close()

    def sweep(self) -> None:
        """Poll every watcher once. The first sweep registers every GPU: NVML hands an XID only to event
        sets registered before it happened, so callers run one sweep before faults can be injected."""
        for watcher in self.watchers:
            if self._stop.is_set():
                return
            watcher.poll(0)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            self.sweep()
            self._wake.wait(self.period_s)
