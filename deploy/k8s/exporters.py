"""The per-node exporters as DaemonSets, and the PodMonitors that scrape them.

- `vigil-gpu-exporter` on GPU nodes only (`nvidia.com/gpu.present` label, the GPU taint tolerated):
  NVML through the NVIDIA runtime class, jobs from the kubelet's pod-resources socket (read-only);
- `vigil-node-health` on every node: SMART (smartctl on the host's disks) and InfiniBand (sysfs);
- `node-exporter` (the upstream node_exporter) on every node: host /proc, /sys and / read-only.

Why each one needs what it has is in docs/deploy.md (Privileges).
"""

from __future__ import annotations

from .meta import (DeploySettings, container_port, field_env, http_probe, labels, metadata, obj,
                   restricted_security, resources, selector, service_account)

GPU_EXPORTER = "vigil-gpu-exporter"
NODE_HEALTH = "vigil-node-health"
NODE_EXPORTER = "node-exporter"
GPU_NODE_LABEL = "nvidia.com/gpu.present"  # set by NVIDIA's GPU feature discovery / GPU operator
GPU_TAINT = "nvidia.com/gpu"
POD_RESOURCES_DIR = "/var/lib/kubelet/pod-resources"
NODE_NAME_ENV = "NODE_NAME"
# the scrape job names the rules name (`up{job="vigil-gpu"}`), as in `vigil up`'s prometheus.yml
JOBS = {GPU_EXPORTER: "vigil-gpu", NODE_HEALTH: "vigil-node-health", NODE_EXPORTER: "node-exporter"}


def _daemonset(settings: DeploySettings, name: str, pod_spec: dict) -> dict:
    template = {"metadata": {"labels": labels(name)}, "spec": {"serviceAccountName": name, **pod_spec}}
    spec = {"selector": {"matchLabels": selector(name)},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
            "template": template}
    return obj("apps/v1", "DaemonSet", metadata(settings, name, name), spec=spec)


def _host_path(name: str, path: str, kind: str = "Directory") -> dict:
    return {"name": name, "hostPath": {"path": path, "type": kind}}


def gpu_exporter(settings: DeploySettings) -> list[dict]:
    port = settings.ports.gpu_exporter
    container = {
        "name": "gpu-exporter", "image": settings.image(settings.exporter_image),
        "args": ["exporter", "gpu", "--backend", "nvml", "--listen", f"0.0.0.0:{port}",
                 "--node", f"$({NODE_NAME_ENV})", "--job-sources", "kubernetes"],
        # the NVIDIA container runtime mounts every GPU and the driver's libraries (what dcgm-exporter does)
        "env": [field_env(NODE_NAME_ENV, "spec.nodeName"), {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"}],
        "ports": [container_port("metrics", port)],
        "readinessProbe": http_probe("/metrics", "metrics"),
        "livenessProbe": http_probe("/metrics", "metrics", period=20, timeout=10, initial=10),
        "resources": resources("100m", "128Mi", memory_limit="256Mi"),
        # uid 0 only to connect to the kubelet's root-owned 0755 socket; no capability, so no bypass of
        # file permissions, and nothing of the host is mounted but that socket's folder (read-only)
        "securityContext": {**restricted_security(), "runAsNonRoot": False, "runAsUser": 0, "runAsGroup": 0},
        "volumeMounts": [{"name": "pod-resources", "mountPath": POD_RESOURCES_DIR, "readOnly": True}],
    }
    pod = {"runtimeClassName": "nvidia", "nodeSelector": {GPU_NODE_LABEL: "true"},
           "tolerations": [{"key": GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}],
           "automountServiceAccountToken": False,
           "containers": [container], "volumes": [_host_path("pod-resources", POD_RESOURCES_DIR)]}
    return [service_account(settings, GPU_EXPORTER, GPU_EXPORTER), _daemonset(settings, GPU_EXPORTER, pod),
            pod_monitor(settings, GPU_EXPORTER)]


def node_health(settings: DeploySettings) -> list[dict]:
    port = settings.ports.node_health
    container = {
        "name": "node-health", "image": settings.image(settings.exporter_image),
        "args": ["exporter", "node", "--listen", f"0.0.0.0:{port}", "--node", f"$({NODE_NAME_ENV})",
                 "--sysfs-root", "/host/sys"],
        "env": [field_env(NODE_NAME_ENV, "spec.nodeName")],
        "ports": [container_port("metrics", port)],
        "readinessProbe": http_probe("/metrics", "metrics"),
        "livenessProbe": http_probe("/metrics", "metrics", period=30, timeout=10, initial=10),
        "resources": resources("50m", "64Mi", memory_limit="128Mi"),
        # smartctl sends ATA/NVMe pass-through commands to the host's block devices: the device cgroup
        # lets a container open them only when privileged, which also puts the host's device nodes in
        # its /dev (docs/deploy.md, Privileges)
        "securityContext": {"privileged": True, "readOnlyRootFilesystem": True, "runAsUser": 0},
        "volumeMounts": [{"name": "sys", "mountPath": "/host/sys", "readOnly": True}],
    }
    pod = {"tolerations": [{"operator": "Exists"}], "automountServiceAccountToken": False,
           "containers": [container],
           "volumes": [_host_path("sys", "/sys")]}
    return [service_account(settings, NODE_HEALTH, NODE_HEALTH), _daemonset(settings, NODE_HEALTH, pod),
            pod_monitor(settings, NODE_HEALTH)]


def node_exporter(settings: DeploySettings) -> list[dict]:
    port = settings.ports.node_exporter
    host = [("proc", "/proc", "/host/proc"), ("sys", "/sys", "/host/sys"), ("root", "/", "/host/root")]
    container = {
        "name": "node-exporter", "image": settings.node_exporter_image,
        "args": ["--path.procfs=/host/proc", "--path.sysfs=/host/sys", "--path.rootfs=/host/root",
                 "--path.udev.data=/host/root/run/udev/data", "--no-collector.systemd",
                 f"--web.listen-address=:{port}",
                 "--collector.filesystem.mount-points-exclude=^/(dev|proc|sys|run/k3s|var/lib/kubelet/.+)($|/)"],
        "ports": [container_port("metrics", port)],
        "readinessProbe": http_probe("/", "metrics"),
        "livenessProbe": http_probe("/", "metrics", period=20, initial=5),
        "resources": resources("50m", "64Mi", memory_limit="128Mi"),
        "securityContext": restricted_security(65534),  # the image's user, nobody
        "volumeMounts": [{"name": name, "mountPath": mount, "readOnly": True,
                          **({"mountPropagation": "HostToContainer"} if name == "root" else {})}
                         for name, _, mount in host],
    }
    # hostNetwork: the network collectors read /proc/net of the reader's network namespace, which
    # must be the host's; hostPID is not needed (the host's /proc is mounted)
    pod = {"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet", "tolerations": [{"operator": "Exists"}],
           "automountServiceAccountToken": False,
           "containers": [container], "volumes": [_host_path(name, path) for name, path, _ in host]}
    return [service_account(settings, NODE_EXPORTER, NODE_EXPORTER), _daemonset(settings, NODE_EXPORTER, pod),
            pod_monitor(settings, NODE_EXPORTER)]


def pod_monitor(settings: DeploySettings, component: str, interval: str = "15s") -> dict:
    """Scrape every pod of `component` on its `metrics` port (a DaemonSet needs no Service for this),
    with the job name and `node` label the rules expect (the same as `vigil up`'s scrape config)."""
    endpoint = {"port": "metrics", "path": "/metrics", "interval": interval, "scrapeTimeout": "10s",
                "honorLabels": component != NODE_EXPORTER,  # vigil's exporters label their series by node
                "relabelings": [{"targetLabel": "job", "replacement": JOBS[component]},
                                {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}]}
    return obj("monitoring.coreos.com/v1", "PodMonitor", metadata(settings, component, component),
               spec={"selector": {"matchLabels": selector(component)}, "podMetricsEndpoints": [endpoint]})
