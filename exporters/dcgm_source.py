"""Read one dcgm-exporter page over HTTP and normalize it into vigil's names and base units.

`read_page(session, url, timeout)` is one read: fetch the page, parse it with `parse_page`, and insist
that it lists at least one GPU. Any failure is a `PageError` whose `reason` is one of `REASONS`, the
label values of `vigil_exporter_dcgm_errors_total`.

`parse_page(text)` accepts both dcgm-exporter naming schemes (see `exporters.dcgm_fields`), drops
DCGM's blank sentinels and MIG-instance series, and converts every value to vigil's base unit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import requests
from prometheus_client.parser import text_string_to_metric_families

from vigil.exporters.dcgm_fields import (
    CLOCK_EVENT_BITS,
    CLOCK_EVENT_FIELDS,
    DRIVER_LABELS,
    HOSTNAME_LABELS,
    MIG_INSTANCE_LABEL,
    TO_BASE_UNIT,
    field_index,
    is_blank,
)

# why a read failed: no complete answer in time; refused, reset or cut mid-page; a non-2xx status;
# not an exposition page; a well-formed page that lists no GPU (DCGM sees none, or is still starting)
REASONS = ("timeout", "connection", "http_status", "unparsable", "no_gpus")
TOTAL_READS = 3  # the whole page must arrive within this many socket timeouts
CHUNK = 64 * 1024


class PageError(Exception):
    """A read of the dcgm-exporter page that gave no usable page; `reason` is one of `REASONS`."""

    def __init__(self, reason: str, message: str) -> None:
        assert reason in REASONS, reason
        super().__init__(message)
        self.reason = reason


@dataclass
class GpuReading:
    """What one dcgm-exporter page says about one GPU, already in vigil's names and units."""

    gpu: str
    uuid: str
    info: dict[str, str]
    values: dict[tuple[str, tuple[tuple[str, str], ...]], float] = field(default_factory=dict)


@dataclass
class Page:
    hostname: str | None
    gpus: dict[str, GpuReading]  # by UUID


def read_page(session: requests.Session, url: str, timeout: float) -> Page:
    """Read and parse the page at `url`; raises `PageError`. `timeout` bounds each socket operation and,
    times TOTAL_READS, the whole read: a server that trickles its page a byte at a time (each socket read
    well within `timeout`) is given up on, so the next read can start (the caller's `StallGuard` only
    reports a read that overran; it cannot end one)."""
    deadline = time.monotonic() + timeout * TOTAL_READS
    try:
        with session.get(url, timeout=timeout, stream=True) as response:
            if response.status_code >= 300:
                raise PageError("http_status", f"HTTP {response.status_code} from {url}")
            chunks = []
            # read1: whatever has arrived (iter_content waits for a whole chunk, which a trickle never fills)
            while chunk := response.raw.read1(CHUNK, decode_content=True):
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise PageError("timeout", f"the page did not arrive within {timeout * TOTAL_READS:g} s "
                                               "(the server sends it too slowly)")
            body = b"".join(chunks)
    except requests.Timeout:
        raise PageError("timeout", f"no answer within {timeout:g} s") from None
    except requests.RequestException as error:
        raise PageError("connection", str(error)) from None
    try:
        page = parse_page(body.decode("utf-8", errors="replace"))
    except Exception as error:  # noqa: BLE001 - whatever the parser trips on, the page is unusable
        raise PageError("unparsable", f"not a metrics page: {error}") from None
    if not page.gpus:
        raise PageError("no_gpus", "the page lists no GPU")
    return page


def parse_page(text: str) -> Page:
    """Normalize a dcgm-exporter exposition page (either naming scheme). Raises ValueError if malformed."""
    index = field_index()
    gpus: dict[str, GpuReading] = {}
    hostname = None
    for fam in text_string_to_metric_families(text):
        for sample in fam.samples:
            labels, value = sample.labels, sample.value
            # The parser appends "_total" to counter samples whose name lacks it (DCGM's upper-case
            # "..._TOTAL" names included), so the family name is the field name as written.
            name = sample.name if sample.name in index else fam.name
            known = name in index or name in CLOCK_EVENT_FIELDS
            if not known or "UUID" not in labels or labels.get(MIG_INSTANCE_LABEL) or is_blank(value):
                continue
            uuid = labels["UUID"]
            reading = gpus.get(uuid)
            if reading is None:
                reading = gpus[uuid] = GpuReading(labels.get("gpu", ""), uuid, _info_labels(labels))
            hostname = hostname or next((labels[k] for k in HOSTNAME_LABELS if labels.get(k)), None)
            if name in CLOCK_EVENT_FIELDS:
                for bit, reason in CLOCK_EVENT_BITS:
                    reading.values.setdefault(("vigil_gpu_clock_event_active", (("reason", reason),)),
                                              1.0 if int(value) & bit else 0.0)
                continue
            row, unit = index[name]
            # setdefault: a page carrying both names of one field keeps the first value.
            reading.values.setdefault((row.metric, row.labels), TO_BASE_UNIT[unit](value))
    for reading in gpus.values():
        _derive_total_memory(reading.values)
    return Page(hostname, gpus)


def _info_labels(labels: dict[str, str]) -> dict[str, str]:
    return {
        "name": labels.get("modelName", ""),
        "driver": next((labels[k] for k in DRIVER_LABELS if labels.get(k)), ""),
        "cuda": "",
        "pci_bus_id": labels.get("pci_bus_id", ""),
        "serial": labels.get("DCGM_FI_DEV_SERIAL", ""),
    }


def _derive_total_memory(values: dict) -> None:
    """Pre-4.9 default pages have no capacity field: free + used + reserved is the framebuffer size."""
    key = ("vigil_gpu_memory_total_bytes", ())
    parts = [values.get((m, ())) for m in ("vigil_gpu_memory_free_bytes", "vigil_gpu_memory_used_bytes",
                                           "vigil_gpu_memory_reserved_bytes")]
    if key not in values and all(p is not None for p in parts):
        values[key] = sum(parts)
