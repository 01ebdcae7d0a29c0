"""On-call health analytics from a seeded week of incidents: written through the real store (the
webhook's ingest, the escalation engine pass by pass, people's actions, the delivery worker sending
pages to the inbox), each step at a known time on a fixed clock; the figures are computed by hand
below. The same figures are then read as a user would: `vigil report oncall --json` against a served
notifier, and its `/metrics`.

The seeded week (UTC times; alice works in Tokyo, bob in Berlin (team gpu's zone), carol in New York
with team net's hours 08:00-16:00; others work Mon-Fri 09:00-18:00):

  #1 GpuLost    gpu P1  Mon 23 02:00  page alice (11:00 Tokyo: working); alice acks +120 s, notes +300 s,
                                      resolves +1800 s; bob marks it noisy, alice marks it actionable
  #2 GpuLost    gpu P1  Mon 23 22:00  page alice (Tue 07:00 Tokyo: off); +300 s tier 2 pages bob (23:05
                                      Berlin: off); bob acks +420 s; Alertmanager resolves +3000 s
  #3 NodeDown   net P3  Tue 24 20:30  page carol (15:30 New York: working); +1800 s the ack target (30 m)
                                      is breached: net's policy goes round again, carol is paged again
                                      (16:00 New York: off); carol acks +1900 s and resolves +2400 s,
                                      then marks it not actionable
  #4 GpuThermal gpu P3  Sat 28 03:00  page alice (Saturday: off); Alertmanager resolves +240 s
  #5 GpuThermal gpu P3  Sat 28 04:00  page alice (off); alice escalates now +100 s, bob paged (off);
                                      still firing, nobody acknowledged
  #6 GpuLost    gpu P1  Mon 30 10:00  after the report's period: left out
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from vigil.notifier.ingest.group_commit import ingest_alone
from vigil.cli import main
from vigil.cli.report import describe
from vigil.notifier.analytics.health import report, working_hours_of
from vigil.notifier.analytics.queries import incidents_opened
from vigil.notifier.delivery.pipeline import delivery_stages
from vigil.notifier.engine.escalation import EngineIntake
from vigil.notifier.delivery.worker import DeliveryWorker
from vigil.notifier.engine import actions
from vigil.notifier.engine.escalation_loop import EscalationEngine
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.core.models import WebhookPayload
from vigil.notifier.store import Store
from vigil.oncall.loader import parse_oncall
from vigil.oncall.notify_rules import in_working_hours
from vigil.oncall.plan import person_hours, person_zone
from test_notifier_support import NotifierServer, alert, free_port, make_settings, payload, run_dir_for

ONCALL = """
timezone: UTC
priorities:
  P1: {ack_within: 10m, resolve_within: 1h}
  P3: {ack_within: 30m}
people:
  alice: {timezone: Asia/Tokyo, contacts: {phone: {inbox: true, kind: phone}}}
  bob:   {contacts: {phone: {inbox: true, kind: phone}}}
  carol: {contacts: {mail: {inbox: true, kind: email}}}
  dave:  {contacts: {phone: {inbox: true, kind: phone}, mail: {inbox: true, kind: email}}}  # never paged
teams:
  gpu: {policy: gpu, members: [alice, bob], timezone: Europe/Berlin}
  net: {policy: net, members: [carol, dave], timezone: America/New_York, working_hours: {start: "08:00", end: "16:00"}}
policies:
  gpu:
    tiers:
      - {name: DRI, notify: [{person: alice}], escalate_after: 5m}
      - {name: senior, notify: [{person: bob}], escalate_after: 10m}
  net:
    tiers:
      - {name: DRI, notify: [{person: carol}], escalate_after: 15m}
    repeat: 2  # three rounds: carol is paged again until she acknowledges
routes:
  - {match: {team: net}, policy: net}
default_policy: gpu
"""


def utc(*args) -> float:
    return datetime(*args, tzinfo=timezone.utc).timestamp()


T1, T2, T3 = utc(2026, 11, 23, 2), utc(2026, 11, 23, 22), utc(2026, 11, 24, 20, 30)
T4, T5, T6 = utc(2026, 11, 28, 3), utc(2026, 11, 28, 4), utc(2026, 11, 30, 10)
START, END = utc(2026, 11, 23), utc(2026, 11, 30)


class Seeder:
    """The notifier's parts on one store, driven by a clock the test sets."""

    def __init__(self, tmp_path, db_url: str | None = None):
        self.settings = make_settings(tmp_path, **({"db_url": db_url} if db_url else {}))
        self.store = Store(self.settings.db_url)
        self.oncall = parse_oncall(ONCALL)
        self.now = 0.0
        metrics = NotifierMetrics()
        clock = lambda: self.now  # noqa: E731
        self.route = EngineIntake(self.oncall, None, metrics)
        self.engine = EscalationEngine(self.store, self.oncall, clock, metrics)
        self.worker = DeliveryWorker(self.store.outbox, delivery_stages(self.store, self.oncall, self.settings,
                                                                        metrics, clock), clock, 0.05)

    def at(self, moment: float) -> "Seeder":
        """Move the clock to `moment`, run the engine's pass and send the pages due."""
        self.now = moment
        self.engine.run_once()
        self.worker.run_once()
        return self

    def send(self, moment: float) -> None:
        """Send the pages due at `moment` (the resolved pages of a resolve by hand)."""
        self.now = moment
        self.worker.run_once()

    def fire(self, moment: float, name: str, group: str, status: str = "firing", **labels) -> int:
        self.now = moment
        starts = datetime.fromtimestamp(moment, timezone.utc).isoformat().replace("+00:00", "Z")
        body = payload(alert(group, status=status, starts=starts, alertname=name, **labels), group_key=group)
        incident = ingest_alone(self.store.notifications, WebhookPayload.model_validate(body), moment, self.route).incident_id
        self.worker.run_once()
        return incident

    def close(self):
        self.worker.stop()
        self.store.close()


def seed(tmp_path, db_url: str | None = None) -> Seeder:
    s = Seeder(tmp_path, db_url)
    store = s.store
    # 1
    one = s.fire(T1, "GpuLost", "g1", priority="P1")
    actions.acknowledge(store, one, "alice", T1 + 120)
    actions.add_note(store, one, "alice", "reseated the GPU", T1 + 300)
    actions.resolve(store, one, "alice", T1 + 1800)
    actions.mark(store, one, "bob", "noisy", T1 + 1900)
    actions.mark(store, one, "alice", "actionable", T1 + 2000, "it was a real fault")  # withdraws bob's mark
    s.send(T1 + 1800)
    # 2
    two = s.fire(T2, "GpuLost", "g2", priority="P1", node="node-2")
    s.at(T2 + 300)
    actions.acknowledge(store, two, "bob", T2 + 420)
    s.fire(T2 + 3000, "GpuLost", "g2", status="resolved", priority="P1", node="node-2")
    # 3
    three = s.fire(T3, "NodeDown", "g3", priority="P3", team="net")
    s.at(T3 + 1800)
    actions.acknowledge(store, three, "carol", T3 + 1900)
    actions.resolve(store, three, "carol", T3 + 2400)
    actions.mark(store, three, "carol", "not_actionable", T3 + 2500, "the switch was being replaced")
    s.send(T3 + 2400)
    # 4 and 5: one alert group, two incidents
    s.fire(T4, "GpuThermal", "g4", priority="P3")
    s.fire(T4 + 240, "GpuThermal", "g4", status="resolved", priority="P3")
    five = s.fire(T5, "GpuThermal", "g4", priority="P3")
    actions.escalate_now(store, five, "alice", T5 + 100, s.oncall)
    s.at(T5 + 100)
    # 6, after the period
    s.fire(T6, "GpuLost", "g6", priority="P1", node="node-6")
    assert (one, two, three, five) == (1, 2, 3, 5)
    return s


@pytest.fixture
def seeded(tmp_path, db_url):
    """The seeded week, on SQLite and on PostgreSQL."""
    s = seed(tmp_path, db_url)
    yield s
    s.close()


def by(rows: list[dict], key: str) -> dict[str, dict]:
    return {row[key]: row for row in rows}


def test_figures_match_the_hand_computation(seeded):
    found = report(incidents_opened(seeded.store.engine, START, END), working_hours_of(seeded.oncall), START, END)
    assert (found["from"], found["to"]) == ("2026-11-23T00:00:00.000Z", "2026-11-30T00:00:00.000Z")
    overall = found["overall"]
    # 5 incidents (#6 is after the period), each paged someone
    assert (overall["incidents"], overall["paged_incidents"]) == (5, 5)
    # acknowledged by a person: #1 alice 120 s, #2 bob 420 s, #3 carol 1900 s -> MTTA 2440 / 3
    assert overall["acknowledged"] == 3 and overall["mtta_seconds"] == pytest.approx(2440 / 3)
    # resolved: #1 1800 s, #2 3000 s, #3 2400 s, #4 240 s -> MTTR 7440 / 4 = 1860 s
    assert overall["resolved"] == 4 and overall["mttr_seconds"] == pytest.approx(1860)
    # escalated: #2 (tier 2 paged after 5 m), #5 (escalate now) -> 2 / 5
    assert (overall["escalated"], overall["escalation_rate"]) == (2, pytest.approx(0.4))
    # pages: alice #1 #2 #4 #5, bob #2 #5, carol #3 twice = 8; off hours: alice #2 #4 #5, bob #2 #5, carol's
    # second (16:00 New York, the end of net's hours) = 6
    assert (overall["pages"], overall["pages_outside_hours"]) == (8, 6)
    # ack target: met #1 #2 (acked in time), #4 (resolved in time); breached #3; pending #5 -> 3 / 4
    assert overall["sla"]["ack"] == dict(met=3, breached=1, pending=1, compliance=pytest.approx(0.75))
    # resolve target only for P1: #1 (1800 s) and #2 (3000 s) within 1 h
    assert overall["sla"]["resolve"] == dict(met=2, breached=0, pending=0, compliance=1.0)
    # acknowledged 3 of 5 paged; acted on: #1 (note, resolve), #3 (resolve); #2 was only acknowledged,
    # #4 resolved by Alertmanager, #5 escalated but never acknowledged
    assert overall["acknowledged_share"] == pytest.approx(0.6)
    assert (overall["acted_on"], overall["acted_on_share"]) == (2, pytest.approx(0.4))

    teams = by(found["teams"], "team")
    gpu, net = teams["gpu"], teams["net"]
    # gpu: #1 #2 #4 #5: MTTA (120 + 420) / 2, MTTR (1800 + 3000 + 240) / 3, escalated 2 / 4, acted on 1 / 4
    assert (gpu["incidents"], gpu["mtta_seconds"], gpu["mttr_seconds"]) == (4, 270, 1680)
    assert (gpu["escalation_rate"], gpu["acknowledged_share"], gpu["acted_on_share"]) == (0.5, 0.5, 0.25)
    assert (gpu["pages"], gpu["pages_outside_hours"], gpu["sla"]["ack"]["compliance"]) == (6, 5, 1.0)
    # net: #3 alone: breached its ack target, acknowledged and resolved by carol
    assert (net["incidents"], net["mtta_seconds"], net["mttr_seconds"], net["escalation_rate"]) == (1, 1900, 2400, 0)
    assert (net["sla"]["ack"]["compliance"], net["sla"]["resolve"]["compliance"], net["acted_on_share"]) == (0, None, 1)

    priorities = by(found["priorities"], "priority")
    p1, p3 = priorities["P1"], priorities["P3"]
    # P1: #1 #2; P3: #3 #4 #5 (MTTR (2400 + 240) / 2; ack met #4, breached #3, pending #5)
    assert (p1["mtta_seconds"], p1["mttr_seconds"], p1["escalation_rate"], p1["acted_on_share"]) == (270, 2400, 0.5, 0.5)
    assert (p3["mtta_seconds"], p3["mttr_seconds"], p3["pages"], p3["pages_outside_hours"]) == (1900, 1320, 5, 4)
    assert p3["sla"]["ack"]["compliance"] == 0.5 and p3["escalation_rate"] == pytest.approx(1 / 3)

    people = found["people"]
    assert [p["person"] for p in people] == ["alice", "bob", "carol"]  # by pages, then name
    alice, bob, carol = people
    assert alice == dict(person="alice", pages=4, pages_outside_hours=3, pages_by_channel={"phone": 4}, acknowledged=1,
                         mtta_seconds=120, notes=1, resolved=1, escalated=1)
    assert (bob["pages"], bob["pages_outside_hours"], bob["acknowledged"], bob["mtta_seconds"]) == (2, 2, 1, 420)
    assert (carol["pages_by_channel"], carol["pages_outside_hours"], carol["resolved"]) == ({"email": 2}, 1, 1)

    # GpuLost #1 #2: 3 pages, both acknowledged, #1 acted on, its noisy mark withdrawn; GpuThermal #4 #5:
    # 3 pages, none acknowledged, #4 resolved by Alertmanager first; NodeDown #3: 2 pages, marked not actionable
    noise = dict(marked_noisy=0, auto_resolved_before_ack=0)
    assert found["noisiest_alerts"] == [
        dict(alertname="GpuLost", incidents=2, pages=3, paged_incidents=2, acknowledged=2, acknowledged_share=1.0,
             acted_on_share=0.5, **noise, noise_score=0.0),
        dict(alertname="GpuThermal", incidents=2, pages=3, paged_incidents=2, acknowledged=0, acknowledged_share=0.0,
             acted_on_share=0.0, **{**noise, "auto_resolved_before_ack": 1}, noise_score=0.5),
        dict(alertname="NodeDown", incidents=1, pages=2, paged_incidents=1, acknowledged=1, acknowledged_share=1.0,
             acted_on_share=1.0, **{**noise, "marked_noisy": 1}, noise_score=1.0)]
    # every rule by its noise score, noisiest first
    assert [(r["alertname"], r["noise_score"]) for r in found["rules"]] == [
        ("NodeDown", 1.0), ("GpuThermal", 0.5), ("GpuLost", 0.0)]


def test_a_team_and_a_period_narrow_the_report(seeded):
    working = working_hours_of(seeded.oncall)
    net = report(incidents_opened(seeded.store.engine, START, END, "net"), working, START, END, "net")
    assert [t["team"] for t in net["teams"]] == ["net"] and net["overall"]["incidents"] == 1
    assert [p["person"] for p in net["people"]] == ["carol"]
    weekend = report(incidents_opened(seeded.store.engine, T4, END), working, T4, END)
    assert weekend["overall"]["incidents"] == 2 and weekend["overall"]["mtta_seconds"] is None


@pytest.fixture
def served(tmp_path):
    """The seeded store served by a real notifier whose clock stands at the period's end (its metrics'
    7-day window is the period), and a run directory pointing at it, as `vigil up` leaves one."""
    seed(tmp_path).close()
    settings = make_settings(tmp_path, port=free_port())
    with NotifierServer(settings, ONCALL, run_worker=False, clock=lambda: END) as server, \
            run_dir_for(server, tmp_path / "run"):
        yield server


def vigil_report(served, *args: str):
    result = CliRunner().invoke(main, ["report", "oncall", *args, "--run-dir", str(served.run_dir)])
    assert "Traceback" not in result.output
    return result


def test_the_cli_json_and_the_metrics_show_the_same_figures(served):
    result = vigil_report(served, "--from", "2026-11-23T00:00Z", "--to", "2026-11-30T00:00Z", "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    teams, priorities = by(shown["teams"], "team"), by(shown["priorities"], "priority")
    assert (shown["overall"]["incidents"], shown["overall"]["mttr_seconds"], shown["overall"]["pages"]) == (5, 1860, 8)
    assert (teams["gpu"]["mtta_seconds"], priorities["P3"]["mttr_seconds"]) == (270, 1320)

    text = requests.get(served.url + "/metrics", timeout=5).text
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples
               if s.name.startswith("vigil_oncall_")}

    def metric(name: str, **labels) -> float | None:
        return samples.get((name, tuple(sorted(labels.items()))))

    assert metric("vigil_oncall_window_seconds") == END - START
    # per team and priority: gpu P1 is #1 #2, gpu P3 #4 #5, net P3 #3
    assert metric("vigil_oncall_incidents", team="gpu", priority="P1") == 2
    assert metric("vigil_oncall_mtta_seconds", team="gpu", priority="P1") == priorities["P1"]["mtta_seconds"] == 270
    assert metric("vigil_oncall_mttr_seconds", team="gpu", priority="P3") == 240  # #4; #5 still firing
    assert metric("vigil_oncall_mtta_seconds", team="gpu", priority="P3") is None  # nobody acknowledged one
    assert metric("vigil_oncall_mttr_seconds", team="net", priority="P3") == teams["net"]["mttr_seconds"] == 2400
    assert metric("vigil_oncall_escalation_ratio", team="gpu", priority="P3") == 0.5
    assert metric("vigil_oncall_sla_compliance_ratio", team="net", priority="P3", target="ack") == 0
    assert metric("vigil_oncall_sla_compliance_ratio", team="gpu", priority="P1", target="resolve") == 1
    assert metric("vigil_oncall_acted_on_ratio", team="gpu", priority="P1") == priorities["P1"]["acted_on_share"]
    # pages: the metric's series add up to the report's per-person figures
    pages = {key: value for key, value in samples.items() if key[0] == "vigil_oncall_pages"}
    for person in shown["people"]:
        mine = {dict(k[1])["outside_hours"]: v for k, v in pages.items() if dict(k[1])["person"] == person["person"]}
        assert sum(mine.values()) == person["pages"]
        assert mine.get("true", 0) == person["pages_outside_hours"]
    assert metric("vigil_oncall_pages", team="net", person="carol", channel="email", outside_hours="true") == 1
    # a team member nobody paged reads 0 for each contact kind, as people not paged are counted on a rota
    assert metric("vigil_oncall_pages", team="net", person="dave", channel="phone", outside_hours="false") == 0
    assert metric("vigil_oncall_pages", team="net", person="dave", channel="email", outside_hours="false") == 0
    assert metric("vigil_oncall_pages", team="net", person="dave", channel="phone", outside_hours="true") is None


def test_the_cli_table_and_its_refusals(served):
    result = vigil_report(served, "--from", "2026-11-23T00:00Z", "--to", "2026-11-30T00:00Z")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    gpu = next(line.split() for line in lines if line.startswith("team gpu"))
    assert gpu[2:7] == ["4", "4", "50%", "4m30s", "28m"]  # incidents, paged, acked, MTTA 270 s, MTTR 1680 s
    assert any(line.split()[:3] == ["alice", "4", "3"] for line in lines)  # pages, off hours
    assert any(line.split()[:3] == ["GpuLost", "2", "3"] for line in lines)
    # a long alert name (the SLO burn alerts') keeps the noisiest-alerts columns in line
    found = json.loads(vigil_report(served, "--from", "2026-11-23T00:00Z", "--to", "2026-11-30T00:00Z", "--json").output)
    found["rules"][0]["alertname"] = "NotifierPageDeliveryErrorBudgetBurnSlow"
    table = describe(found)
    header = next(line for line in table if line.startswith("rules, noisiest first"))
    row = next(line for line in table if line.startswith("NotifierPageDeliveryErrorBudgetBurnSlow "))
    assert len(row) == len(header) and row[header.index("incidents") - 1] == " "

    bad = vigil_report(served, "--from", "yesterday-ish")
    assert bad.exit_code == 2 and "--from" in bad.output and "is not a time" in bad.output
    backwards = vigil_report(served, "--from", "2026-11-30T00:00Z", "--to", "2026-11-23T00:00Z")
    assert backwards.exit_code == 1 and "`to` must be after `from`" in backwards.output
    unknown = vigil_report(served, "--team", "nope", "--to", "2026-11-30T00:00Z")
    assert unknown.exit_code == 1 and "unknown team 'nope'" in unknown.output
    net = json.loads(vigil_report(served, "--team", "net", "--to", "2026-11-30T00:00Z", "--json").output)
    assert (net["team"], net["overall"]["incidents"], net["from"]) == ("net", 1, "2026-11-23T00:00:00.000Z")


def test_working_hours_per_day_agree_with_the_notification_rules():
    """The report works a person's working hours out once per UTC day; at every 17 minutes of three weeks
    around both DST changes (Berlin 25 Oct, New York 1 Nov 2026) it says what `in_working_hours` says."""
    oncall = parse_oncall(ONCALL)
    working = working_hours_of(oncall)
    disagree = [(person, at) for person in ("alice", "bob", "carol")
                for at in range(int(utc(2026, 10, 20)), int(utc(2026, 11, 10)), 17 * 60)
                if working(person, at) != in_working_hours(person_hours(oncall, person), person_zone(oncall, person), at)]
    assert disagree == []
    assert working("carol", utc(2026, 11, 24, 20, 59)) and not working("carol", utc(2026, 11, 24, 21))  # 16:00 New York


def test_the_documented_json_shape_is_the_one_served(tmp_path):
    """docs/oncall-health.md shows the seeded week's JSON: its SUMMARY is the report's `overall`, and its
    people and noisiest-alert rows have the keys the report's rows have."""
    doc = (Path(__file__).parent.parent / "docs" / "oncall-health.md").read_text()
    seeded = seed(tmp_path)
    try:
        found = report(incidents_opened(seeded.store.engine, START, END), working_hours_of(seeded.oncall), START, END)
    finally:
        seeded.close()
    summary = json.loads(re.search(r"where `SUMMARY` is\n\n```json\n(.*?)```", doc, re.S).group(1))
    assert _approx_equal(summary, found["overall"]), (summary, found["overall"])
    shape = re.search(r"`--json` prints the notifier's answer, a stable shape:\n\n```json\n(.*?)```", doc, re.S).group(1)
    assert set(re.findall(r'"(\w+)":', shape.split('"people"')[0])) == {"from", "to", "team", "overall", "teams",
                                                                           "priorities", "team", "priority"}
    people = shape.split('"people": [')[1].split("...]")[0]
    assert set(re.findall(r'"(\w+)":', people)) - {"phone"} == set(found["people"][0])
    noisiest = shape.split('"noisiest_alerts": [')[1].split("...]")[0]
    assert set(re.findall(r'"(\w+)":', noisiest)) == set(found["noisiest_alerts"][0])
    rules = shape.split('"rules": [')[1].split("...]")[0]
    assert set(re.findall(r'"(\w+)":', rules)) == set(found["rules"][0])


def _approx_equal(documented, served) -> bool:
    if isinstance(documented, dict):
        return documented.keys() == served.keys() and all(_approx_equal(documented[k], served[k]) for k in documented)
    return documented == pytest.approx(served, rel=1e-3)
