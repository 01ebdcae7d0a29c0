"""`vigil report oncall` as a user reads it: the seeded week of `test_analytics.py` served by a real notifier
from a run directory, then the same run directory once the stack has stopped (its `state.json` gone, its
supervisor's lock released), when the report is computed from the run directory's `notifier.db` against
the on-call file the stack ran with. And the summary table's columns that read alike: "acked by a person"
(a person's acknowledgement) beside "SLA ack met" (which an incident resolved before its deadline meets
without one), and the count of incidents resolved before anyone acknowledged them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from test_analytics import END, ONCALL, seed
from test_notifier_support import NotifierServer, free_port, make_settings, run_dir_for
from vigil.cli import main
from vigil.stack.config import RunLayout
from vigil.stack.runstate import record_stopped

WEEK = ("--from", "2026-11-23T00:00Z", "--to", "2026-11-30T00:00Z")
# what the stopped stack is asked, each printed as the running stack printed it
ASKED = {"json": (*WEEK, "--json"), "table": WEEK, "gpu": (*WEEK, "--team", "gpu"),
         "net": ("--team", "net", "--to", "2026-11-30T00:00Z", "--json")}


def vigil_report(run: Path, *args: str):
    result = CliRunner().invoke(main, ["report", "oncall", *args, "--run-dir", str(run)])
    assert "Traceback" not in result.output and (result.exception is None or isinstance(result.exception, SystemExit))
    return result


@pytest.fixture
def stopped(tmp_path):
    """A run directory whose notifier served the seeded week and stopped, the demo's way (`oncall.yaml` in
    the run directory); yields it and what `vigil report oncall` printed for each of `ASKED` while it ran."""
    run = tmp_path / "run"
    run.mkdir()
    seed(run).close()
    RunLayout(run).oncall_config.write_text(ONCALL)
    with NotifierServer(make_settings(run, port=free_port()), ONCALL, run_worker=False, clock=lambda: END) as server, \
            run_dir_for(server, run):
        running = {name: vigil_report(run, *args) for name, args in ASKED.items()}
    (run / "state.json").unlink()  # as the supervisor leaves the run directory when it stops
    assert all(result.exit_code == 0 and not result.stderr for result in running.values())
    yield run, {name: result.stdout for name, result in running.items()}


def test_a_stopped_stacks_report_is_the_one_it_served(stopped):
    run, running = stopped
    for name, args in ASKED.items():
        result = vigil_report(run, *args)
        assert result.exit_code == 0, result.output
        assert result.stdout == running[name], name
        assert result.stderr == f"the stack in {run} is stopped: incidents read from {run / 'notifier.db'} (read-only)\n"
    assert json.loads(running["json"])["overall"]["incidents"] == 5
    # its refusals are the notifier's, word for word
    unknown = vigil_report(run, "--team", "nope", "--to", "2026-11-30T00:00Z")
    assert unknown.exit_code == 1 and unknown.stderr.endswith("Error: unknown team 'nope'\n")
    backwards = vigil_report(run, "--from", "2026-11-30T00:00Z", "--to", "2026-11-23T00:00Z")
    assert backwards.exit_code == 1 and "`to` must be after `from`" in backwards.stderr


def test_the_on_call_file_the_stack_ran_with_is_the_one_read(stopped, tmp_path):
    """A stack started with `--oncall-config FILE` records FILE when it stops; the report reads that file's
    teams (here `net` is renamed `storage`), not the run directory's `oncall.yaml`."""
    run, _ = stopped
    own = tmp_path / "elsewhere" / "oncall.yaml"
    own.parent.mkdir()
    own.write_text(ONCALL.replace("  net: {policy: net,", "  storage: {policy: net,"))
    record_stopped(RunLayout(run), own)
    assert json.loads(RunLayout(run).stopped_file.read_text())["oncall_config"] == str(own)
    assert json.loads(vigil_report(run, "--team", "storage", *WEEK, "--json").stdout)["overall"]["incidents"] == 0
    refused = vigil_report(run, "--team", "net", *WEEK)
    assert refused.exit_code == 1 and refused.stderr.endswith("Error: unknown team 'net'\n")

    own.unlink()  # nowhere to be read: said, not a traceback
    missing = vigil_report(run, *WEEK)
    assert missing.exit_code == 1
    assert "the on-call file the stack ran with cannot be read" in missing.stderr and str(own) in missing.stderr


def test_the_table_says_which_share_is_a_persons_ack_and_which_the_sla(stopped):
    """Team gpu's P3 incidents: #4 Alertmanager resolved 4 minutes in, before anyone acknowledged it (its
    30-minute ack target met), #5 nobody acknowledged (pending): acked by a person 0 %, SLA ack met 100 %,
    and the column between them counts the one resolved unacknowledged."""
    run, running = stopped
    lines = running["gpu"].splitlines()
    top, names = lines[2], lines[3]
    assert top.split() == ["acked", "by", "SLA", "ack", "resolved", "SLA", "res."]
    assert names.split() == ["incidents", "paged", "a", "person", "MTTA", "MTTR", "escal.", "met", "unacked", "met",
                             "pages", "off-hours", "acted", "on"]
    for above, below in (("acked by", "a person"), ("SLA ack", "met"), ("resolved", "unacked")):  # one column each
        assert top.index(above) + len(above) == names.index(below) + len(below)
    row = next(i for i, line in enumerate(lines) if line.startswith("priority P3"))  # the last summary row
    assert lines[row].split()[2:] == ["2", "2", "0%", "-", "4m", "50%", "100%", "1", "-", "3", "3", "0%"]
    legend = " ".join(lines[row + 2:lines.index("", row + 2)])
    assert "acked by a person: share of the paged incidents a person acknowledged" in legend
    assert "resolved (by Alertmanager or a person) before the deadline without an ack" in legend

    week = json.loads(running["json"])
    # #4 alone, in every row it falls in; #1 #2 #3 were acknowledged before they were resolved
    assert week["overall"]["resolved_before_ack"] == 1
    assert [(p["priority"], p["resolved_before_ack"]) for p in week["priorities"]] == [("P1", 0), ("P3", 1)]
    assert set(week["overall"]["sla"]["ack"]) == {"met", "breached", "pending", "compliance"}  # unchanged
