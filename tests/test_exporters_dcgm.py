"""DcgmCollector against simulated dcgm-exporter pages served over real HTTP on loopback."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from sim_clock import SIM_NOW
from exporters_nvml_support import wait_until
from prometheus_client.parser import text_string_to_metric_families

from vigil.exporters.dcgm import SPECS, DcgmCollector
from vigil.exporters.sim.dcgm_page import PageServer, gpu_uuid, render_page

T0 = SIM_NOW
READ_TIMEOUT_S = 2.0  # for reads that must succeed: a loopback page well within it even on a loaded CI box
SLACK_S = 1.5  # what a scrape that gave up at its timeout may take beyond it on a loaded box


@pytest.fixture
def serve():
    servers = []

    def start(render, **kwargs):
        server = PageServer(render, **kwargs)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def scrape(collector) -> str:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode()


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def without_read_duration(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if "vigil_exporter_collection_duration_seconds" not in line)


def value(text: str, metric: str, **labels) -> float:
    matches = [v for (n, ls), v in samples(text).items() if n == metric and set(labels.items()) <= ls]
    assert len(matches) == 1, f"{metric}{labels}: {len(matches)} matches"
    return matches[0]


def test_both_naming_schemes_give_identical_vigil_metrics(serve):
    old = serve(lambda: render_page("gpu-a1", T0, scheme="pre-4.9", gpus=4))
    new = serve(lambda: render_page("gpu-a1", T0, scheme="4.9", gpus=4))
    text_old = scrape(DcgmCollector(old.url, clock=lambda: T0))
    text_new = scrape(DcgmCollector(new.url, clock=lambda: T0))
    assert without_read_duration(text_old) == without_read_duration(text_new)
    assert value(text_old, "dcgm_up") == 1
    # every GPU shows up with the page's hostname as node, and carries the profiling fields
    uuids = {dict(ls)["uuid"] for (n, ls) in samples(text_old) if n == "vigil_gpu_up"}
    assert uuids == {gpu_uuid("gpu-a1", g) for g in range(4)}
    assert value(text_old, "vigil_gpu_tensor_pipe_active_ratio", gpu="0", node="gpu-a1") <= 1


HAND_WRITTEN_PRE_49 = """\
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="1",UUID="GPU-x",device="nvidia1",modelName="NVIDIA A100-SXM4-80GB",Hostname="h7",DCGM_FI_DRIVER_VERSION="535.104.05"} 1410
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="1",UUID="GPU-x",Hostname="h7"} 123456789
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-x",Hostname="h7"} 87
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-x",Hostname="h7"} 1024
# TYPE DCGM_FI_DEV_POWER_VIOLATION counter
DCGM_FI_DEV_POWER_VIOLATION{gpu="1",UUID="GPU-x",Hostname="h7"} 2500000000
# TYPE DCGM_FI_DEV_CLOCK_THROTTLE_REASONS gauge
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="1",UUID="GPU-x",Hostname="h7"} 72
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-x",Hostname="h7"} 79
# TYPE DCGM_FI_DEV_RETIRED_SBE counter
DCGM_FI_DEV_RETIRED_SBE{gpu="1",UUID="GPU-x",Hostname="h7"} 9223372036854775794
# TYPE DCGM_FI_PROF_SM_ACTIVE gauge
DCGM_FI_PROF_SM_ACTIVE{gpu="1",UUID="GPU-x",Hostname="h7"} 140737488355328
DCGM_FI_PROF_SM_ACTIVE{gpu="1",UUID="GPU-x",Hostname="h7",GPU_I_ID="3",GPU_I_PROFILE="1g.10gb"} 0.5
"""


def test_units_labels_and_sentinels_of_a_hand_written_page(serve):
    server = serve(lambda: HAND_WRITTEN_PRE_49)
    text = scrape(DcgmCollector(server.url))
    base = {"node": "h7", "gpu": "1", "uuid": "GPU-x"}
    assert value(text, "vigil_gpu_clock_hertz", clock="sm", **base) == 1_410_000_000
    assert value(text, "vigil_gpu_energy_joules_total", **base) == pytest.approx(123456.789)
    assert value(text, "vigil_gpu_utilization_ratio", **base) == pytest.approx(0.87)
    assert value(text, "vigil_gpu_memory_used_bytes", **base) == 1024 * 1_048_576
    assert value(text, "vigil_gpu_clock_event_seconds_total", reason="power", **base) == 2.5
    # 72 = 0x40 hw_thermal | 0x8 hw_slowdown
    active = {dict(ls)["reason"] for (n, ls), v in samples(text).items()
              if n == "vigil_gpu_clock_event_active" and v == 1}
    assert active == {"hw_thermal", "hw_slowdown"}
    assert value(text, "vigil_gpu_last_xid_code", **base) == 79
    info = value(text, "vigil_gpu_info", name="NVIDIA A100-SXM4-80GB", driver="535.104.05", **base)
    assert info == 1
    # sentinels (INT64 and FP64 blanks) and MIG-instance series are dropped, not published
    assert "vigil_gpu_retired_pages_total" not in text
    assert "vigil_gpu_sm_active_ratio" not in text
    assert all(v < 2**47 for v in samples(text).values())


def test_sentinels_never_reach_the_output_of_simulated_pages(serve):
    for scheme in ("pre-4.9", "4.9"):
        server = serve(lambda s=scheme: render_page("gpu-b2", T0, scheme=s, gpus=2))
        assert "9223372036854775794" in render_page("gpu-b2", T0, scheme=scheme, gpus=2)
        text = scrape(DcgmCollector(server.url))
        assert "vigil_gpu_fan_speed_ratio" not in text
        assert max(samples(text).values()) < 2**47


def test_node_argument_overrides_the_page_hostname(serve):
    server = serve(lambda: render_page("gpu-c3", T0, gpus=1))
    text = scrape(DcgmCollector(server.url, node="rack4-node9"))
    assert value(text, "vigil_gpu_up", gpu="0") == 1
    assert {dict(ls)["node"] for (n, ls) in samples(text)} == {"rack4-node9"}


@pytest.mark.parametrize("status,body,reason", [
    (500, None, "http_status"),
    (200, "this is { not a metrics page\n", "unparsable"),
    (200, "", "no_gpus"),  # dcgm-exporter answers, DCGM sees no GPU (or has not collected yet)
    (200, "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n", "no_gpus"),
    (200, "# TYPE go_goroutines gauge\ngo_goroutines 12\n", "no_gpus"),
])
def test_unusable_page_gives_dcgm_up_0_a_reason_and_no_gpu_values(serve, status, body, reason):
    server = serve((lambda: body) if body is not None else (lambda: ""), status=status)
    text = scrape(DcgmCollector(server.url, node="n1"))
    assert value(text, "dcgm_up", node="n1") == 0
    assert value(text, "vigil_node_gpus_visible", node="n1") == 0
    assert value(text, "vigil_exporter_dcgm_errors_total", node="n1", reason=reason) == 1
    assert sum(v for (n, _), v in samples(text).items() if n == "vigil_exporter_dcgm_errors_total") == 1
    assert "vigil_gpu_" not in text and "vigil_exporter_last_collection_timestamp_seconds" not in text


def test_nothing_listening_gives_dcgm_up_0():
    text = scrape(DcgmCollector("http://127.0.0.1:9/metrics", node="n1", timeout=0.5))
    assert value(text, "dcgm_up", node="n1") == 0
    assert value(text, "vigil_exporter_dcgm_errors_total", node="n1", reason="connection") == 1


def test_a_slow_dcgm_exporter_does_not_make_the_scrape_hang(serve):
    server = serve(lambda: render_page("gpu-d4", T0, gpus=1))
    server.hang()  # never answers: a scrape that returned at all was cut off by the timeout
    collector = DcgmCollector(server.url, node="n1", timeout=0.5)
    started = time.monotonic()
    text = scrape(collector)
    assert time.monotonic() - started < 0.5 + SLACK_S
    assert value(text, "dcgm_up", node="n1") == 0


def test_recovers_when_the_page_comes_back(serve):
    server = serve(lambda: render_page("gpu-e5", T0, gpus=1), status=503)
    collector = DcgmCollector(server.url, node="n1", timeout=1.0, max_age=0.0)
    assert value(scrape(collector), "dcgm_up", node="n1") == 0
    server.status = 200
    deadline = time.monotonic() + 5
    while value(scrape(collector), "dcgm_up", node="n1") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert value(scrape(collector), "vigil_gpu_up", gpu="0") == 1


def test_every_published_name_is_declared_in_specs(serve):
    server = serve(lambda: render_page("gpu-f6", T0, scheme="4.9", gpus=2))
    text = scrape(DcgmCollector(server.url))
    declared = {s.name for s in SPECS}
    published = {fam.name + ("_total" if fam.type == "counter" else "_info" if fam.type == "info" else "")
                 for fam in text_string_to_metric_families(text)}
    assert published <= declared
    for fam in text_string_to_metric_families(text):
        spec = next(s for s in SPECS if s.name.startswith(fam.name))
        for s in fam.samples:
            assert set(s.labels) == set(spec.labels), s


def test_bad_url_is_a_clear_error():
    with pytest.raises(ValueError, match="http://"):
        DcgmCollector("localhost:9400/metrics")


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_check_metrics_reports_nothing(serve):
    server = serve(lambda: render_page("gpu-g7", T0, scheme="pre-4.9", gpus=2))
    text = scrape(DcgmCollector(server.url))
    result = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout + result.stderr == "", result.stdout + result.stderr


def test_docs_name_every_mapped_field_and_metric():
    from pathlib import Path

    from vigil.exporters.dcgm_fields import FIELD_MAPS

    doc = (Path(__file__).resolve().parents[1] / "docs" / "exporters-dcgm-node.md").read_text()
    missing = [name for row in FIELD_MAPS for name in (row.old, row.new, row.metric) if f"`{name}" not in doc]
    missing += [s.name for s in SPECS if s.name not in doc]
    assert not missing


def test_a_quick_exporter_is_served_fresh_and_a_hung_one_goes_down(serve):
    page = {"t": T0}
    server = serve(lambda: render_page("gpu-h8", page["t"], gpus=1))
    collector = DcgmCollector(server.url, node="n1", timeout=READ_TIMEOUT_S, max_age=0.0)
    first = value(scrape(collector), "vigil_gpu_energy_joules_total", gpu="0")
    page["t"] = T0 + 100
    # the very next scrape shows the new page, not the one from the scrape before
    assert value(scrape(collector), "vigil_gpu_energy_joules_total", gpu="0") == first + 100 * 400
    server.hang()
    started = time.monotonic()
    scrape(collector)
    assert time.monotonic() - started < READ_TIMEOUT_S + SLACK_S  # gave up at the timeout
    wait_until(lambda: value(scrape(collector), "dcgm_up", node="n1") == 0, timeout=3 * READ_TIMEOUT_S)
    text = scrape(collector)
    assert "vigil_gpu_up" not in text
    assert value(text, "vigil_exporter_dcgm_errors_total", node="n1", reason="timeout") >= 1


def test_a_gpu_that_vanishes_from_the_page_is_visible_less_than_expected_and_down(serve):
    page = {"gpus": 4}
    server = serve(lambda: render_page("gpu-j1", T0, gpus=page["gpus"]))
    collector = DcgmCollector(server.url, timeout=READ_TIMEOUT_S, max_age=0.0)
    text = scrape(collector)
    assert value(text, "vigil_node_gpus_visible", node="gpu-j1") == 4
    assert value(text, "vigil_node_gpus_expected", node="gpu-j1") == 4
    page["gpus"] = 3  # GPU 3 drops off dcgm-exporter's page
    text = scrape(collector)
    assert value(text, "dcgm_up", node="gpu-j1") == 1
    assert value(text, "vigil_node_gpus_visible", node="gpu-j1") == 3
    assert value(text, "vigil_node_gpus_expected", node="gpu-j1") == 4  # the most seen since start
    assert value(text, "vigil_gpu_up", gpu="3", uuid=gpu_uuid("gpu-j1", 3)) == 0  # still named, as NVML does
    assert "vigil_gpu_temperature_celsius" in text and 'gpu="3"' not in text.split("vigil_gpu_temperature")[1]
    page["gpus"] = 4  # back (a reset): up again
    assert value(scrape(collector), "vigil_gpu_up", gpu="3") == 1


def test_expected_gpus_is_configurable_and_published_even_before_a_good_read(serve):
    server = serve(lambda: render_page("gpu-k2", T0, gpus=2))
    assert value(scrape(DcgmCollector(server.url, expected_gpus=8)), "vigil_node_gpus_expected", node="gpu-k2") == 8
    text = scrape(DcgmCollector("http://127.0.0.1:9/metrics", node="n1", timeout=0.5, expected_gpus=8))
    assert value(text, "vigil_node_gpus_expected", node="n1") == 8
    assert value(text, "vigil_node_gpus_visible", node="n1") == 0
    # without the option and without a good read there is nothing to expect yet
    assert "vigil_node_gpus_expected" not in scrape(DcgmCollector("http://127.0.0.1:9/metrics", timeout=0.5))


def test_scrapes_are_served_from_the_last_snapshot_while_dcgm_exporter_hangs(serve):
    """The background loop (`start()`): a dcgm-exporter that accepts and never answers costs our scrape
    nothing; it shows as down with the reason, the last good read's age grows; then it recovers."""
    page = {"t": T0}
    server = serve(lambda: render_page("gpu-l3", page["t"], gpus=2))
    collector = DcgmCollector(server.url, timeout=READ_TIMEOUT_S, max_age=0.1)
    collector.start()
    try:
        # start() waits for one read; on a loaded machine that one may fail, the loop's next one not
        wait_until(lambda: value(scrape(collector), "dcgm_up", node="gpu-l3") == 1)
        text = scrape(collector)
        assert value(text, "vigil_node_gpus_visible", node="gpu-l3") == 2
        server.hang()
        errors_before = value(text, "vigil_exporter_dcgm_errors_total", node="gpu-l3", reason="timeout")
        wait_until(lambda: value(scrape(collector), "vigil_exporter_dcgm_errors_total", node="gpu-l3",
                                 reason="timeout") > errors_before)
        for _ in range(5):  # a read is hung at any moment now: every scrape still answers at once
            started = time.monotonic()
            text = scrape(collector)
            assert time.monotonic() - started < READ_TIMEOUT_S / 2  # never waits for the hung read
        assert value(text, "dcgm_up", node="gpu-l3") == 0  # node label kept from the last good page
        assert value(text, "vigil_node_gpus_visible", node="gpu-l3") == 0
        assert value(text, "vigil_node_gpus_expected", node="gpu-l3") == 2
        assert "vigil_gpu_up" not in text
        last_good = value(text, "vigil_exporter_last_collection_timestamp_seconds", node="gpu-l3")
        assert time.time() - last_good >= READ_TIMEOUT_S / 2  # stale: not advanced since the hang
        page["t"] = T0 + 100
        server.answer()
        wait_until(lambda: value(scrape(collector), "dcgm_up", node="gpu-l3") == 1)
        text = scrape(collector)
        assert value(text, "vigil_exporter_last_collection_timestamp_seconds", node="gpu-l3") > last_good
        assert value(text, "vigil_gpu_energy_joules_total", gpu="0") >= 100 * 400  # the new page's values
        assert value(text, "vigil_node_gpus_visible", node="gpu-l3") == 2
    finally:
        collector.stop()


def test_a_page_that_trickles_in_is_cut_off_at_the_timeout():
    """`requests`' timeout bounds each socket read; a page sent a line at a time must still be abandoned."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    reads = []

    def trickle():
        while not stop.is_set():  # every read gets the same slow page: each must end, and the next start
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            reads.append(conn)
            threading.Thread(target=serve_slowly, args=(conn,), daemon=True).start()

    def serve_slowly(conn):
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000000\r\n\r\n")
            while not stop.wait(0.05):
                try:
                    conn.sendall(b"# a comment line that never ends the page\n")
                except OSError:
                    return

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        collector = DcgmCollector(f"http://127.0.0.1:{listener.getsockname()[1]}/metrics", node="n1", timeout=0.5)
        started = time.monotonic()
        text = scrape(collector)
        assert time.monotonic() - started < 2.0
        wait_until(lambda: value(scrape(collector), "vigil_exporter_dcgm_errors_total", node="n1",
                                 reason="timeout") == 1, timeout=3)
        assert value(text, "dcgm_up", node="n1") == 0
        # the slow read is given up on (a total deadline), so the next read starts: a new connection
        wait_until(lambda: scrape(collector) and len(reads) >= 2, timeout=10)
    finally:
        stop.set()
        listener.close()
        thread.join(timeout=5)
