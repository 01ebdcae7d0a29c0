"""End to end: `vigil drill job-hang` in a `vigil up` stack running simulated jobs follows a hung job to
its page (JobHung, one incident for the job, not one per GPU or node), acknowledges it and sees it
resolve once the job computes again."""

from __future__ import annotations

import json
import re
import time

import pytest
import requests

from stack_support import RunningStack, start_stack, wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    # two job slots (4 x 4 GPUs hold both: on 3 x 4 only the first fits, and between its jobs none runs):
    # they never hang or fail on their own and are half a period apart (exporters/sim/jobs.py), so a job
    # with minutes left runs at every moment, and only the drill hangs one
    running = start_stack(tmp_path_factory.mktemp("job-drill-stack"), nodes=4, gpus=4, jobs=2, node_health=False)
    yield running
    assert running.cli("down").returncode == 0


def chaos_state(stack: RunningStack) -> dict:
    return requests.get(f"{stack.state()['urls']['gpu_control']}/chaos", timeout=5).json()


def query(stack: RunningStack, promql: str) -> list[dict]:
    r = requests.get(f"{stack.url('prometheus')}/api/v1/query", params={"query": promql}, timeout=5)
    return r.json()["data"]["result"]


def computing_job(stack: RunningStack) -> dict | None:
    """A running job with a computing GPU and minutes left, that Prometheus has seen computing (JobHung
    pages only a job that computed within the last hour)."""
    for job in chaos_state(stack)["jobs"]:
        running = [g for g in job["gpus"] if g["activity"] == "running"]
        if running and job["end"] > time.time() + 300 and query(
                stack, f'job:vigil_gpu_utilization:max{{job_id="{job["job_id"]}"}} > 0.1'):
            return {**job, "gpu": running[0]}
    return None


def test_chaos_list_shows_the_jobs_and_their_gpus(stack: RunningStack):
    jobs = wait_for(lambda: chaos_state(stack)["jobs"], "simulated job running", timeout=90)
    listing = stack.cli("chaos", "list")
    assert listing.returncode == 0, listing.stderr
    for job in jobs:
        line = next(line for line in listing.stdout.splitlines() if line.startswith(f"job {job['job_id']} "))
        assert f"{job['tenant']}/{job['user']}" in line
        assert all(f"{g['node']}/{g['gpu']}" in line for g in job["gpus"])


def test_job_hang_drill_pages_the_hung_job_once_and_resolves(stack: RunningStack):
    job = wait_for(lambda: computing_job(stack), "job seen computing by Prometheus", timeout=150)
    node, gpu = job["gpu"]["node"], job["gpu"]["gpu"]
    result = stack.cli("drill", "job-hang", "--node", node, "--gpu", str(gpu), "--timeout", "90", "--json",
                       timeout=900)
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["ok"], report
    assert report["job_id"] == job["job_id"]
    names = [s["name"] for s in report["stages"]]
    assert names[0] == "injected → seen in a scrape" and names[-2:] == ["resolved page delivered", "one incident"]
    assert names[3:5] == ["page delivered", "acknowledged"] and len(names) == 10
    assert report["stages"][0]["detail"] == f"job {job['job_id']}"

    incident = int(re.match(r"incident #(\d+) ", report["stages"][3]["detail"]).group(1))
    inbox = json.loads(stack.cli("inbox", "--json").stdout)["pages"]
    # (a job whose GPUs the simulator keeps idle also raises GpuUtilizationBelowJobPeers warnings: not the drill's)
    about_job = [p for p in inbox if p["labels"].get("job_id") == job["job_id"] and p["labels"]["alertname"] == "JobHung"]
    firing = [p for p in about_job if p["status"] == "firing"]
    # one page: the job's incident to the tier-1 DRI, by phone (critical), naming the job and its owner
    assert [(p["incident_id"], p["labels"]["severity"], p["channel"]) for p in firing] == [(incident, "critical", "phone")]
    # the owner as the job's source knows it: Slurm names the user; a Kubernetes pod only its namespace (the
    # tenant), so its page has no user label (which job is computing when the test starts decides which)
    user = job["user"] if job["scheduler"] == "slurm" else None
    assert (firing[0]["labels"]["tenant"], firing[0]["labels"].get("user")) == (job["tenant"], user)
    # a phone page is the short form (no title): the job is named in its one line
    assert f"job {job['job_id']}" in firing[0]["body"] and len(firing[0]["body"]) <= 160
    assert "node" not in firing[0]["labels"] and "gpu" not in firing[0]["labels"]
    assert any(p["status"] == "resolved" and p["incident_id"] == incident for p in about_job)
    # the drill cleared its fault: the job computes again
    state = chaos_state(stack)
    assert state["faults"] == []
    assert all(g["activity"] != "hung" for j in state["jobs"] for g in j["gpus"])


def test_a_drill_says_when_a_maintenance_window_would_hold_its_page(stack: RunningStack):
    added = stack.cli("maintenance", "add", "--match", "node=node-2", "--for", "30m", "--reason", "firmware")
    assert added.returncode == 0, added.stderr
    window = next(w for w in json.loads(stack.cli("maintenance", "list", "--json").stdout)["windows"]
                  if w["match"] == {"node": "node-2"} and w["active"])
    try:
        result = stack.cli("drill", "xid79", "--node", "node-2", "--gpu", "1", "--timeout", "30")
        assert result.returncode == 1 and "Traceback" not in result.stderr
        said = result.stderr.strip()
        assert said.startswith(f"Error: drill failed: maintenance window {window['id']} (firmware) holds the pages "
                               "of alerts matching node=node-2 until "), said
        assert f"until {window['ends_at'][:10]} {window['ends_at'][11:19]} UTC:" in said  # as people read a time
        assert f"vigil maintenance end {window['id']}" in said and "nothing was injected" in said
        assert chaos_state(stack)["faults"] == []
        # a window on another node does not stand in the way (checked without running the drill)
        other = stack.cli("drill", "xid79", "--node", "node-3", "--gpu", "7", "--timeout", "30")
        assert other.returncode != 0 and "maintenance window" not in other.stderr + other.stdout
    finally:
        assert stack.cli("maintenance", "end", str(window["id"])).returncode == 0


def test_a_drill_whose_fault_never_shows_names_the_stage_and_what_the_fault_needs(stack: RunningStack):
    # this stack runs no AIOps service, so no baseline band exists and GpuLoadOutsideBaseline cannot fire
    result = stack.cli("drill", "load-anomaly", "--node", "node-2", "--gpu", "0", "--timeout", "3")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    said = result.stderr.strip()
    assert said.startswith("Error: drill failed: stage 'injected → seen in a scrape' did not happen within 3s"), said
    assert "load-anomaly: load leaves its daily pattern" in said and "the fleet's last node" in said
    assert chaos_state(stack)["faults"] == []  # the drill cleared what it injected


def test_a_drill_leaves_a_fault_injected_by_hand_alone(stack: RunningStack):
    control = stack.state()["urls"]["gpu_control"]
    assert requests.post(f"{control}/chaos/inject", json={"fault": "overheat", "node": "node-3", "gpu": 1}, timeout=5).ok
    try:
        result = stack.cli("drill", "xid79", "--node", "node-3", "--gpu", "2", "--timeout", "30")
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert result.stderr.startswith("Error: drill failed: node-3 already has a fault (overheat on GPU 1)"), result.stderr
        assert "vigil chaos clear --node node-3" in result.stderr
        assert [(f["fault"], f["node"], f["gpu"]) for f in chaos_state(stack)["faults"]] == [("overheat", "node-3", 1)]
    finally:
        requests.post(f"{control}/chaos/clear", json={"node": "node-3"}, timeout=5).raise_for_status()


def test_the_postmortem_of_a_gpu_lost_under_a_job_says_what_it_cost_and_what_to_do(stack: RunningStack, tmp_path):
    """XID 79 drilled on a GPU of a computing job, then `vigil postmortem` as a lead reads it: the job, its
    owner, its GPUs and the GPU-hours lost; the XID's meaning and repair and the GPU's history; the story
    without page plumbing; the suggested action items."""
    job = wait_for(lambda: computing_job(stack), "job seen computing by Prometheus", timeout=150)
    node, gpu = job["gpu"]["node"], job["gpu"]["gpu"]
    result = stack.cli("drill", "xid79", "--node", node, "--gpu", str(gpu), "--timeout", "90", "--json", timeout=600)
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["ok"], report
    incident = int(re.match(r"incident #(\d+) ", report["stages"][3]["detail"]).group(1))
    out = tmp_path / "pm.md"
    written = stack.cli("postmortem", str(incident), "--output", str(out))
    assert written.returncode == 0, written.stderr
    text = out.read_text()
    owner = "/".join(p for p in (job["tenant"], job["user"] if job["scheduler"] == "slurm" else None) if p)
    row = re.search(rf"^\| {re.escape(job['job_id'])} \| (\S+) \| (\d+) \| (\S+) \| ([\d.]+) \|$", text, re.M)
    assert row, text.split("## Impact")[1].split("## Root causes")[0]
    # the job keeps the lost GPU for its life: all its GPUs count
    assert row.group(1) == owner and int(row.group(2)) == len(job["gpus"]) and float(row.group(4)) > 0
    assert f"- GPU-hours lost: **{row.group(4)}**" in text
    summary = text.split("## Summary")[1].split("## Impact")[0]
    assert f"GpuFallenOffBus on GPU {gpu} of {node}, stopping job {job['job_id']} of {owner}" in summary
    factors = text.split("## Contributing factors")[1].split("## Trigger")[0]
    assert "- XID 79 (" in factors and "reboot" in factors
    assert f"- GPU {gpu} of {node} in the 30 days before: " in factors
    story = text.split("## Timeline (UTC)")[1].split("## Metrics")[0]
    assert "page_queued" not in story and "| paged: tier 1" in story and "acknowledged" in story
    # one fault, one postmortem: the job owner's XID ticket joined the GPU's incident, listed under it
    fault = text.split("## Alerts of this fault")[1].split("## Related incidents")[0]
    related = text.split("## Related incidents")[1].split("## Lessons learned")[0]
    assert "JobGpuXid" in fault and "joined this incident as a symptom" in fault and "JobGpuXid" not in related
    actions = text.split("## Action items")[1].split("## Appendix")[0]
    assert f"Repair {node} GPU {gpu}: drain the node and reboot it" in actions
    assert f"| Resubmit job {job['job_id']} from its last checkpoint, away from the failed GPU | mitigate | {owner} |" in actions
