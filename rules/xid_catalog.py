"""The XID catalogue: what each XID means and what an operator should do about it, as data.

Facts follow NVIDIA's XID catalogue and the repair actions leptonai/gpud attaches to each XID (reset the
GPU, reboot the node, inspect the hardware when the XID comes back after a reboot); vigil's severity class
of each XID stays in `vigil.exporters.xid` (the exporter labels its counters with it). Rules carry the
action into an alert's `action` label with the `xid_events` kind, so routing, dashboards and the page
itself say what to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from .promql import quote

# the values of the `action` label, in escalating order
RESTART_JOB = "restart_job"  # the program caused it: the GPU is healthy, the job must be fixed or restarted
WATCH = "watch"  # informational: no action now, a trend may call for a reset later
RESET_GPU = "reset_gpu"  # drain the GPU and reset it (nvidia-smi --gpu-reset)
REBOOT_NODE = "reboot_node"  # drain the node and reboot it; a reset is not enough
INSPECT_HARDWARE = "inspect_hardware"  # the fault came back after reboots: reseat, test or replace the GPU
# the actions of paging alerts that are no XID (their rules set the label): an overheating GPU, a node gone
COOL_GPU = "cool_gpu"  # drain the GPU and find why it runs hot
CHECK_NODE = "check_node"  # the node stopped answering: reach it out of band
RESUBMIT_JOB = "resubmit_job"  # a job hangs on healthy GPUs: its owner cancels and resubmits it
ACTIONS = (RESTART_JOB, WATCH, RESET_GPU, REBOOT_NODE, INSPECT_HARDWARE, COOL_GPU, CHECK_NODE, RESUBMIT_JOB)
# each action as a page tells it to the person on call
ACTION_TEXT = MappingProxyType({
    RESTART_JOB: "restart the job (the GPU is healthy: the program caused it)",
    WATCH: "no action now; watch the trend (a reset may be needed later)",
    RESET_GPU: "drain the GPU and reset it (nvidia-smi --gpu-reset)",
    REBOOT_NODE: "drain the node and reboot it (a GPU reset is not enough)",
    INSPECT_HARDWARE: "inspect the hardware: reseat, test or replace the GPU (the fault came back)",
    COOL_GPU: "drain the GPU and check its cooling (fans, airflow, rack inlet); return it below 85 °C",
    CHECK_NODE: "reach the node out of band (BMC: power, console); reboot it if hung, else restart its exporter",
    RESUBMIT_JOB: "dump the job's stacks (py-spy dump), cancel it and resubmit it from its last checkpoint",
})
XID_METRIC = "vigil_gpu_xid_errors_total"


@dataclass(frozen=True)
class XidEntry:
    """One XID: a short name and the first action to take (`inspect_hardware` when it recurs)."""

    xid: int
    name: str
    action: str
    recurs_to_hardware: bool = False  # if it comes back after a reboot, the hardware is suspect


_ENTRIES = (
    XidEntry(13, "graphics engine exception", RESTART_JOB),
    XidEntry(31, "GPU memory page fault", RESTART_JOB),
    XidEntry(43, "GPU stopped processing (the context was killed)", RESTART_JOB),
    XidEntry(45, "preemptive cleanup of a context", RESTART_JOB),
    XidEntry(68, "video decoder exception", RESTART_JOB),
    XidEntry(48, "double-bit ECC error", RESET_GPU, recurs_to_hardware=True),
    XidEntry(62, "internal micro-controller halt", RESET_GPU, recurs_to_hardware=True),
    XidEntry(63, "row remapping recorded (takes effect on reset)", RESET_GPU, recurs_to_hardware=True),
    XidEntry(64, "row remapping or page retirement recording failure", REBOOT_NODE, recurs_to_hardware=True),
    XidEntry(74, "NVLink error", REBOOT_NODE, recurs_to_hardware=True),
    XidEntry(79, "GPU has fallen off the bus", REBOOT_NODE, recurs_to_hardware=True),
    XidEntry(92, "high single-bit ECC error rate", WATCH),
    XidEntry(94, "contained ECC error", RESET_GPU),
    XidEntry(95, "uncontained ECC error", REBOOT_NODE, recurs_to_hardware=True),
    XidEntry(119, "GSP RPC timeout", REBOOT_NODE, recurs_to_hardware=True),
    XidEntry(120, "GSP error", REBOOT_NODE, recurs_to_hardware=True),
    XidEntry(140, "unrecovered ECC error", RESET_GPU, recurs_to_hardware=True),
    XidEntry(143, "GPU initialization failure", REBOOT_NODE, recurs_to_hardware=True),
    XidEntry(158, "GPU fatal timeout", REBOOT_NODE, recurs_to_hardware=True),
)
XID_CATALOG: MappingProxyType[int, XidEntry] = MappingProxyType({e.xid: e for e in _ENTRIES})


def xids_for(action: str) -> tuple[int, ...]:
    """The catalogued XIDs whose first action is `action`, ascending."""
    return tuple(sorted(x for x, e in XID_CATALOG.items() if e.action == action))


def hardware_suspect_xids() -> tuple[int, ...]:
    """XIDs that point at the hardware when they come back after a reset or reboot."""
    return tuple(sorted(x for x, e in XID_CATALOG.items() if e.recurs_to_hardware))


def xid_regex(xids: tuple[int, ...]) -> str:
    return "|".join(str(x) for x in xids)


def with_action_label(expr: str) -> str:
    """`expr` (whose series carry `xid`) with an `action` label set from the catalogue, one
    `label_replace` per action; an XID outside the catalogue gets no `action` label."""
    for action in ACTIONS:
        xids = xids_for(action)
        if xids:
            expr = f"label_replace({expr}, {quote('action')}, {quote(action)}, {quote('xid')}, {quote(xid_regex(xids))})"
    return expr
