"""A simulated dcgm-exporter: renders a realistic `/metrics` page for one node in either naming scheme.

`render_page(node, t, scheme="pre-4.9"|"4.9")` writes what dcgm-exporter would publish for the node's
GPUs at Unix time `t` (load from `exporters.sim.load`, so it is deterministic), each value in the unit
that scheme uses, written independently of `exporters.dcgm_fields` so that tests of the normalizer are
not checking the table against itself. Fields the simulated GPU does not support carry DCGM's blank
sentinel, as the real exporter leaks them. `serve_page()` serves it on loopback for tests and demos:

    python -m vigil.exporters.sim.dcgm_page --port 9400 --scheme 4.9
"""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from vigil.exporters.sim.load import _unit_hash, gpu_load, gpu_power, gpu_temperature

SCHEMES = ("pre-4.9", "4.9")
INT64_NOT_SUPPORTED = 9223372036854775794  # DCGM_INT64_NOT_SUPPORTED, as leaked on real pages
MIB = 1_048_576
H100_MIB = 81_559


@dataclass(frozen=True)
class _Field:
    """One simulated quantity: its pre-4.9 and 4.9 names, type, and value in each scheme's unit."""

    old: str | None  # None: not on a pre-4.9 default page
    new: str
    type: str
    old_value: float
    new_value: float


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**63 else repr(float(value))


def _gpu_fields(node: str, gpu: int, t: float) -> list[_Field]:
    load = gpu_load(node, gpu, t)
    util_pct = round(100 * load)
    mem_pct = round(60 * load)
    used_mib = 2_000 + round(70_000 * load)
    reserved_mib = 512
    free_mib = H100_MIB - used_mib - reserved_mib
    sm_mhz = 1980 if load > 0.05 else 345
    energy_j = int(t) % (90 * 86_400) * 400 + int(1000 * _unit_hash(node, gpu, "energy"))  # driver reloads every 90 days
    power_ns = int(50_000_000 * _unit_hash(node, gpu, "pviol")) * 1000
    sbe = int(20 * _unit_hash(node, gpu, "sbe"))
    tensor = round(0.7 * load, 3)
    sm_active = round(0.95 * load, 3)
    d = "DCGM_FI_DEV_"
    p = "DCGM_FI_PROF_"
    f = _Field
    return [
        f(d + "SM_CLOCK", d + "SM_CLOCK_HERTZ", "gauge", sm_mhz, sm_mhz * 1_000_000),
        f(d + "MEM_CLOCK", d + "MEMORY_CLOCK_HERTZ", "gauge", 2619, 2_619_000_000),
        f(d + "GPU_TEMP", d + "GPU_TEMP_CELSIUS", "gauge", round(gpu_temperature(load)), round(gpu_temperature(load))),
        f(d + "MEMORY_TEMP", d + "MEMORY_TEMP_CELSIUS", "gauge", round(gpu_temperature(load)) + 4,
          round(gpu_temperature(load)) + 4),
        f(d + "POWER_USAGE", d + "BOARD_POWER_WATTS", "gauge", round(gpu_power(load), 3), round(gpu_power(load), 3)),
        f(d + "POWER_MGMT_LIMIT", d + "POWER_MGMT_LIMIT", "gauge", 700, 700),
        f(d + "TOTAL_ENERGY_CONSUMPTION", d + "GPU_ENERGY_JOULES_TOTAL", "counter", energy_j * 1000, energy_j),
        f(d + "GPU_UTIL", d + "GPU_UTIL_RATIO", "gauge", util_pct, util_pct / 100),
        f(d + "MEM_COPY_UTIL", d + "MEMORY_UTIL_RATIO", "gauge", mem_pct, mem_pct / 100),
        f(d + "FB_FREE", d + "FB_FREE_BYTES", "gauge", free_mib, free_mib * MIB),
        f(d + "FB_USED", d + "FB_USED_BYTES", "gauge", used_mib, used_mib * MIB),
        f(d + "FB_RESERVED", d + "FB_RESERVED_BYTES", "gauge", reserved_mib, reserved_mib * MIB),
        f(d + "PCIE_REPLAY_COUNTER", d + "PCIE_REPLAY_TOTAL", "counter", 0, 0),
        f(d + "XID_ERRORS", d + "XID_ERROR", "gauge", 0, 0),
        f(d + "ECC_SBE_VOL_TOTAL", d + "ECC_SBE_VOL_TOTAL", "counter", sbe, sbe),
        f(d + "ECC_DBE_VOL_TOTAL", d + "ECC_DBE_VOL_TOTAL", "counter", 0, 0),
        f(d + "ECC_SBE_AGG_TOTAL", d + "ECC_SBE_AGG_TOTAL", "counter", sbe + 7, sbe + 7),
        f(d + "ECC_DBE_AGG_TOTAL", d + "ECC_DBE_AGG_TOTAL", "counter", 0, 0),
        # H100s remap rows instead of retiring pages: DCGM leaks "not supported" for retirement fields.
        f(d + "RETIRED_SBE", d + "PAGE_RETIRED_SBE_TOTAL", "counter", INT64_NOT_SUPPORTED, INT64_NOT_SUPPORTED),
        f(d + "RETIRED_DBE", d + "PAGE_RETIRED_DBE_TOTAL", "counter", INT64_NOT_SUPPORTED, INT64_NOT_SUPPORTED),
        f(d + "CORRECTABLE_REMAPPED_ROWS", d + "ROW_REMAP_CORRECTABLE_TOTAL", "counter", sbe // 4, sbe // 4),
        f(d + "UNCORRECTABLE_REMAPPED_ROWS", d + "ROW_REMAP_UNCORRECTABLE_TOTAL", "counter", 0, 0),
        f(d + "ROW_REMAP_FAILURE", d + "ROW_REMAP_FAILED", "gauge", 0, 0),
        f(d + "ROW_REMAP_PENDING", d + "ROW_REMAP_PENDING", "gauge", 0, 0),
        # Data-center H100s have no fan DCGM can read.
        f(d + "FAN_SPEED", d + "FAN_SPEED_RATIO", "gauge", INT64_NOT_SUPPORTED, INT64_NOT_SUPPORTED),
        f(d + "PSTATE", d + "PSTATE", "gauge", 0, 0),
        f(d + "POWER_VIOLATION", d + "GPU_POWER_THROTTLE_SECONDS_TOTAL", "counter", power_ns, power_ns / 1e9),
        f(d + "CLOCK_THROTTLE_REASONS", d + "CLOCKS_EVENT_REASONS", "gauge", 0x4 if load > 0.9 else 0,
          0x4 if load > 0.9 else 0),
        f(d + "NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", d + "NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", 0, 0),
        f(p + "GR_ENGINE_ACTIVE", p + "GR_ENGINE_UTIL_RATIO", "gauge", round(load, 3), round(load, 3)),
        f(p + "SM_ACTIVE", p + "SM_UTIL_RATIO", "gauge", sm_active, sm_active),
        f(p + "SM_OCCUPANCY", p + "SM_OCCUPANCY_RATIO", "gauge", round(sm_active / 2, 3), round(sm_active / 2, 3)),
        f(p + "PIPE_TENSOR_ACTIVE", p + "TENSOR_UTIL_RATIO", "gauge", tensor, tensor),
        f(p + "DRAM_ACTIVE", p + "DRAM_UTIL_RATIO", "gauge", round(0.5 * load, 3), round(0.5 * load, 3)),
        # 4.9 collects the capacity by default; the pre-4.9 default set has no such field.
        f(None, d + "FB_CAPACITY_BYTES", "gauge", 0, H100_MIB * MIB),
    ]


def gpu_uuid(node: str, gpu: int) -> str:
    h = f"{int(_unit_hash(node, gpu, 'uuid') * 2**32):08x}"
    return f"GPU-{h}-{gpu:04x}-4{h[:3]}-8{h[3:6]}-{h}{gpu:04x}"


def render_page(node: str, t: float | None = None, scheme: str = "4.9", gpus: int = 8) -> str:
    """The dcgm-exporter page of `node` at time `t` in `scheme` ("pre-4.9" or "4.9")."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    t = time.time() if t is None else t
    new = scheme == "4.9"
    host_label = "hostname" if new else "Hostname"
    driver_label = "DCGM_FI_SYSTEM_DRIVER_VERSION" if new else "DCGM_FI_DRIVER_VERSION"
    per_field: dict[str, tuple[str, list[str]]] = {}
    for gpu in range(gpus):
        labels = (f'gpu="{gpu}",UUID="{gpu_uuid(node, gpu)}",pci_bus_id="00000000:{0x18 + 0x10 * gpu:02X}:00.0",'
                  f'device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",{host_label}="{node}",'
                  f'{driver_label}="550.54.15"')
        for fld in _gpu_fields(node, gpu, t):
            name = fld.new if new else fld.old
            if name is None:
                continue
            value = fld.new_value if new else fld.old_value
            per_field.setdefault(name, (fld.type, []))[1].append(f"{name}{{{labels}}} {_fmt(value)}")
    out = []
    for name, (type_, lines) in per_field.items():
        out += [f"# HELP {name} Simulated {name}.", f"# TYPE {name} {type_}", *lines]
    return "\n".join(out) + "\n"


class PageServer:
    """Serves `render()` at http://127.0.0.1:PORT/metrics in a daemon thread; `delay_s` simulates a slow
    exporter, `hang()` a hung one (requests are accepted and read, never answered) until `answer()`."""

    def __init__(self, render: Callable[[], str], host: str = "127.0.0.1", port: int = 0, delay_s: float = 0.0,
                 status: int = 200):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server API
                if not outer._answering.is_set():
                    outer._answering.wait()  # until answer() or close(); then drop this request unanswered
                    self.close_connection = True
                    return
                time.sleep(outer.delay_s)
                body = outer.render().encode() if outer.status == 200 else b"internal error\n"
                try:
                    self.send_response(outer.status)
                    self.send_header("Content-Type", "text/plain; version=0.0.4")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except ConnectionError:  # the reader gave up waiting (a slow exporter's usual fate)
                    self.close_connection = True

            def log_message(self, *args):
                pass

        self.render, self.delay_s, self.status = render, delay_s, status
        self._answering = threading.Event()
        self._answering.set()
        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)  # quick close()
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/metrics"

    def hang(self) -> None:
        """From now on accept and read requests but never answer them (a wedged dcgm-exporter)."""
        self._answering.clear()

    def answer(self) -> None:
        """Answer requests again; the ones held by `hang()` are closed unanswered."""
        self._answering.set()

    def close(self) -> None:
        self._answering.set()
        self._server.shutdown()
        self._server.server_close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a simulated dcgm-exporter page (demo and tests).")
    parser.add_argument("--node", default="sim-node-0")
    parser.add_argument("--port", type=int, default=9400)
    parser.add_argument("--scheme", choices=SCHEMES, default="4.9")
    parser.add_argument("--gpus", type=int, default=8)
    args = parser.parse_args(argv)
    server = PageServer(lambda: render_page(args.node, scheme=args.scheme, gpus=args.gpus), port=args.port)
    print(f"simulated dcgm-exporter ({args.scheme}) for {args.node} at {server.url}; Ctrl-C stops")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.close()


if __name__ == "__main__":
    main()
