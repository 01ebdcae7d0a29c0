"""XID events: their severity class and the background thread that receives them from NVML.

XIDs arrive through `nvmlEventSetWait`, not by polling, so the exporter counts every one of them (a
gauge holding only the last XID, as dcgm-exporter publishes, hides repeats). The watcher survives NVML
errors (driver reload, lost GPU) by freeing its event set and registering again with backoff, and
registers GPUs that come back (after a reset) on its next rescan.
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
        self.registrations = 0  # how many event sets were set up (tests check re-registration)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="vigil-xid-watcher", daemon=True)
        self._thread.start()

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _register(self, event_set: Any, registered: dict[int, int]) -> None:
        """Register every cached GPU not yet registered; lost GPUs are retried on the next rescan."""
        for index, handle in self.handles().items():
            if index in registered.values() or handle is None:
                continue
            try:
                supported = self.nvml.nvmlDeviceGetSupportedEventTypes(handle)
                self.nvml.nvmlDeviceRegisterEvents(handle, EVENT_MASK & supported, event_set)
            except self.nvml.NVMLError:
                continue
            registered[handle_key(handle)] = index

    def _run(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            try:
                event_set = self.nvml.nvmlEventSetCreate()
            except self.nvml.NVMLError:
                self._stop.wait(backoff)
                backoff = min(self.max_backoff_s, backoff * 2)
                continue
            self.registrations += 1
            try:
                self._serve(event_set)
                backoff = 1.0
            except self.nvml.NVMLError:
                # the driver went away or the set broke: start over after a pause
                self._stop.wait(backoff)
                backoff = min(self.max_backoff_s, backoff * 2)
            finally:
                try:
                    self.nvml.nvmlEventSetFree(event_set)
                except self.nvml.NVMLError:
                    pass

    def _serve(self, event_set: Any) -> None:
        registered: dict[int, int] = {}  # handle key -> gpu index
        self._register(event_set, registered)
        last_scan = time.monotonic()
        while not self._stop.is_set():
            if time.monotonic() - last_scan >= self.rescan_s:
                self._register(event_set, registered)
                last_scan = time.monotonic()
            try:
                data = self.nvml.nvmlEventSetWait(event_set, self.wait_ms)
            except self.nvml.NVMLError_Timeout:
                continue
            if data.eventType & XID_EVENT_TYPE:
                index = registered.get(handle_key(data.device))
                if index is not None:
                    self.on_xid(index, int(data.eventData), self.clock())
