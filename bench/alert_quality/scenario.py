"""The live scenario's steps: every chaos fault once, on a GPU of its own, and a planned reboot.

A step is a drill (`vigil drill FAULT`: a shipped rule names the fault, so the drill injects it, waits
for that page, acknowledges it as its recipient, clears the fault and waits for the resolution), a
plain injection (faults no rule drills: injected, left `--fault-window`, every incident it opened
acknowledged as a DRI would, cleared, and its incidents waited out), or the planned reboot (a
maintenance window on one node, the node taken down and brought back inside it, the window ended
once its incidents resolved). Each step measures what it paged from its start to its end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from vigil.common.times import parse_time
from vigil.stack.client import StackClient, StackRequestError

VIGIL = str(Path(sys.executable).with_name("vigil"))
PAGES = 5000
SHORT_FORM = ("sms", "phone")  # one line of 160 characters: the action, no runbook (docs/notifier.md)
JOB_BOUND = ("job-hang",)  # hits the job holding the GPU: planned on a job GPU
PLAIN_NODE = ("load-anomaly",)  # drilled on the last node, which never hosts jobs (docs/exporters.md)
REBOOT = "planned-reboot"
WHOLE_NODE = ("node-down", "disk-failing", REBOOT)  # a node (or one of its disks), no GPU
HOST_DISKS = ("disk-failing",)  # the demo's node health exporter simulates the first node's disks only


@dataclass(frozen=True)
class Step:
    fault: str
    node: str
    gpu: int
    drill: bool  # a shipped rule drills it; otherwise injected and observed
    job: str | None = None  # the simulated job holding the GPU when the scenario was planned


def vigil(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([VIGIL, *args], capture_output=True, text=True, timeout=timeout)


def plan(faults: list[str], drilled: set[str], nodes: list[str], jobs: list[dict]) -> list[Step]:
    """A GPU of its own for every GPU fault (a second fault on one GPU would page "came back: inspect"),
    job GPUs first so the pages can name a job; node and disk faults on the nodes in turn, last first."""
    holder = {(g["node"], g["gpu"]): job["job_id"] for job in jobs for g in job["gpus"]}
    job_gpus = [(g["node"], g["gpu"]) for job in jobs for g in job["gpus"][:1] if g["node"] != nodes[-1]]
    hung = [job_gpus.pop()] if job_gpus and any(f in JOB_BOUND for f in faults) else []
    spare = [(node, gpu) for gpu in range(8) for node in nodes[:-1]]
    free = [*job_gpus, *(where for where in spare if where not in job_gpus and where not in hung)]
    whole_nodes = iter(reversed(nodes * len(faults)))
    steps = []
    for fault in faults:
        if fault in HOST_DISKS:
            where = (nodes[0], 0)
        elif fault in WHOLE_NODE:
            where = (next(whole_nodes), 0)
        elif fault in PLAIN_NODE:
            where = (nodes[-1], 1)
        elif fault in JOB_BOUND and hung:
            where = hung[0]
        else:
            where = free.pop(0)
        steps.append(Step(fault, where[0], where[1], fault in drilled,
                          None if fault in WHOLE_NODE else holder.get(where)))
    return steps


def firing_pages(apis: StackClient, since: float, until: float) -> list[dict]:
    return [p for p in apis.pages(PAGES) if p.get("status") == "firing" and since <= parse_time(p["time"]) < until]


def incidents_opened(apis: StackClient, since: float, until: float) -> list[dict]:
    return [i for i in apis.incidents() if since <= parse_time(i["opened_at"]) < until]


def by_rule(pages: list[dict]) -> dict[str, int]:
    return dict(Counter(p.get("labels", {}).get("alertname", "?") for p in pages).most_common())


def wait_until(condition, timeout: float, every: float = 2.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(every)
    return False


def job_now(apis: StackClient, step: Step) -> str | None:
    """The job holding the step's GPU now: jobs come and go (45 to 105 minutes), so the one planned at the
    start of an hour-long run has often ended by the time its step runs (a JobHung page then names another)."""
    if step.fault in WHOLE_NODE:
        return None
    try:
        fleet = apis.chaos("GET", "/chaos")
    except Exception:  # noqa: BLE001 - keep the planned one
        return step.job
    return next((job["job_id"] for job in fleet.get("jobs", []) for g in job["gpus"]
                 if (g["node"], g["gpu"]) == (step.node, step.gpu)), None)


def run_step(apis: StackClient, run_dir: Path, step: Step, window_s: float) -> dict:
    step = replace(step, job=job_now(apis, step))
    started = time.time()
    if step.fault == REBOOT:
        outcome = _planned_reboot(apis, run_dir, step.node, window_s)
    elif step.drill:
        outcome = _drill(run_dir, step)
    else:
        outcome = _inject_and_observe(apis, run_dir, step, started, window_s)
    ended = time.time()
    return {**vars(step), **outcome, **measure(apis, started, ended, step), "seconds": round(ended - started, 1)}


def _drill(run_dir: Path, step: Step) -> dict:
    done = vigil("drill", step.fault, "--node", step.node, "--gpu", str(step.gpu), "--timeout", "180", "--json",
                 "--run-dir", str(run_dir))
    report = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {"ok": False, "error": done.stderr}
    return {"ok": bool(report.get("ok")), "error": report.get("error")}


def _settle(apis: StackClient, since: float, timeout: float = 240) -> bool:
    """Every incident opened since `since` resolved (its alerts gone and the resolve wait over)."""
    return wait_until(lambda: all(i["status"] == "resolved" for i in incidents_opened(apis, since, time.time() + 1)),
                      timeout, every=5)


def _ack_paged(apis: StackClient, since: float) -> None:
    """Acknowledge, as the person paged, every incident opened since `since` whose first page went out:
    what the drill does, and what a DRI does before the policy's next tier is due."""
    paged = {}
    for page in firing_pages(apis, since, time.time() + 1):
        paged.setdefault(page.get("incident_id"), page.get("recipient") or "alert-quality bench")
    for incident in incidents_opened(apis, since, time.time() + 1):
        if incident["state"] == "triggered" and incident.get("part_of") is None and incident["id"] in paged:
            try:
                apis.incident_action(incident["id"], "ack", by=paged[incident["id"]])
            except StackRequestError:  # acknowledged or resolved meanwhile
                pass


def _inject_and_observe(apis: StackClient, run_dir: Path, step: Step, started: float, window_s: float) -> dict:
    """A fault no rule drills: what does it page within `window_s`? Then acknowledged, cleared, settled."""
    injected = vigil("chaos", "inject", step.fault, "--node", step.node, "--gpu", str(step.gpu),
                     "--run-dir", str(run_dir))
    if injected.returncode != 0:
        return {"ok": False, "error": injected.stderr.strip()[-200:]}
    deadline = time.time() + window_s  # the observation window is the measurement: what pages within it
    while time.time() < deadline:
        _ack_paged(apis, started)
        time.sleep(2)
    vigil("chaos", "clear", "--node", step.node, "--run-dir", str(run_dir))
    settled = _settle(apis, started)
    return {"ok": settled, "error": None if settled else "incidents still open 4 min after the fault was cleared"}


def _planned_reboot(apis: StackClient, run_dir: Path, node: str, window_s: float) -> dict:
    """A node rebooted inside a maintenance window on it: nothing should page, then or after."""
    window = apis.add_maintenance({"match": {"node": node}, "for": "15m", "reason": "planned reboot",
                                   "by": "alert-quality bench"})
    started = time.time()
    vigil("chaos", "inject", "node-down", "--node", node, "--run-dir", str(run_dir))
    time.sleep(window_s)  # down long enough for its alerts to fire
    vigil("chaos", "clear", "--node", node, "--run-dir", str(run_dir))
    settled = _settle(apis, started)
    apis.end_maintenance(window["id"])
    time.sleep(30)  # a page held by the window would be sent now
    return {"ok": settled, "error": None if settled else "incidents still open 4 min after the node came back"}


def concerns(labels: dict, step: Step) -> bool:
    """Whether an alert with `labels` is about the step's fault: its node (for a GPU fault, its GPU or the
    job holding it), or no node at all (a fleet-wide SLO burn)."""
    if step.job is not None and labels.get("job_id") == step.job:
        return True
    if "node" not in labels:
        return "job_id" not in labels
    if labels["node"] != step.node:
        return False
    return step.fault in WHOLE_NODE or labels.get("gpu") in (None, str(step.gpu))


def measure(apis: StackClient, started: float, ended: float, step: Step) -> dict:
    """Pages (one per incident, person and tier however many channels carried it), first-tier ones,
    incidents opened that joined no other, tickets, and what the full-form pages carried; pages and
    incidents about other GPUs or nodes (after-effects of an earlier fault, or noise) apart."""
    everything = firing_pages(apis, started, ended)
    deliveries = [p for p in everything if concerns(p.get("labels", {}), step)]
    elsewhere = {(p.get("incident_id"), p.get("recipient"), p.get("tier")): p
                 for p in everything if not concerns(p.get("labels", {}), step)}
    pages = {(p.get("incident_id"), p.get("recipient"), p.get("tier")): p for p in deliveries}
    first_tier = [p for p in pages.values() if not p.get("tier")]
    opened_anywhere = [i for i in incidents_opened(apis, started, ended) if i.get("part_of") is None]
    opened = [i for i in opened_anywhere if concerns(i.get("labels", {}), step)]
    tickets = [i for i in opened if i["labels"].get("notify") == "ticket"]
    full = [p for p in deliveries if p.get("channel") not in SHORT_FORM]
    body = lambda p: p.get("body", "")  # noqa: E731
    job_bound = [p for p in full if "job_id" in p.get("labels", {}) or step.job]
    return {
        "pages": len(pages), "first_tier_pages": len(first_tier), "escalated_pages": len(pages) - len(first_tier),
        "deliveries": len(deliveries), "by_rule": by_rule(list(pages.values())),
        "people": dict(Counter(p.get("recipient", "?") for p in pages.values())),
        "first_page_s": round(min(parse_time(p["time"]) for p in deliveries) - started, 1) if deliveries else None,
        "incidents": len(opened), "incident_rules": sorted(i["labels"].get("alertname", "?") for i in opened),
        "tickets": len(tickets),
        "pages_elsewhere": len(elsewhere), "elsewhere_by_rule": by_rule(list(elsewhere.values())),
        "incidents_elsewhere": sorted(i["labels"].get("alertname", "?") for i in opened_anywhere if i not in opened),
        "full_form": len(full),
        "with_action": sum("\naction: " in body(p) for p in full),
        "with_what_to_do": sum("\naction: " in body(p) or "\nabout: " in body(p) for p in full),
        "with_runbook": sum("\nrunbook: " in body(p) for p in full),
        "with_dashboard": sum("\ndashboard: " in body(p) for p in full),
        "with_job": sum("\njob: " in body(p) for p in job_bound), "job_bound": len(job_bound),
        "sample_page": body(full[0]) if full else None,
    }


class SimulatorFaults:
    """The faults the simulator makes on its own, watched every few seconds from its chaos API: jobs it
    hangs part-way (12 % of its jobs, `exporters/sim/jobs.py`), which page as `JobHung` with no chaos
    fault injected. Such a page in a quiet stretch is a fault's, not noise."""

    def __init__(self, apis: StackClient, every_s: float = 5.0):
        self.hung: dict[str, float] = {}  # job id -> when first seen hung on its own
        self._apis, self._every_s = apis, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> "SimulatorFaults":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _watch(self) -> None:
        while not self._stop.wait(self._every_s):
            try:
                fleet = self._apis.chaos("GET", "/chaos")
            except Exception:  # noqa: BLE001 - a missed look is retried on the next one
                continue
            injected = {f.get("job_id") for f in fleet.get("faults", []) if f.get("fault") == "job-hang"}
            for job in fleet.get("jobs", []):
                if job["job_id"] not in injected and any(g["activity"] == "hung" for g in job["gpus"]):
                    self.hung.setdefault(job["job_id"], time.time())
            try:  # its page is answered as a DRI would, or its escalation would page every tier all run
                for incident in self._apis.incidents():
                    if incident["state"] == "triggered" and incident["labels"].get("job_id") in self.hung:
                        self._apis.incident_action(incident["id"], "ack", by="alert-quality bench")
            except Exception:  # noqa: BLE001 - acknowledged meanwhile, or the stack is going down
                pass

    def explains(self, page: dict) -> bool:
        return page.get("labels", {}).get("job_id") in self.hung
