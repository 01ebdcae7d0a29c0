"""Disk and InfiniBand health: the SMART attributes that predict a disk's failure (5 reallocated, 187
reported uncorrectable, 188 command timeout, 197 pending, 198 offline uncorrectable) and how much they
grew, NVMe critical warnings and media errors, filesystem usage and when each filesystem fills at its
current rate, InfiniBand port state and error counters, and the AIOps failure-risk ranking of disks and
GPUs (docs/aiops-failure-prediction.md). Node series link to the node dashboard, GPUs to the GPU one."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Row

from .panels import BYTES, CELSIUS, COUNT, NO_INFINIBAND, PERCENT, collapsed_row, dashboard, drill, graph, listing, single

UID = "vigil-disks"
_TO_NODE = drill("Node ${__field.labels.node}", "vigil-node", ("node",))
_TO_GPU = drill("GPU ${__field.labels.gpu}", "vigil-gpu", ("node", "gpu"))
PREDICTIVE = 'attribute_id=~"5|187|188|197|198"'
FS = 'fstype!~"tmpfs|overlay|squashfs|ramfs|nsfs"'


def build():
    board = dashboard(UID, "vigil / Disks and InfiniBand", "SMART and NVMe health, filesystem usage and predicted "
                      "fill, InfiniBand ports, and the AIOps failure-risk ranking.", ("disks",))
    board = (board.with_row(Row("Now"))
             .with_panel(single("Disks failing SMART", "count(vigil_disk_smart_healthy == 0) or vector(0)", COUNT,
                                "Disks whose SMART self-assessment failed.", width=6,
                                thresholds=((None, "green"), (1, "red"))))
             .with_panel(single("NVMe critical warnings", "count(vigil_disk_nvme_critical_warning > 0) or vector(0)",
                                COUNT, "NVMe drives raising a critical warning bit.", width=6,
                                thresholds=((None, "green"), (1, "red"))))
             .with_panel(single("smartctl working", "min(vigil_smart_up)", COUNT,
                                "1 when every node's last smartctl scan ran (0: smartctl missing or failed).",
                                width=6, thresholds=((None, "red"), (1, "green"))))
             .with_panel(single("InfiniBand ports down", "count(vigil_infiniband_port_up == 0) or vector(0)", COUNT,
                                "InfiniBand ports not ACTIVE/LinkUp.", width=6, thresholds=((None, "green"), (1, "red")))))
    board = (board.with_row(Row("Failure risk (AIOps)"))
             .with_panel(listing("Riskiest disks and GPUs", "topk(10, vigil_failure_risk)", PERCENT,
                                 "The AIOps failure-risk ranking: probability (disks) or risk score (GPUs) of failing "
                                 "within the horizon; click a row for the node.", links=[_TO_NODE]))
             .with_panel(listing("What drives the GPU risk", 'topk(10, vigil_failure_risk_reason{kind="gpu"} > 0)',
                                 COUNT, "Each signal's contribution (logit term) to a GPU's risk; click for the GPU.",
                                 links=[_TO_GPU])))
    board = (board.with_row(Row("Disks"))
             .with_panel(graph("SMART failure-predicting attributes", f"max by (node, device, attribute) ("
                               f"vigil_disk_smart_attribute_raw{{{PREDICTIVE}}})", COUNT,
                               "Raw values of attributes 5, 187, 188, 197 and 198: any growth is a warning.", width=8,
                               links=[_TO_NODE]))
             .with_panel(graph("SMART attribute growth", f"max by (node, device, attribute) (delta("
                               f"vigil_disk_smart_attribute_raw{{{PREDICTIVE}}}[$__range]))", COUNT,
                               "How much each predictive attribute grew over the time range.", width=8,
                               links=[_TO_NODE]))
             .with_panel(graph("NVMe media errors", "sum by (node, device) (increase(vigil_disk_nvme_media_errors_total"
                               "[$__rate_interval]))", COUNT, "Unrecovered data integrity errors of NVMe drives.",
                               width=8, links=[_TO_NODE]))
             .with_panel(graph("Disk temperature", "max by (node, device) (vigil_disk_temperature_celsius)", CELSIUS,
                               "Drive temperatures.", width=12, links=[_TO_NODE]))
             .with_panel(listing("Disks", [("vigil_disk_smart_healthy", "healthy"),
                                           ("vigil_disk_nvme_critical_warning", "critical warning")], COUNT,
                                 "SMART health (1 passed) and NVMe critical warning of each disk.", width=12,
                                 links=[_TO_NODE])))
    board = (board.with_row(Row("Filesystems"))
             .with_panel(graph("Filesystem usage", f"1 - node_filesystem_avail_bytes{{{FS}}} / "
                               f"node_filesystem_size_bytes{{{FS}}}", PERCENT,
                               "Share of each filesystem in use (space available to users).", minimum=0, maximum=1))
             .with_panel(graph("Predicted free space in 24 h", f"predict_linear(node_filesystem_avail_bytes{{{FS}}}"
                               "[1h], 86400)", BYTES, "Space left in a day at the last hour's rate: below zero, "
                               "the filesystem fills within the day.")))
    return board.with_row(collapsed_row(
        "InfiniBand",
        graph("InfiniBand port state", "max by (node, device, port) (vigil_infiniband_port_up)", COUNT,
              "1 when a port is ACTIVE and LinkUp.", links=[_TO_NODE], minimum=0, maximum=1, empty=NO_INFINIBAND),
        graph("InfiniBand port errors", "sum by (node, device, port, counter) (increase("
              "vigil_infiniband_port_errors_total[$__rate_interval]))", COUNT,
              "Error counters (symbol errors, link downed, receive errors, ...).", links=[_TO_NODE],
              empty=NO_INFINIBAND)))
