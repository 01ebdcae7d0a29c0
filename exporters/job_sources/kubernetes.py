"""Kubernetes: which pod holds which GPU, from the kubelet pod-resources API.

The kubelet serves `v1.PodResourcesLister/List` over gRPC on a unix socket
(`/var/lib/kubelet/pod-resources/kubelet.sock`; reading it needs root or a hostPath mount). Its answer
lists, per pod and container, the device ids allocated per resource; for `nvidia.com/gpu` those are GPU
UUIDs (or MIG UUIDs), which is what NVML reports for a process. So this source maps a process to a job
through its GPU, listing pods once per attribution cycle rather than on every scrape (dcgm-exporter's
per-scrape listing is a known CPU cost). The job id is `<namespace>/<pod>`, the tenant the namespace.

Limits: only GPUs allocated through the device plugin are seen (a process on a GPU that no pod was
given is "external", as it should be); the API has no user; finished pods vanish from the list, so
their leftover processes show as external rather than zombie, unless attributed while the pod ran:
`is_finished` is true for a pod no longer listed (which also ends its hold on a GPU the exporter cannot
read, see `exporters.jobs`). The gRPC call needs the optional
`grpcio` package (`pip install vigil[k8s]`); the protobuf messages are decoded here by hand because
the answer is three nested message types and a generated stub would add a protobuf dependency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from vigil.exporters.jobs import JobRef
from vigil.exporters.spec import GpuProcess

DEFAULT_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
LIST_METHOD = "/v1.PodResourcesLister/List"
GPU_RESOURCES = ("nvidia.com/gpu",)


@dataclass(frozen=True)
class PodDevices:
    """Devices of one resource allocated to one container of a pod."""

    namespace: str
    pod: str
    container: str
    resource: str
    device_ids: tuple[str, ...]


class PodResourcesClient(Protocol):
    def list(self) -> list[PodDevices]: ...


def _fields(buf: bytes):
    """Yield (field number, wire type, value) of a protobuf message; value is int or bytes."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            length, i = _varint(buf, i)
            value, i = buf[i:i + length], i + length
            if i > len(buf):
                raise ValueError("truncated protobuf message")
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, wire, value


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated protobuf varint")
        byte = buf[i]
        result |= (byte & 0x7F) << shift
        i += 1
        if not byte & 0x80:
            return result, i
        shift += 7


def decode_list_response(buf: bytes) -> list[PodDevices]:
    """Decode a v1 ListPodResourcesResponse: pod_resources=1 {name=1, namespace=2, containers=3
    {name=1, devices=2 {resource_name=1, device_ids=2}}}. Unknown fields are skipped."""
    out = []
    for number, wire, pod_buf in _fields(buf):
        if number != 1 or wire != 2:
            continue
        pod = {1: "", 2: ""}
        containers = []
        for n, w, v in _fields(pod_buf):
            if n in (1, 2) and w == 2:
                pod[n] = v.decode()
            elif n == 3 and w == 2:
                containers.append(v)
        for cont_buf in containers:
            cname, devices = "", []
            for n, w, v in _fields(cont_buf):
                if n == 1 and w == 2:
                    cname = v.decode()
                elif n == 2 and w == 2:
                    devices.append(v)
            for dev_buf in devices:
                resource, ids = "", []
                for n, w, v in _fields(dev_buf):
                    if n == 1 and w == 2:
                        resource = v.decode()
                    elif n == 2 and w == 2:
                        ids.append(v.decode())
                out.append(PodDevices(pod[2], pod[1], cname, resource, tuple(ids)))
    return out


class GrpcPodResourcesClient:
    """Calls the kubelet's List over its unix socket (needs `grpcio`)."""

    def __init__(self, socket_path: str = DEFAULT_SOCKET, timeout: float = 5.0):
        try:
            import grpc
        except ImportError as exc:
            raise RuntimeError("the Kubernetes job source needs grpcio: pip install 'vigil[k8s]'") from exc
        self._channel = grpc.insecure_channel(f"unix://{socket_path}")
        self._list: Callable = self._channel.unary_unary(
            LIST_METHOD, request_serializer=lambda _: b"", response_deserializer=decode_list_response)
        self._timeout = timeout

    def list(self) -> list[PodDevices]:
        return self._list(None, timeout=self._timeout)

    def close(self) -> None:
        self._channel.close()


class KubernetesSource:
    """Attributes a GPU process to the pod that was allocated its GPU."""

    name = "kubernetes"

    def __init__(self, client: PodResourcesClient, resources: tuple[str, ...] = GPU_RESOURCES):
        self._client = client
        self._resources = resources
        self._by_device: dict[str, JobRef] = {}
        self._listed: set[str] = set()  # job ids of the pods holding devices in the last list

    def refresh(self) -> None:
        by_device = {}
        for entry in self._client.list():
            if entry.resource in self._resources:
                job = JobRef(job_id=f"{entry.namespace}/{entry.pod}", tenant=entry.namespace, source=self.name)
                for device in entry.device_ids:
                    by_device[device] = job
        self._by_device = by_device
        self._listed = {job.job_id for job in by_device.values()}

    def job_for(self, process: GpuProcess) -> JobRef | None:
        return self._by_device.get(process.uuid)

    def is_finished(self, job: JobRef) -> bool:
        return job.job_id not in self._listed
