"""VictoriaMetrics and vmalert as the large overlay runs them, with the real binaries (Debian's
victoria-metrics package): each container's own command line from the rendered manifests runs here,
its probe paths answer, and vmalert, with the generated global rule file, evaluates it against
VictoriaMetrics, writes its alerts' state back there, and sends the always-firing Watchdog to every
Alertmanager peer it is given.

What a laptop lacks is swapped, and only that: the listen address becomes a free loopback port, the
volume and the rule ConfigMap become folders under tmp_path, the in-cluster URLs become the local
processes (each Alertmanager peer a small HTTP receiver), and the evaluation interval drops from 15 s to
1 s so the test takes seconds.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
import yaml

from vigil.common.ports import free_port
from vigil.deploy.k8s import DEFAULT_OUTPUT
from vigil.deploy.k8s.kustomize import render_overlay

pytestmark = pytest.mark.e2e
VM_URL = "http://vigil-victoria-metrics.vigil.svc:8428"


class Peer(ThreadingHTTPServer):
    """A stand-in Alertmanager peer: records the alerts posted to it."""

    def __init__(self):
        self.alerts: list[dict] = []
        peer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path == "/api/v2/alerts":
                    peer.alerts += json.loads(body)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def poll(check, proc: subprocess.Popen, what: str, timeout: float = 45):
    """Wait until `check()` gives a truthy value (the process must stay up meanwhile)."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"{proc.args[0]} exited:\n{proc.stdout.read()}"
        try:
            found = check()
        except requests.ConnectionError:
            found = None
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.2)


def _container(objects: list[dict], kind: str, name: str) -> tuple[dict, dict]:
    [obj] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    pod = obj["spec"]["template"]["spec"]
    return pod, pod["containers"][0]


def _start(args: list[str], swaps: dict[str, str], log: Path) -> subprocess.Popen:
    line = []
    for arg in args:
        for theirs, ours in swaps.items():
            arg = arg.replace(theirs, ours)
        line.append(arg)
    return subprocess.Popen(line, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True)


def _probe(port: int, container: dict, proc: subprocess.Popen) -> None:
    for probe in ("livenessProbe", "readinessProbe"):
        url = f"http://127.0.0.1:{port}{container[probe]['httpGet']['path']}"
        poll(lambda: requests.get(url, timeout=5).status_code == 200, proc, f"{url} answering 200")


def _start_victoria_metrics(objects: list[dict], tmp_path: Path) -> tuple[subprocess.Popen, int]:
    """VictoriaMetrics with the StatefulSet's command line, probed as the kubelet would."""
    _, vm = _container(objects, "StatefulSet", "vigil-victoria-metrics")
    port = free_port()
    [data] = vm["volumeMounts"]
    proc = _start(["victoria-metrics", *vm["args"]], {
        data["mountPath"]: str(tmp_path / "data"), f"-httpListenAddr=:{vm['ports'][0]['containerPort']}":
        f"-httpListenAddr=127.0.0.1:{port}"}, tmp_path / "vm.log")
    proc.stdout = (tmp_path / "vm.log").open()  # read by poll() when the process dies
    try:
        _probe(port, vm, proc)
    except BaseException:
        proc.kill()
        raise
    return proc, port


def _stop(started: list[subprocess.Popen]) -> None:
    """Last started first: a writer stops while its store still answers (Prometheus otherwise retries
    its last batch for up to its flush deadline)."""
    for proc in reversed(started):
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _snake(node):
    """A CR's camelCase fields as prometheus.yml's snake_case keys (what the operator writes)."""
    if isinstance(node, dict):
        return {re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower(): _snake(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_snake(value) for value in node]
    return node


def _counter(url: str, prefix: str) -> float:
    """The sum of the samples in the exposition at `url` whose line starts with `prefix`."""
    text = requests.get(url, timeout=5).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix))


def _series(address: str, selector: str) -> list[dict]:
    return requests.get(f"http://{address}/api/v1/series", params={"match[]": selector}, timeout=5).json()["data"]


def _samples_sent(port: int) -> float:
    return _counter(f"http://127.0.0.1:{port}/metrics", "prometheus_remote_storage_samples_total{")


def test_the_two_replicas_of_a_shard_write_one_series_to_victoria_metrics(tmp_path):
    """The operator's prometheus.yml for each replica of the Prometheus CR (its external labels, the
    replica label it adds, the CR's remoteWrite) on the real Prometheus 2.42: both replicas scrape the
    same target, and VictoriaMetrics holds one series of it, without the replica label. (Swapped: the
    scrape interval and batch deadline, 1 s, so the test takes seconds.)"""
    objects = render_overlay(DEFAULT_OUTPUT / "overlays" / "large")
    [spec] = [o["spec"] for o in objects if o["kind"] == "Prometheus"]
    started: list[subprocess.Popen] = []
    replicas: list[tuple[subprocess.Popen, int]] = []
    try:
        vm_proc, vm_port = _start_victoria_metrics(objects, tmp_path)
        started.append(vm_proc)
        target = f"127.0.0.1:{vm_port}"  # VictoriaMetrics' own /metrics: a target both replicas scrape
        for replica in range(2):
            folder = tmp_path / f"prometheus-{replica}"
            folder.mkdir()
            external = {**spec["externalLabels"], "prometheus": "vigil/vigil",
                        spec["replicaExternalLabelName"]: f"prometheus-vigil-{replica}"}
            writes = _snake(spec["remoteWrite"])
            for write in writes:
                write["url"] = write["url"].replace(VM_URL, f"http://{target}")
                write["queue_config"]["batch_send_deadline"] = "1s"  # the test's pace, not the CR's 5 s
            port = free_port()
            # beside the shared target, each replica's own: one series per replica whatever the labels,
            # which shows when VictoriaMetrics' index holds what both replicas wrote
            config = {"global": {"scrape_interval": "1s", "external_labels": external},
                      "scrape_configs": [{"job_name": "victoria-metrics", "static_configs": [{"targets": [target]}]},
                                         {"job_name": "self", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}],
                      "remote_write": writes}
            (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
            proc = _start(["prometheus", f"--config.file={folder / 'prometheus.yml'}",
                           f"--storage.tsdb.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                          {}, folder / "prometheus.log")
            proc.stdout = (folder / "prometheus.log").open()
            started.append(proc)
            replicas.append((proc, port))
        for proc, port in replicas:  # each replica has sent a few batches (its own count of sent samples)
            poll(lambda: _samples_sent(port) >= 200, proc, f"the replica on port {port} writing 200 samples")
        poll(lambda: len(_series(target, 'up{job="self"}')) == 2, vm_proc, "both replicas' series searchable")
        series = _series(target, 'up{job="victoria-metrics"}')
        assert len(series) == 1, series
        assert spec["replicaExternalLabelName"] not in series[0] and series[0]["cluster"] == "vigil"
    finally:
        _stop(started)


def test_vmalert_runs_the_global_rules_on_victoria_metrics_and_alerts_every_peer(tmp_path):
    assert shutil.which("victoria-metrics") and shutil.which("vmalert"), \
        "victoria-metrics and vmalert (Debian's victoria-metrics) are dependencies (Makefile DEB_PACKAGES)"
    objects = render_overlay(DEFAULT_OUTPUT / "overlays" / "large")
    started: list[subprocess.Popen] = []
    peers = [Peer() for _ in range(3)]
    try:
        vm_proc, vm_port = _start_victoria_metrics(objects, tmp_path)
        started.append(vm_proc)

        pod, vmalert = _container(objects, "Deployment", "vigil-vmalert")
        [mount] = vmalert["volumeMounts"]
        [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        [config] = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == volume["configMap"]["name"]]
        rules = tmp_path / "rules"
        rules.mkdir()
        for item in volume["configMap"]["items"]:
            (rules / item["path"]).write_text(config["data"][item["key"]])
        alertmanagers = [a.split("=", 1)[1] for a in vmalert["args"] if a.startswith("-notifier.url=")]
        assert len(alertmanagers) == len(peers)
        vmalert_port = free_port()
        swaps = {mount["mountPath"]: str(rules), VM_URL: f"http://127.0.0.1:{vm_port}", "-evaluationInterval=15s":
                 "-evaluationInterval=1s", f"-httpListenAddr=:{vmalert['ports'][0]['containerPort']}":
                 f"-httpListenAddr=127.0.0.1:{vmalert_port}", **dict(zip(alertmanagers, (p.url for p in peers)))}
        vmalert_proc = _start(["vmalert", *vmalert["args"]], swaps, tmp_path / "vmalert.log")
        started.append(vmalert_proc)
        vmalert_proc.stdout = (tmp_path / "vmalert.log").open()
        _probe(vmalert_port, vmalert, vmalert_proc)

        groups = requests.get(f"http://127.0.0.1:{vmalert_port}/api/v1/rules", timeout=5).json()["data"]["groups"]
        loaded = {g["name"] for g in groups}
        assert loaded == {g["name"] for text in config["data"].values() for g in yaml.safe_load(text)["groups"]}
        assert {"vigil-slo", "vigil-jobs"} <= loaded
        for peer in peers:  # every Alertmanager peer is told, as Prometheus tells each
            watchdog = poll(lambda: [a for a in peer.alerts if a["labels"].get("alertname") == "Watchdog"],
                            vmalert_proc, f"the Watchdog reaching {peer.url}")
            assert watchdog[0]["labels"]["cluster"] == "vigil"

        def stored():  # the alert state, written back to VictoriaMetrics by -remoteWrite.url
            answer = requests.get(f"http://127.0.0.1:{vm_port}/api/v1/series",
                                  params={"match[]": 'ALERTS{alertname="Watchdog"}'}, timeout=5)
            return answer.json()["data"]
        assert poll(stored, vm_proc, "ALERTS{alertname=\"Watchdog\"} in VictoriaMetrics")
    finally:
        for peer in peers:
            peer.shutdown()
        _stop(started)
