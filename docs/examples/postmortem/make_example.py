"""Regenerate the example postmortem of docs/postmortems.md from a real drill.

Starts a small fast stack with `vigil up --detach` (the simulated fleet, a private run directory, free
ports), drills an overheating GPU without acknowledging it (so the page escalates to tier 2), then
writes `vigil postmortem` as Markdown (with its chart) and as PDF, and the PDF's first page as PNG.

    .venv/bin/python docs/examples/postmortem/make_example.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pypdfium2

from vigil.common.ports import free_port_base

HERE = Path(__file__).parent
VIGIL = str(Path(sys.executable).with_name("vigil"))
FAST_STACK = {"stack": {"scrape_interval": 1, "evaluation_interval": 1, "exporter_interval": 0.5, "group_wait": 1,
                        "group_interval": 1, "resend_delay": 1, "max_for": 2, "sim_nodes": 2, "sim_gpus": 4}}


def vigil(*args: str) -> str:
    done = subprocess.run([VIGIL, *args], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"vigil {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def settled(incident_id: int, run: list[str], timeout_s: float = 180.0) -> None:
    """Wait until none of the incident's pages is still waiting in the outbox (the SMS a minute after the
    call): a postmortem is written after the incident, not seconds after it."""
    deadline = time.monotonic() + timeout_s
    while any(page.get("state") == "pending"
              for page in json.loads(vigil("incidents", "show", str(incident_id), "--json", *run)).get("pages", [])):
        if time.monotonic() > deadline:
            sys.exit(f"incident {incident_id} still has pages waiting after {timeout_s:.0f} s")
        time.sleep(2)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config, run = Path(tmp) / "vigil.yaml", ["--run-dir", str(Path(tmp) / "run")]
        config.write_text(json.dumps(FAST_STACK))  # YAML is a superset of JSON
        vigil("up", "--detach", "--config", str(config), "--port-base", str(free_port_base()), "--gpu-backend", "sim", *run)
        try:
            vigil("drill", "overheat", "--node", "node-2", "--gpu", "3", "--no-ack", "--timeout", "90s", *run)
            incidents = json.loads(vigil("incidents", "list", "--json", *run))["incidents"]
            incident = next(i for i in reversed(incidents) if i["labels"].get("alertname") == "GpuOverheating")
            settled(incident["id"], run)  # written once every page has gone out or been dropped, as people do
            vigil("postmortem", str(incident["id"]), "--output", str(HERE / "example.md"), *run)
            pdf = Path(tmp) / "example.pdf"
            vigil("postmortem", str(incident["id"]), "--output", str(pdf), *run)
            page = pypdfium2.PdfDocument(str(pdf))[0]
            page.render(scale=1.2).to_pil().save(HERE / "example-pdf-page-1.png", optimize=True)
        finally:
            vigil("down", *run)
    print(f"wrote {HERE / 'example.md'}, its chart and {HERE / 'example-pdf-page-1.png'}")


if __name__ == "__main__":
    main()
