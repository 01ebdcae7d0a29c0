"""Job attribution against a fake /proc and cgroup tree and a real gRPC pod-resources server."""

from __future__ import annotations

import shutil
import subprocess
from concurrent import futures
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from vigil.exporters.job_sources.cgroup import CgroupContainerSource, container_of
from vigil.exporters.job_sources.kubernetes import (
    LIST_METHOD, GrpcPodResourcesClient, KubernetesSource, PodDevices, decode_list_response,
)
from vigil.exporters.job_sources.slurm import SlurmSource
from vigil.exporters.jobs import JobAttributionCollector
from vigil.exporters.spec import GpuProcess

UUID0, UUID1 = "GPU-aaaaaaaa-0000-0000-0000-000000000000", "GPU-bbbbbbbb-1111-1111-1111-111111111111"
CONTAINER = "3f4e" * 16
POD_UID = "1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d"


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def series(text: str, metric: str) -> dict[frozenset, float]:
    return {ls: v for (n, ls), v in samples(text).items() if n == metric}


def scrape(collector) -> str:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode()


def fake_process(proc: Path, pid: int, env: dict[str, str] | None = None, cgroup: str = "0::/user.slice\n") -> None:
    d = proc / str(pid)
    d.mkdir(parents=True)
    (d / "environ").write_bytes(b"".join(f"{k}={v}".encode() + b"\0" for k, v in (env or {"HOME": "/root"}).items()))
    (d / "cgroup").write_text(cgroup)


@pytest.fixture
def node_tree(tmp_path):
    """Slurm job 4242 running (its cgroup exists), job 999 finished, a container, a stray process."""
    proc, cg = tmp_path / "proc", tmp_path / "cgroup"
    (cg / "system.slice/slurmstepd.scope/job_4242").mkdir(parents=True)
    slurm_env = {"SLURM_JOB_ID": "4242", "SLURM_JOB_USER": "alice", "SLURM_JOB_ACCOUNT": "vision"}
    fake_process(proc, 100, slurm_env, "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n")
    fake_process(proc, 101, slurm_env)
    fake_process(proc, 400, {"SLURM_JOB_ID": "999", "SLURM_JOB_USER": "bob", "SLURM_JOB_ACCOUNT": "nlp"})
    fake_process(proc, 200, cgroup=f"0::/system.slice/docker-{CONTAINER}.scope\n")
    fake_process(proc, 300)
    processes = [
        GpuProcess("n1", 0, UUID0, 100), GpuProcess("n1", 0, UUID0, 101), GpuProcess("n1", 0, UUID0, 400),
        GpuProcess("n1", 1, UUID1, 200), GpuProcess("n1", 1, UUID1, 300),
    ]
    return proc, cg, processes


def test_slurm_and_container_attribution_with_zombie_and_external(node_tree):
    proc, cg, processes = node_tree
    sources = [SlurmSource(proc_root=proc, cgroup_root=cg), CgroupContainerSource(proc_root=proc)]
    text = scrape(JobAttributionCollector(lambda: processes, sources, node="n1", refresh_interval=60))
    assert series(text, "vigil_gpu_job") == {
        frozenset({("node", "n1"), ("gpu", "0"), ("uuid", UUID0), ("job_id", "4242")}): 1,
        frozenset({("node", "n1"), ("gpu", "1"), ("uuid", UUID1), ("job_id", f"container:{CONTAINER[:12]}")}): 1,
    }
    info = series(text, "vigil_job_info")
    assert frozenset({("job_id", "4242"), ("user", "alice"), ("tenant", "vision"), ("source", "slurm")}) in info
    assert not [ls for ls in info if ("job_id", "999") in ls]  # finished jobs are not listed as live
    counts = {(dict(ls)["gpu"], dict(ls)["kind"]): v for ls, v in series(text, "vigil_gpu_processes").items()}
    assert counts == {("0", "job"): 2, ("0", "zombie"): 1, ("0", "external"): 0,
                      ("1", "job"): 1, ("1", "external"): 1, ("1", "zombie"): 0}
    assert set(series(text, "vigil_job_source_up").values()) == {1}


def test_scrapes_do_not_touch_the_sources_and_known_pids_are_cached(node_tree):
    proc, cg, processes = node_tree
    calls = {"processes": 0, "job_for": 0}

    class Counting(SlurmSource):
        def job_for(self, process):
            calls["job_for"] += 1
            return super().job_for(process)

    def listing():
        calls["processes"] += 1
        return processes

    slow = JobAttributionCollector(listing, [Counting(proc, cg)], node="n1", refresh_interval=3600)
    for _ in range(5):
        scrape(slow)
    assert calls == {"processes": 1, "job_for": 5}
    fresh = JobAttributionCollector(listing, [Counting(proc, cg)], node="n1", refresh_interval=0)
    fresh._snapshot.refresh_now()
    fresh._snapshot.refresh_now()
    # second cycle: the three Slurm PIDs are cached, only the two unattributed ones are asked again
    assert calls["job_for"] == 5 + 5 + 2


def test_a_broken_source_is_reported_and_the_others_still_work(node_tree):
    proc, cg, processes = node_tree

    class Broken:
        name = "kubernetes"

        def refresh(self):
            raise ConnectionError("kubelet socket missing")

    sources = [Broken(), SlurmSource(proc, cg)]
    text = scrape(JobAttributionCollector(lambda: processes, sources, node="n1"))
    up = {dict(ls)["source"]: v for ls, v in series(text, "vigil_job_source_up").items()}
    assert up == {"kubernetes": 0, "slurm": 1}
    assert any(("job_id", "4242") in ls for ls in series(text, "vigil_gpu_job"))


def test_an_unreadable_gpu_keeps_its_pod_until_the_pod_is_gone():
    listed = [PodDevices("ml", "train-0", "main", "nvidia.com/gpu", (UUID0, UUID1))]
    client = type("Client", (), {"list": lambda self: list(listed)})()
    visible, unreadable = [GpuProcess("n1", 0, UUID0, 10), GpuProcess("n1", 1, UUID1, 11)], []
    collector = JobAttributionCollector(lambda: visible, [KubernetesSource(client)], node="n1",
                                        refresh_interval=3600, unreadable=lambda: unreadable)

    def held() -> set[tuple[str, str]]:
        collector.refresh()
        return {(dict(ls)["gpu"], dict(ls)["uuid"]) for ls in series(scrape(collector), "vigil_gpu_job")}

    assert held() == {("0", UUID0), ("1", UUID1)}
    visible, unreadable = visible[:1], [1]  # GPU 1 fell off the bus: NVML lists no process on it
    assert held() == {("0", UUID0), ("1", UUID1)}
    assert {dict(ls)["gpu"] for ls in series(scrape(collector), "vigil_gpu_processes")} == {"0"}
    client.list = lambda: (_ for _ in ()).throw(ConnectionError("kubelet restarting"))
    assert held() == {("0", UUID0), ("1", UUID1)}  # a source that cannot answer does not end the job
    client.list = lambda: []  # the pod has ended: its lost GPU and its leftover process (a zombie) are free
    assert held() == set()


def test_process_listing_failure_gives_attribution_up_0():
    def listing():
        raise RuntimeError("NVML gone")

    text = scrape(JobAttributionCollector(listing, [], node="n1"))
    assert series(text, "vigil_job_attribution_up") == {frozenset({("node", "n1")}): 0}
    assert "vigil_gpu_job" not in text


@pytest.mark.parametrize("text,expected", [
    (f"12:devices:/docker/{CONTAINER}\n", (None, CONTAINER)),
    (f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{POD_UID.replace('-', '_')}.slice/"
     f"cri-containerd-{CONTAINER}.scope\n", (POD_UID, CONTAINER)),
    (f"11:memory:/kubepods/besteffort/pod{POD_UID}/{CONTAINER}\n", (POD_UID, CONTAINER)),
    (f"0::/machine.slice/crio-{CONTAINER}.scope\n", (None, CONTAINER)),
    ("0::/user.slice/user-1000.slice/session-3.scope\n", (None, None)),
])
def test_container_and_pod_from_cgroup_paths(text, expected):
    assert container_of(text) == expected


# --- Kubernetes pod-resources over real gRPC on a unix socket -----------------------------------------

def _varint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def _msg(number: int, payload: bytes | str) -> bytes:
    payload = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def list_response(pods) -> bytes:
    out = b""
    for namespace, pod, devices in pods:
        container = _msg(1, "main") + b"".join(
            _msg(2, _msg(1, resource) + b"".join(_msg(2, d) for d in ids)) for resource, ids in devices)
        container += _varint(3 << 3 | 0) + _varint(7)  # cpu_ids=7: a varint field the decoder must skip
        out += _msg(1, _msg(1, pod) + _msg(2, namespace) + _msg(3, container))
    return out


@pytest.fixture
def kubelet(tmp_path):
    grpc = pytest.importorskip("grpc")
    body = list_response([
        ("ml-team", "trainer-0", [("nvidia.com/gpu", [UUID0]), ("example.com/nic", ["mlx5_0"])]),
        ("ml-team", "trainer-1", [("nvidia.com/gpu", [UUID1])]),
    ])
    handler = grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
        "List": grpc.unary_unary_rpc_method_handler(lambda request, ctx: body,
                                                    request_deserializer=lambda b: b,
                                                    response_serializer=lambda b: b)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    sock = tmp_path / "kubelet.sock"
    server.add_insecure_port(f"unix://{sock}")
    server.start()
    yield str(sock)
    server.stop(None)


def test_kubernetes_source_maps_gpus_to_pods_over_grpc(kubelet):
    client = GrpcPodResourcesClient(kubelet)
    assert PodDevices("ml-team", "trainer-0", "main", "nvidia.com/gpu", (UUID0,)) in client.list()
    processes = [GpuProcess("n1", 0, UUID0, 100), GpuProcess("n1", 1, UUID1, 200),
                 GpuProcess("n1", 2, "GPU-unallocated", 300)]
    text = scrape(JobAttributionCollector(lambda: processes, [KubernetesSource(client)], node="n1"))
    jobs = {(dict(ls)["gpu"], dict(ls)["job_id"]) for ls in series(text, "vigil_gpu_job")}
    assert jobs == {("0", "ml-team/trainer-0"), ("1", "ml-team/trainer-1")}
    assert frozenset({("job_id", "ml-team/trainer-0"), ("user", ""), ("tenant", "ml-team"),
                      ("source", "kubernetes")}) in series(text, "vigil_job_info")
    counts = {(dict(ls)["gpu"], dict(ls)["kind"]): v for ls, v in series(text, "vigil_gpu_processes").items()}
    assert counts[("2", "external")] == 1
    client.close()


def test_no_kubelet_socket_marks_the_source_down(tmp_path):
    pytest.importorskip("grpc")
    client = GrpcPodResourcesClient(str(tmp_path / "absent.sock"), timeout=0.5)
    text = scrape(JobAttributionCollector(lambda: [GpuProcess("n1", 0, UUID0, 1)], [KubernetesSource(client)],
                                          node="n1", wait=5))
    assert series(text, "vigil_job_source_up") == {frozenset({("node", "n1"), ("source", "kubernetes")}): 0}
    client.close()


def test_truncated_protobuf_is_rejected():
    good = list_response([("ns", "p", [("nvidia.com/gpu", [UUID0])])])
    assert decode_list_response(good)[0].device_ids == (UUID0,)
    with pytest.raises(ValueError, match="truncated"):
        decode_list_response(good[:-3])


def test_duplicate_source_names_are_refused(node_tree):
    proc, cg, _ = node_tree
    with pytest.raises(ValueError, match="distinct"):
        JobAttributionCollector(list, [SlurmSource(proc, cg), SlurmSource(proc, cg)], node="n1")


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_check_metrics_reports_nothing(node_tree):
    proc, cg, processes = node_tree
    text = scrape(JobAttributionCollector(lambda: processes, [SlurmSource(proc, cg), CgroupContainerSource(proc)],
                                          node="n1"))
    result = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout + result.stderr == "", result.stdout + result.stderr
