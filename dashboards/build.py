"""The dashboards and their Grafana provisioning files, as {relative path: text}: pure and deterministic
(sorted keys, fixed UIDs, panel ids numbered in order), so the checked-in files are a golden copy that
`vigil dashboards build --check` and the tests compare with.

Layout of the output folder:

    json/<uid>.json                       one dashboard each (Grafana's dashboard JSON model)
    provisioning/dashboards/vigil.yaml    a file provider reading json/ (copy or mount it at DASHBOARD_PATH)
    provisioning/datasources/vigil.yaml   the Prometheus datasource, uid `vigil-prometheus`
"""

from __future__ import annotations

import json
from pathlib import Path

from grafana_foundation_sdk.cog.encoder import JSONEncoder

from vigil.rules.dump import dump_yaml

from . import aiops, disks, fleet, gpu, job, node, oncall, stack
from .panels import DATASOURCE_TYPE, DATASOURCE_UID, INCIDENTS, panels

GRAFANA_VERSION = "11.6"  # the Grafana release grafana-foundation-sdk's pinned version (…!11.6.0) models
MODULES = (fleet, node, gpu, job, stack, oncall, disks, aiops)  # drill-down order, the stack, on-call, disks, AIOps
DEFAULT_OUTPUT = Path(__file__).parent  # the checked-in copy: dashboards/json, dashboards/provisioning
DEFAULT_PROMETHEUS_URL = "http://127.0.0.1:9600"  # `vigil up`'s Prometheus (port_base)
DASHBOARD_PATH = "/var/lib/grafana/dashboards/vigil"
PROVIDER_FILE = "provisioning/dashboards/vigil.yaml"
DATASOURCE_FILE = "provisioning/datasources/vigil.yaml"


def dashboard_models() -> list[dict]:
    """Each dashboard as Grafana's JSON model (a dict), panel ids numbered 1, 2, … in grid order."""
    models = []
    for module in MODULES:
        model = json.loads(json.dumps(module.build().build(), cls=JSONEncoder))
        place_collapsed(model)
        for number, panel in enumerate(panels(model), start=1):
            panel["id"] = number
        annotation_formats(model)
        models.append(model)
    return models


def place_collapsed(model: dict) -> None:
    """Lay the panels of each collapsed row out below it, left to right on the 24-column grid, as Grafana
    places them when the row is opened (the SDK leaves them at 0,0)."""
    for row in model.get("panels") or []:
        x, y, tallest = 0, row["gridPos"]["y"] + 1, 0
        for panel in row.get("panels") or []:
            grid = panel.setdefault("gridPos", {})
            if x + grid["w"] > 24:
                x, y, tallest = 0, y + tallest, 0
            grid.update(x=x, y=y)
            x, tallest = x + grid["w"], max(tallest, grid["h"])


def annotation_formats(model: dict) -> None:
    """The incidents annotation's title, text and tags, from the labels of `vigil_incident_open` (fields of
    Grafana's Prometheus annotation that grafana-foundation-sdk does not model)."""
    for annotation in (model.get("annotations") or {}).get("list") or []:
        if annotation.get("name") == INCIDENTS:
            annotation.update(titleFormat="#{{incident_id}} {{alertname}} ({{priority}})",
                              textFormat="{{state}}: node {{node}} GPU {{gpu}} {{job_id}}",
                              tagKeys="priority,team,node", step="30s", useValueForTime=False)


def provisioning(prometheus_url: str = DEFAULT_PROMETHEUS_URL, scrape_interval: str = "15s") -> dict[str, dict]:
    """The provisioning documents (Grafana's `apiVersion: 1` files)."""
    provider = {"apiVersion": 1, "providers": [{
        "name": "vigil", "folder": "vigil", "type": "file", "disableDeletion": False, "allowUiUpdates": False,
        "updateIntervalSeconds": 60, "options": {"path": DASHBOARD_PATH, "foldersFromFilesStructure": False}}]}
    datasource = {"apiVersion": 1, "datasources": [{
        "name": "vigil Prometheus", "type": DATASOURCE_TYPE, "uid": DATASOURCE_UID, "access": "proxy",
        "url": prometheus_url, "isDefault": True, "editable": False,
        "jsonData": {"timeInterval": scrape_interval, "prometheusType": "Prometheus",
                     "prometheusVersion": "2.42.0", "httpMethod": "POST"}}]}
    return {PROVIDER_FILE: provider, DATASOURCE_FILE: datasource}


def render(prometheus_url: str = DEFAULT_PROMETHEUS_URL) -> dict[str, str]:
    """{path relative to the output folder: text} of every file `vigil dashboards build` writes."""
    files = {f"json/{model['uid']}.json": json.dumps(model, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
             for model in dashboard_models()}
    files.update({path: dump_yaml(doc) for path, doc in provisioning(prometheus_url).items()})
    return files
