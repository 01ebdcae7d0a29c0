"""`vigil incidents` and `vigil postmortem` on a stopped stack, as a user runs them after the incident: a real
notifier fills the run directory's `notifier.db`, then stops (its supervisor's lock released), and the CLI
reads the database instead. The stack e2e (`test_postmortem_e2e.py`) reads the Prometheus TSDB back too;
here the run directory has no TSDB (or no Prometheus binary), so the postmortem has no charts and says why."""

from __future__ import annotations

import json
import os
import pty
import re
import sqlite3
import subprocess
import tempfile
import time
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import requests
from click.testing import CliRunner

from test_notifier_support import (AUTH, NotifierServer, alert, free_port, make_settings, payload, run_dir_for,
                                   wait_for)
from vigil.common.times import parse_time, rfc3339
from vigil.aiops.history.openmetrics import write_openmetrics
from vigil.cli import main
from vigil.notifier.postmortem.render import duration, gather, render, when
from vigil.stack.config import RunLayout
from vigil.stack.tsdb_readback import READY_TIMEOUT_S, prometheus_on, tsdb_prometheus


def vigil(*args: str, run_dir: Path):
    result = CliRunner().invoke(main, [*args, "--run-dir", str(run_dir)], env={"USER": "tester"})
    assert "Traceback" not in result.output and (result.exception is None or isinstance(result.exception, SystemExit))
    return result


@pytest.fixture
def stopped(tmp_path):
    """A run directory whose notifier took two alerts (one acknowledged) and stopped; yields (run_dir,
    what `incidents list --json` and `show --json` printed while it ran, the acknowledged incident's id);
    `running["stopped"]`: a moment after the notifier stopped, `running["open"]`: the incident left open."""
    run = tmp_path / "run"
    run.mkdir()
    with NotifierServer(make_settings(run, port=free_port())) as server, run_dir_for(server, run):
        ids = []
        for name in ("a", "b"):
            answer = requests.post(server.url + "/api/v1/alerts/alertmanager", headers=AUTH, timeout=5,
                                   json=payload(alert(name, node=f"node-{name}"), group_key=f"g-{name}"))
            answer.raise_for_status()
            ids.append(answer.json()["incident_id"])
        assert vigil("incidents", "ack", str(ids[0]), run_dir=run).exit_code == 0

        def delivered():  # no page left to send: nothing changes once the notifier stops
            return all(page["state"] != "pending" for i in ids for page in
                       requests.get(f"{server.url}/api/v1/incidents/{i}", headers=AUTH, timeout=5).json()["pages"])
        wait_for(delivered)
        assert vigil("maintenance", "add", "--match", "node=node-z", "--for", "2h", "--reason", "firmware",
                     run_dir=run).exit_code == 0  # a window that holds neither incident
        running = {"inbox": json.loads(vigil("inbox", "--json", run_dir=run).stdout),
                   "windows": json.loads(vigil("maintenance", "list", "--all", "--json", run_dir=run).stdout),
                   "list": json.loads(vigil("incidents", "list", "--json", run_dir=run).stdout),
                   "show": json.loads(vigil("incidents", "show", str(ids[0]), "--json", run_dir=run).stdout),
                   "open": json.loads(vigil("incidents", "show", str(ids[1]), "--json", run_dir=run).stdout)}
    running["stopped"] = time.time()
    (run / "state.json").unlink()  # as the supervisor leaves the run directory when it stops
    yield run, running, ids[0]


def test_list_and_show_read_the_stopped_stacks_database(stopped):
    run, running, acked = stopped
    listed = vigil("incidents", "list", "--json", run_dir=run)
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.stdout) == running["list"]  # the same rows and fields as the REST API's
    said = f"the stack in {run} is stopped: incidents read from {run / 'notifier.db'} (read-only)\n"
    assert listed.stderr == said  # once
    assert [i["id"] for i in json.loads(vigil("incidents", "list", "--json", "--state", "acknowledged",
                                              run_dir=run).stdout)["incidents"]] == [acked]
    assert vigil("incidents", "list", "--state", "resolved", run_dir=run).stdout == "no incidents\n"
    plain = vigil("incidents", "list", "--team", "nobody", run_dir=run)
    assert plain.exit_code == 0 and plain.stdout == "no incidents\n"

    shown = vigil("incidents", "show", str(acked), "--json", run_dir=run)
    assert shown.exit_code == 0 and json.loads(shown.stdout) == running["show"]
    text = vigil("incidents", "show", str(acked), run_dir=run).stdout
    timeline = text.split("timeline:\n")[1].splitlines()
    assert any(" acknowledged " in line and "tester" in line for line in timeline), text
    missing = vigil("incidents", "show", "999", run_dir=run)
    assert missing.exit_code == 1 and missing.stderr.endswith("Error: no incident 999\n")


def test_the_inbox_and_the_maintenance_windows_are_read_too(stopped):
    run, running, acked = stopped
    assert running["inbox"]["pages"] and running["windows"]["windows"]
    inbox = vigil("inbox", "--json", run_dir=run)
    assert inbox.exit_code == 0 and json.loads(inbox.stdout) == running["inbox"]
    assert inbox.stderr == f"the stack in {run} is stopped: pages read from {run / 'notifier.db'} (read-only)\n"
    paged = running["inbox"]["pages"][0]["incident_id"]
    one = json.loads(vigil("inbox", "--incident", str(paged), "--json", run_dir=run).stdout)["pages"]
    assert one == [p for p in running["inbox"]["pages"] if p["incident_id"] == paged]  # filters still hold
    assert json.loads(vigil("inbox", "--to", "nobody", "--json", run_dir=run).stdout) == {"pages": []}
    windows = vigil("maintenance", "list", "--all", "--json", run_dir=run)
    assert windows.exit_code == 0 and json.loads(windows.stdout) == running["windows"]
    assert "node=node-z" in vigil("maintenance", "list", run_dir=run).stdout
    refused = vigil("maintenance", "end", "1", run_dir=run)  # changing one needs the running notifier
    assert refused.exit_code == 1 and "cannot end maintenance window 1: " in refused.output
    assert "start the stack first" in refused.output


def listing(root: Path) -> dict:
    """Every path under `root` with its size and modification time, and `root`'s own (an entry added or removed)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in [root, *root.rglob("*")]}


def close_cleanly(db: Path) -> None:
    """Leave `db` as a notifier that closes it does (`vigil down`): the WAL checkpointed into the file, no
    `-wal` or `-shm`. (The test's notifier, served in this process, leaves a connection open: the file is
    replaced by a copy that this connection, its last one, closes.)"""
    clean = sqlite3.connect(db.with_name("clean.db"))
    clean.execute("PRAGMA journal_mode=WAL")
    with closing(sqlite3.connect(db)) as source:
        source.backup(clean)
    clean.close()
    for path in db.parent.glob(db.name + "*"):
        path.unlink()
    db.with_name("clean.db").rename(db)
    assert sorted(p.name for p in db.parent.glob(db.name + "*")) == [db.name]


@pytest.mark.parametrize("closed", [True, False])
def test_reading_a_stopped_stack_writes_nothing_in_its_run_directory(stopped, closed, tmp_path, monkeypatch):
    """A notifier that closed its database (`vigil down`) leaves it alone, read where it is; one killed
    leaves commits in `notifier.db-wal` (here all of them: the file has only the schema's first page),
    read from a copy. Either way the run directory is as it was, and the incidents are all there."""
    run, running, acked = stopped
    if closed:
        close_cleanly(run / "notifier.db")
    else:
        assert (run / "notifier.db-wal").stat().st_size > (run / "notifier.db").stat().st_size
    before = listing(run)
    (tmp_path / "temp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))  # where a copy would go
    assert json.loads(vigil("incidents", "list", "--json", run_dir=run).stdout) == running["list"]
    assert json.loads(vigil("incidents", "show", str(acked), "--json", run_dir=run).stdout) == running["show"]
    assert vigil("postmortem", str(acked), "-o", str(tmp_path / "pm.md"), run_dir=run).exit_code == 0
    assert listing(run) == before
    assert not list((tmp_path / "temp").iterdir())  # the copy is gone too


@pytest.mark.parametrize("verb", [["ack"], ["resolve"], ["escalate"], ["reopen"], ["note", "looked at it"]])
def test_changing_an_incident_needs_the_running_stack(stopped, verb):
    run, _, acked = stopped
    result = vigil("incidents", verb[0], str(acked), *verb[1:], run_dir=run)
    assert result.exit_code == 1
    what = f"add a note to incident {acked}" if verb[0] == "note" else f"{verb[0]} incident {acked}"
    assert result.stderr == (f"Error: cannot {what}: no vigil stack is running in {run}; start the stack first "
                             f"(vigil up --run-dir {run})\n")


@pytest.mark.parametrize("database", [None, ""])  # none; empty, as `vigil up` creates it (the ha profile's stays so)
def test_a_run_directory_without_incidents_says_no_stack_runs(tmp_path, database):
    if database is not None:
        (tmp_path / "notifier.db").write_text(database)
    result = vigil("incidents", "list", run_dir=tmp_path)
    assert result.exit_code == 1
    assert result.stderr == f"Error: no vigil stack is running in {tmp_path} (start one with: vigil up --run-dir {tmp_path})\n"


def test_an_unreadable_database_is_a_one_line_error(tmp_path):
    (tmp_path / "notifier.db").write_text("not a database\n")
    result = vigil("incidents", "list", run_dir=tmp_path)
    assert result.exit_code == 1 and len(result.stderr.splitlines()) == 1
    assert f"its notifier database {tmp_path / 'notifier.db'} cannot be read" in result.stderr


def test_a_postmortem_without_the_tsdb_has_no_charts_and_says_why(stopped, tmp_path):
    run, running, acked = stopped
    out = tmp_path / "pm.md"
    result = vigil("postmortem", str(acked), "-o", str(out), run_dir=run)
    assert result.exit_code == 0, result.output
    why = f"the stack is stopped and its metrics cannot be read back: the run directory has no Prometheus data " \
          f"({run / 'prometheus' / 'data'} does not exist)"
    assert f"no charts: {why}\n" in result.stderr
    text = out.read_text()
    assert f"(incident #{acked})" in text and running["show"]["title"] in text
    assert f"No charts: {why}." in text and not list(tmp_path.glob("pm-chart-*.png"))


def test_a_postmortem_without_the_prometheus_binary_has_no_charts(stopped, tmp_path, monkeypatch):
    run, _, acked = stopped
    (run / "prometheus" / "data").mkdir(parents=True)
    monkeypatch.setenv("PATH", str(tmp_path / "no-binaries"))
    result = vigil("postmortem", str(acked), run_dir=run)
    assert result.exit_code == 0, result.output
    assert "the prometheus binary is not installed (Debian package prometheus)" in result.stdout
    assert "no charts: " in result.stderr


def test_a_pdf_is_refused_when_the_output_is_a_terminal(tmp_path):
    controller, terminal = pty.openpty()
    try:
        for where in ("/dev/tty", os.ttyname(terminal)):
            result = vigil("postmortem", "1", "--format", "pdf", "-o", where, run_dir=tmp_path)
            assert result.exit_code == 2, result.output
            assert f"Error: a PDF is not for a terminal: {where} is a terminal" in result.stderr
        os.set_blocking(controller, False)
        with pytest.raises(BlockingIOError):
            os.read(controller, 100)  # nothing reached the terminal
    finally:
        os.close(terminal)
        os.close(controller)
    # a file, even one named like a device, is written (here: refused only for want of a stack)
    result = vigil("postmortem", "1", "--format", "pdf", "-o", str(tmp_path / "tty"), run_dir=tmp_path)
    assert result.exit_code == 1 and "no vigil stack is running" in result.stderr


def test_a_postmortem_whose_tsdb_is_served_has_no_charts_and_says_why(stopped, tmp_path):
    """Another Prometheus serves the TSDB (the stack's, outliving a killed supervisor): its WAL is not copied
    mid-write, no Prometheus is started, and the postmortem is written all the same."""
    run, _, acked = stopped
    (run / "prometheus" / "data").mkdir(parents=True)
    (tmp_path / "holder").mkdir()
    with prometheus_on(run / "prometheus" / "data", tmp_path / "holder") as holder:
        assert holder.query("vector(1)")[0].value == 1.0
        started = time.monotonic()
        result = vigil("postmortem", str(acked), "-o", str(tmp_path / "pm.md"), run_dir=run)
        assert time.monotonic() - started < READY_TIMEOUT_S / 2  # refused at once, none started
    assert result.exit_code == 0, result.output
    assert f"{run / 'prometheus' / 'data'} is still served by another Prometheus (pid " in result.stderr
    assert "No charts: the stack is stopped and its metrics cannot be read back" in (tmp_path / "pm.md").read_text()


def test_the_tsdb_is_read_back_from_a_scratch_copy_and_left_as_it_was(stopped, tmp_path):
    """A TSDB as a stopped stack leaves it (a block, a WAL and head chunks): the read-back answers from it,
    and a postmortem leaves every file of the run directory as it was (a Prometheus on the TSDB itself
    adds a WAL segment and rewrites its query log at every start)."""
    run, _, acked = stopped
    data = run / "prometheus" / "data"
    data.mkdir(parents=True)
    now = time.time()
    t = now - 3600 + 15 * np.arange(200)
    write_openmetrics(tmp_path / "history.om", [("vigil_gpu_temperature_celsius", {"node": "node-a", "gpu": "0"}, t,
                                                 np.full(t.size, 60.0))])
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(tmp_path / "history.om"), str(data)],
                   check=True, capture_output=True)
    (tmp_path / "stack").mkdir()
    with prometheus_on(data, tmp_path / "stack"):  # the stack's Prometheus, since stopped
        pass
    before = listing(run)
    assert {"prometheus/data/wal", "prometheus/data/chunks_head"} <= before.keys()
    assert [p for p in data.glob("*/meta.json")]
    with tsdb_prometheus(run) as prometheus:
        [sample] = prometheus.query("count_over_time(vigil_gpu_temperature_celsius[2h])", at=now)
        assert sample.value == t.size
    assert vigil("postmortem", str(acked), "-o", str(tmp_path / "pm.md"), run_dir=run).exit_code == 0
    assert listing(run) == before


def test_a_postmortem_whose_tsdb_cannot_be_opened_says_what_prometheus_said(stopped, tmp_path):
    run, _, acked = stopped
    (run / "prometheus" / "data").mkdir(parents=True)
    (run / "prometheus" / "data" / "wal").write_text("not a folder\n")  # a TSDB broken beyond opening
    result = vigil("postmortem", str(acked), "-o", str(tmp_path / "pm.md"), run_dir=run)
    assert result.exit_code == 0, result.output
    [said] = [line for line in result.stderr.splitlines() if line.startswith("no charts: ")]
    assert said.startswith("no charts: the stack is stopped and its metrics cannot be read back: a Prometheus on "
                           "the run directory's TSDB did not start: opening storage failed: ")
    assert "not a directory" in said and "restarting" not in result.stderr
    assert said.removeprefix("no charts: ") in (tmp_path / "pm.md").read_text()


def stated_stop(text: str) -> float:
    [stop] = set(re.findall(r"still open when the stack stopped at (\S+ \S+) UTC", text))
    return parse_time(stop.replace(" ", "T") + "Z")


def test_the_postmortem_of_an_incident_open_at_the_stop_ends_at_the_stop(stopped, tmp_path, monkeypatch):
    """Written two days after `vigil down`: the incident still open then is measured up to the stop, not now."""
    run, running, _ = stopped
    stop = parse_time(rfc3339(running["stopped"]))
    RunLayout(run).stopped_file.write_text(json.dumps({"stopped_at": rfc3339(stop)}))  # as the supervisor records it on its way out
    later = stop + 2 * 86400
    monkeypatch.setattr("vigil.cli.postmortem.time", SimpleNamespace(time=lambda: later))
    out = tmp_path / "pm.md"
    result = vigil("postmortem", str(running["open"]["id"]), "-o", str(out), run_dir=run)
    assert result.exit_code == 0, result.output
    text = out.read_text()
    opened, open_for = parse_time(running["open"]["opened_at"]), duration(stop - parse_time(running["open"]["opened_at"]))
    assert stated_stop(text) == int(stop) and when(opened) in text
    assert f"- Duration: {open_for} (from the incident's opening to the stack's stop at {when(stop)}, still open then)" in text
    assert f"- Time to acknowledge: not acknowledged when the stack stopped, {open_for} after the incident opened" in text
    assert f"- Time to resolve: not resolved when the stack stopped, {open_for} after the incident opened" in text
    assert f"Still open when the stack stopped at {when(stop)}." in text
    assert f"Draft, generated by vigil {when(later)}" in text  # written now, as of the stop
    assert "now, still open" not in text and "not resolved yet" not in text
    assert duration(later - opened) not in text
    # an SLA target still pending is said to be pending as of the stop
    pending = gather({**running["open"], "sla": {"ack": "pending", "resolve": None}}, [], now=later, stopped_at=stop)
    assert f"- SLA: acknowledge pending, resolve none (pending when the stack stopped at {when(stop)})\n" in \
        render(pending, "md").decode()
    # the acknowledged one, open too: acknowledged when it was, open until the stop
    acked = vigil("postmortem", str(running["show"]["id"]), run_dir=run).stdout
    ack_after = duration(parse_time(running["show"]["acknowledged_at"]) - parse_time(running["show"]["opened_at"]))
    assert f"- Time to acknowledge: {ack_after} (by tester)" in acked and stated_stop(acked) == int(stop)


@pytest.mark.parametrize("recorded", [None, -86400.0])  # none (an older vigil, Ctrl-C); one older than the data
def test_without_a_recorded_stop_the_newest_record_stands_for_it(stopped, recorded, monkeypatch):
    """The stop `vigil down` did not record (or recorded before the stack ran again) is the newest moment the
    notifier's database recorded: a time the stack still ran, not now."""
    run, running, _ = stopped
    if recorded is not None:
        RunLayout(run).stopped_file.write_text(json.dumps({"stopped_at": rfc3339(running["stopped"] + recorded)}))
    monkeypatch.setattr("vigil.cli.postmortem.time", SimpleNamespace(time=lambda: running["stopped"] + 86400))
    result = vigil("postmortem", str(running["open"]["id"]), run_dir=run)
    assert result.exit_code == 0, result.output
    newest = max(parse_time(e["at"]) for e in running["open"]["timeline"] + running["show"]["timeline"])
    assert newest - 1 <= stated_stop(result.stdout) <= running["stopped"]
