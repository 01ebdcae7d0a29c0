"""Simulated training jobs: the schedule on a fake clock, attribution through the real job sources, GPU
load that follows each job's state, and a fleet server that exports and drops `vigil_gpu_job`."""

from __future__ import annotations

import pytest
import requests
from sim_clock import SIM_NOW, FakeClock
from exporters_nvml_support import free_ports, wait_until
from prometheus_client.parser import text_string_to_metric_families

from vigil.exporters.fleet_server import FleetServer
from vigil.exporters.nvml_collector import NvmlCollector
from vigil.exporters.sim.fleet import SimulatedFleet
from vigil.exporters.sim.identity import device_uuid
from vigil.exporters.sim.job_sources import AttributedNode
from vigil.exporters.sim.jobs import JobSchedule
from vigil.exporters.sim.load import gpu_load

T0 = SIM_NOW
NODES = [f"node-{i}" for i in range(1, 5)]


def series(text: str, name: str) -> list[dict[str, str]]:
    return [s.labels for fam in text_string_to_metric_families(text) for s in fam.samples if s.name == name]


def first_time(schedule: JobSchedule, found, start: float = T0, step: float = 60.0, days: float = 3.0):
    """The first (t, job) from `start` on (every `step`) where `found(job, t)` holds for a running job."""
    t = start
    while t < start + days * 86_400:
        for job in schedule.running(t):
            if found(job, t):
                return t, job
        t += step
    raise AssertionError("no such moment in the simulated days")


def test_slots_are_placed_from_node_1_on_disjoint_gpus_and_leave_the_last_node_alone() -> None:
    schedule = JobSchedule(NODES, 8, jobs=6)
    placed = [g for slot in schedule.slots for g in slot.gpus]
    assert len(placed) == len(set(placed)) and len(schedule.slots) >= 4
    assert "node-4" not in schedule.managed_nodes and "node-1" in schedule.managed_nodes
    assert schedule.slots[0].gpus[0] == ("node-1", 0)  # where Grafana's node and GPU variables open
    assert {slot.scheduler for slot in schedule.slots} == {"slurm", "kubernetes"}
    assert any(len({n for n, _ in slot.gpus}) > 1 for slot in schedule.slots)  # a multi-node Slurm job
    assert all(len({n for n, _ in s.gpus}) == 1 for s in schedule.slots if s.scheduler == "kubernetes")
    assert JobSchedule(NODES, 8, jobs=0).slots == [] and not JobSchedule(NODES, 8, jobs=0).managed_nodes


def test_jobs_start_finish_fail_and_hang_over_time_deterministically() -> None:
    schedule = JobSchedule(NODES, 8, jobs=6)
    seen: dict[str, object] = {}
    for minute in range(3 * 24 * 60):
        t = T0 + 60 * minute
        running = schedule.running(t)
        assert running, f"no job runs at {t}"  # slots 0 and 1 alternate their gaps
        for job in running:
            assert job.start <= t < job.end
            seen[job.job_id] = job
    outcomes = {job.outcome for job in seen.values()}
    assert outcomes == {"completed", "failed", "hung"}
    assert any(job.idle_gpus for job in seen.values())
    assert len(seen) > 100  # jobs come and go
    again = JobSchedule(NODES, 8, jobs=6)
    assert [j.job_id for j in again.running(T0 + 7777)] == [j.job_id for j in schedule.running(T0 + 7777)]
    other = JobSchedule(NODES, 8, jobs=6, seed=1)
    assert [(j.job_id, j.start) for j in other.running(T0)] != [(j.job_id, j.start) for j in schedule.running(T0)]


def test_the_demo_fleet_hangs_no_job_on_its_own_unless_told_to() -> None:
    from vigil.stack.settings import StackSettings

    def outcomes(schedule: JobSchedule) -> dict[str, str]:
        return {job.job_id: job.outcome for minute in range(0, 3 * 24 * 60, 5)
                for job in schedule.running(T0 + 60 * minute)}

    demo = StackSettings()
    calm = outcomes(JobSchedule(NODES, 8, jobs=6, hang_rate=demo.sim_job_hangs))
    assert demo.sim_job_hangs == 0 and "hung" not in calm.values() and "failed" in calm.values()
    real = outcomes(JobSchedule(NODES, 8, jobs=6, hang_rate=0.12))
    assert "hung" in real.values()
    # the same jobs either way: only the hung ones run to completion instead
    assert {job_id for job_id, o in real.items() if o != "hung"} <= set(calm)
    assert all(calm[job_id] == "completed" for job_id, o in real.items() if o == "hung")
    with pytest.raises(ValueError, match="share of jobs that hang"):
        JobSchedule(NODES, 8, jobs=6, hang_rate=0.9)


def attributed(fleet: SimulatedFleet, node: str) -> AttributedNode:
    page = AttributedNode(NvmlCollector(fleet.nvml[node], node, watch_xids=False), fleet.jobs, fleet.clock)
    page.collector.start(loop=False)
    page.refresh()
    return page


def test_attribution_labels_come_through_the_real_slurm_and_kubernetes_sources() -> None:
    clock = FakeClock(T0)
    fleet = SimulatedFleet(4, 8, jobs=6, clock=clock)
    for scheduler in ("slurm", "kubernetes"):
        t, job = first_time(fleet.jobs, lambda j, _t, s=scheduler: j.scheduler == s)
        clock.t = t
        node = job.gpus[0][0]
        page = attributed(fleet, node)
        text = page.exposition().decode()
        held = {(s["gpu"], s["uuid"]) for s in series(text, "vigil_gpu_job") if s["job_id"] == job.job_id}
        assert held == {(str(g), device_uuid(n, g)) for n, g in job.gpus if n == node}
        info = [s for s in series(text, "vigil_job_info") if s["job_id"] == job.job_id]
        user = job.user if scheduler == "slurm" else ""  # pod-resources has no user
        assert info == [{"job_id": job.job_id, "user": user, "tenant": job.tenant, "source": scheduler}]
        assert 'vigil_gpu_utilization_ratio{' in text  # the NVML page is served too
        # the job ends: after the next refresh its GPUs are no longer attributed to it
        clock.t = job.end + 1
        page.refresh()
        after = page.exposition().decode()
        assert all(s["job_id"] != job.job_id for s in series(after, "vigil_gpu_job"))
        assert all(s["job_id"] != job.job_id for s in series(after, "vigil_job_info"))


def test_a_gpu_lost_under_a_job_stays_in_the_job_until_it_ends() -> None:
    """XID 79 (the GPU fell off the bus) on a job's GPU: NVML can no longer read it nor list its
    processes, yet the job still holds it, so its `vigil_gpu_job` series (last known uuid) stays."""
    clock = FakeClock(T0)
    fleet = SimulatedFleet(4, 8, jobs=6, clock=clock)
    for scheduler in ("slurm", "kubernetes"):
        fleet.clear()
        clock.t, job = first_time(fleet.jobs, lambda j, t, s=scheduler: j.scheduler == s and t + 600 < j.end
                                  and len([g for n, g in j.gpus if n == j.gpus[0][0]]) > 1)
        node = job.gpus[0][0]
        mine = {(str(g), device_uuid(n, g)) for n, g in job.gpus if n == node}
        page = attributed(fleet, node)
        lost = job.gpus[-1][1] if job.gpus[-1][0] == node else job.gpus[0][1]
        fleet.inject({"fault": "xid79", "node": node, "gpu": lost})
        for _ in range(2):  # the cycle that finds the GPU lost, and the next one
            clock.t += 30
            page.refresh()
            text = page.exposition().decode()
            up = {x.labels["gpu"]: x.value for fam in text_string_to_metric_families(text) for x in fam.samples
                  if x.name == "vigil_gpu_up"}
            assert up[str(lost)] == 0
            assert {(s["gpu"], s["uuid"]) for s in series(text, "vigil_gpu_job")
                    if s["job_id"] == job.job_id} == mine, scheduler
            assert [s for s in series(text, "vigil_gpu_job") if s["gpu"] == str(lost)] == [
                {"node": node, "gpu": str(lost), "uuid": device_uuid(node, lost), "job_id": job.job_id}]
            assert [s["job_id"] for s in series(text, "vigil_job_info")].count(job.job_id) == 1
            assert str(lost) not in {s["gpu"] for s in series(text, "vigil_gpu_processes")}  # unknown, not 0
        # the job ends while its GPU is still lost: the GPU is no longer attributed to it
        clock.t = job.end + 1
        page.refresh()
        after = page.exposition().decode()
        assert all(s["job_id"] != job.job_id for s in series(after, "vigil_gpu_job"))
        assert all(s["job_id"] != job.job_id for s in series(after, "vigil_job_info"))


def gpu_reading(fleet: SimulatedFleet, node: str, gpu: int) -> tuple[float, float, list[int]]:
    nvml = fleet.nvml[node]
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(gpu)
    util = nvml.nvmlDeviceGetUtilizationRates(handle).gpu / 100
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    pids = [p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)]
    return util, memory.used / memory.total, pids


def test_gpu_load_follows_the_state_of_its_job() -> None:
    clock = FakeClock(T0)
    fleet = SimulatedFleet(4, 8, jobs=6, clock=clock)
    jobs = fleet.jobs
    clock.t, hung = first_time(jobs, lambda j, t: j.hang_at is not None and t >= j.hang_at)
    for node, gpu in hung.gpus:
        util, memory, pids = gpu_reading(fleet, node, gpu)
        assert util == 0 and memory > 0.5 and pids == [hung.pid(node, gpu)]  # stuck, data still in memory
    clock.t, idle = first_time(jobs, lambda j, t: bool(j.idle_gpus) and j.hang_at is None)
    for node, gpu in idle.gpus:
        util, memory, pids = gpu_reading(fleet, node, gpu)
        assert pids == [idle.pid(node, gpu)]
        if (node, gpu) in idle.idle_gpus:
            assert util == 0 and memory < 0.05
        else:
            assert util == pytest.approx(gpu_load(node, gpu, int(clock.t)), abs=0.01)
    # a failed job frees its GPUs before its period ends: no process, no load until the next job
    _, failed = first_time(jobs, lambda j, _t: j.outcome == "failed")
    clock.t = failed.end + 1
    node, gpu = failed.gpus[0]
    assert jobs.gpu(node, gpu, clock.t) is None
    assert gpu_reading(fleet, node, gpu) == (0.0, pytest.approx(0.01, abs=0.005), [])
    # the last node has no job slots: its load keeps the plain daily pattern
    plain = fleet.names[-1]
    assert not jobs.manages(plain)
    assert gpu_reading(fleet, plain, 0)[0] == pytest.approx(gpu_load(plain, 0, int(clock.t)), abs=0.01)


def test_fleet_server_exports_a_running_jobs_gpus_and_drops_them_when_it_ends() -> None:
    clock = FakeClock(T0)
    fleet = SimulatedFleet(3, 4, jobs=3, clock=clock)
    clock.t, job = first_time(fleet.jobs, lambda j, _t: j.scheduler == "slurm")
    base = free_ports(2)
    server = FleetServer(fleet, port=base, control_port=base + 1, interval=0.05, single_port=True)
    server.start()
    try:
        node = job.gpus[0][0]
        url = server.node_url(node)

        def job_gpus() -> set[str]:
            text = requests.get(url, timeout=5).text
            return {s["gpu"] for s in series(text, "vigil_gpu_job") if s["job_id"] == job.job_id}

        assert job_gpus() == {str(g) for n, g in job.gpus if n == node}
        clock.t = job.end + 1
        wait_until(lambda: job_gpus() == set(), timeout=10)
    finally:
        server.stop()


def test_backfilled_history_follows_the_same_jobs_as_the_live_fleet() -> None:
    from vigil.stack.history import simulated_series
    from vigil.stack.settings import StackSettings

    settings = StackSettings(sim_nodes=3, sim_gpus=4, sim_jobs=3, backfill_days=1)
    nodes = ["node-1", "node-2", "node-3"]
    fleet = SimulatedFleet(3, 4, jobs=3)
    history = {(labels["node"], int(labels["gpu"])): (ts, values)
               for _, labels, ts, values in simulated_series(settings, nodes, T0)}
    zeros = 0
    for (node, gpu), (timestamps, values) in history.items():
        for t, value in zip(timestamps, values):
            assert value == fleet.jobs.load(node, gpu, t)
            held = fleet.jobs.gpu(node, gpu, t)
            if fleet.jobs.manages(node) and (held is None or held.activity != "running"):
                assert value == 0.0
                zeros += 1
            elif node == "node-3":  # the last node hosts no job
                assert value == gpu_load(node, gpu, t)
    assert zeros > 0  # the day saw GPUs free between jobs, idle or hung


def test_job_hang_fault_stops_every_gpu_of_the_job_until_cleared() -> None:
    clock = FakeClock(T0)
    fleet = SimulatedFleet(3, 4, jobs=3, clock=clock)
    clock.t, job = first_time(fleet.jobs, lambda j, t: len({n for n, _ in j.gpus}) > 1 and j.hang_at is None
                              and not j.idle_gpus and t + 600 < j.end)
    base = free_ports(2)
    server = FleetServer(fleet, port=base, control_port=base + 1, interval=0.05, single_port=True)
    server.start()
    try:
        api = server.control_url
        free = next((n, g) for n in fleet.names for g in range(4) if fleet.jobs.gpu(n, g, clock.t) is None)
        refused = requests.post(f"{api}/chaos/inject", json={"fault": "job-hang", "node": free[0], "gpu": free[1]},
                                timeout=5)
        assert refused.status_code == 400 and "no simulated job holds" in refused.text
        held_there = sorted({g for j in fleet.jobs.on_node(free[0], clock.t) for n, g in j.gpus if n == free[0]})
        hint = f"jobs hold GPUs {', '.join(map(str, held_there))} of {free[0]}" if held_there else "no job runs on"
        assert hint in refused.json()["error"] and "vigil chaos list" in refused.json()["error"]
        node, gpu = job.gpus[0]
        answer = requests.post(f"{api}/chaos/inject", json={"fault": "job-hang", "node": node, "gpu": gpu}, timeout=5)
        assert answer.status_code == 200, answer.text
        assert answer.json()["fault"]["job_id"] == job.job_id  # the drill follows this job's alert
        state = requests.get(f"{api}/chaos", timeout=5).json()
        assert [(f["fault"], f["job_id"]) for f in state["faults"]] == [("job-hang", job.job_id)]
        listed = next(j for j in state["jobs"] if j["job_id"] == job.job_id)
        assert (listed["tenant"], listed["user"], listed["end"]) == (job.tenant, job.user, round(job.end, 3))
        assert [(g["node"], g["gpu"], g["activity"]) for g in listed["gpus"]] == [(n, g, "hung") for n, g in job.gpus]

        def utilization(n: str, g: int) -> float:
            text = requests.get(server.node_url(n), timeout=5).text
            return next(s.value for fam in text_string_to_metric_families(text) for s in fam.samples
                        if s.name == "vigil_gpu_utilization_ratio" and s.labels["gpu"] == str(g))

        # every GPU of the job, on both of its nodes, stops; the job still holds them
        clock.t += 1  # the simulated load is read once per clock second
        wait_until(lambda: all(utilization(n, g) == 0 for n, g in job.gpus), timeout=10)
        assert {s["job_id"] for s in series(requests.get(server.node_url(node), timeout=5).text, "vigil_gpu_job")} \
            >= {job.job_id}
        requests.post(f"{api}/chaos/clear", json={"node": node}, timeout=5).raise_for_status()
        clock.t += 1  # the simulated load is read once per clock second
        wait_until(lambda: all(utilization(n, g) > 0 for n, g in job.gpus), timeout=10)
        listed = next(j for j in requests.get(f"{api}/chaos", timeout=5).json()["jobs"] if j["job_id"] == job.job_id)
        assert {g["activity"] for g in listed["gpus"]} == {"running"}
    finally:
        server.stop()
