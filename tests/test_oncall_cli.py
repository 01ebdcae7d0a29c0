"""`vigil oncall`: who, shifts, check and export, driven through the command line as a user would."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path

import icalendar
from click.testing import CliRunner

from vigil.cli import main

ONCALL = """\
timezone: Europe/Berlin
people:
  alice: {name: Alice Chen, email: alice@example.com, contacts: {phone: {inbox: true, kind: phone}}}
  bob: {contacts: {phone: {inbox: true, kind: phone}}}
  mgr: {name: Morgan, contacts: {phone: {inbox: true, kind: phone}}}
teams:
  gpu-infra: {name: GPU infrastructure, timezone: Asia/Shanghai, policy: gpu-infra}
schedules:
  primary:
    layers:
      - {name: rota, rotation: weekly, handoff: "2026-11-02T09:00", people: [alice, bob]}
  office:
    layers:
      - rotation: daily
        handoff: "2026-11-02T09:00"
        people: [bob]
        restrict: {days: [mon, tue, wed, thu, fri], start: "09:00", end: "17:00"}
policies:
  gpu-infra:
    tiers:
      - {name: DRI, notify: [{schedule: primary}]}
      - {name: senior, notify: [{schedule: office}]}
      - {notify: [{person: mgr}]}
default_policy: gpu-infra
"""


def run(*args: str):
    result = CliRunner().invoke(main, ["oncall", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def write(tmp_path, text: str = ONCALL):
    path = tmp_path / "oncall.yaml"
    path.write_text(text)
    return str(path)


def test_who_names_each_tier_at_a_local_time_of_the_team(tmp_path):
    path = write(tmp_path)
    # Saturday 28 November 03:00 in Shanghai is Friday 20:00 in Berlin: week 4 of the rota (bob),
    # outside office hours
    result = run("who", "--team", "gpu-infra", "--at", "2026-11-28T03:00", "--config", path)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "team gpu-infra, policy gpu-infra, at 2026-11-28 03:00 CST:",
        "  tier 1 (DRI): bob",
        "  tier 2 (senior): NOBODY on call",
        "  tier 3: mgr (Morgan)",
    ]
    as_json = json.loads(run("who", "--at", "2026-11-23T10:00Z", "--json", "--config", path).output)
    assert [tier["people"] for tier in as_json["teams"][0]["tiers"]] == [["bob"], ["bob"], ["mgr"]]


def test_shifts_lists_the_team_schedules(tmp_path):
    path = write(tmp_path)
    result = run("shifts", "--team", "gpu-infra", "--from", "2026-11-23T00:00Z", "--to", "2026-11-24T00:00Z",
                 "--json", "--config", path)
    assert result.exit_code == 0, result.output
    rows = [(row["schedule"], row["person"], row["start"]) for row in json.loads(result.output)["shifts"]]
    monday = datetime(2026, 11, 23, tzinfo=timezone.utc).timestamp()
    # the weekly handoff is 09:00 in Berlin (08:00 UTC); office hours start then too
    assert rows == [("primary", "alice", monday), ("primary", "bob", monday + 8 * 3600),
                    ("office", "bob", monday + 8 * 3600)]
    table = run("shifts", "--team", "gpu-infra", "--from", "2026-11-23T00:00Z", "--to", "2026-11-24T00:00Z",
                "--config", path).output.splitlines()
    assert table[0].split() == ["SCHEDULE", "PERSON", "FROM", "TO", "SOURCE"]
    assert table[3].split()[:2] == ["office", "bob"] and table[3].endswith("layer 1")


def test_export_writes_an_ics_of_a_schedule_or_a_person(tmp_path):
    path = write(tmp_path)
    out = tmp_path / "primary.ics"
    result = run("export", "primary", "--from", "2026-11-02T09:00", "--to", "2026-11-16T09:00", "-o", str(out),
                 "--config", path)
    assert result.exit_code == 0, result.output
    events = list(icalendar.Calendar.from_ical(out.read_bytes()).walk("VEVENT"))
    assert [str(e["SUMMARY"]) for e in events] == ["On call: Alice Chen (primary)", "On call: bob (primary)"]
    mine = run("export", "--person", "bob", "--from", "2026-11-02T09:00", "--to", "2026-11-03T09:00", "--config", path)
    summaries = [str(e["SUMMARY"]) for e in icalendar.Calendar.from_ical(mine.output.encode()).walk("VEVENT")]
    assert summaries == ["On call: bob (office)"]


def test_user_errors_are_one_clear_line_without_traceback(tmp_path):
    path = write(tmp_path)
    cases = [
        (("who", "--at", "tomorrow-ish", "--config", path), "'tomorrow-ish' is not a time"),
        (("who", "--team", "nope", "--config", path), "unknown team 'nope' (known: gpu-infra)"),
        (("export", "nope", "--config", path), "unknown schedule 'nope' (known: office, primary)"),
        (("export", "--config", path), "name a SCHEDULE or --person"),
        (("who", "--run-dir", str(tmp_path / "run")), "or name the on-call file with --config FILE"),
        (("who", "--config", str(tmp_path / "missing.yaml")), "cannot read on-call config"),
    ]
    for args, message in cases:
        result = run(*args)
        assert result.exit_code != 0 and message in result.output, (args, result.output)
        assert "Traceback" not in result.output


def test_check_passes_a_file_without_mistakes_or_gaps(tmp_path):
    text = ONCALL.replace("{name: senior, notify: [{schedule: office}]}", "{name: senior, notify: [{schedule: primary}]}")
    result = run("check", write(tmp_path, text), "--from", "2026-11-23T00:00")
    assert result.exit_code == 0, result.output
    assert "no mistakes, no coverage gaps in 4 week(s)" in result.output


def test_check_reports_a_week_long_gap_and_two_mistakes_with_file_and_line(tmp_path):
    # the senior rota starts a week after the check's start (a gap), it names an unknown person
    # (mistake 1) and the DRI tier's wait is not a duration (mistake 2)
    text = """\
timezone: UTC
people:
  alice: {contacts: {phone: {inbox: true, kind: phone}}}
  bob: {contacts: {phone: {inbox: true, kind: phone}}}
schedules:
  primary:
    layers:
      - {rotation: weekly, handoff: "2026-11-02T09:00", people: [alice, bob]}
  senior:
    layers:
      - rotation: weekly
        handoff: "2026-11-30T09:00"
        people: [alice, carol]
policies:
  ops:
    tiers:
      - name: DRI
        notify: [{schedule: primary}]
        escalate_after: five minutes
      - name: senior
        notify: [{schedule: senior}]
"""
    path = write(tmp_path, text)
    result = run("check", path, "--from", "2026-11-23T09:00", "--weeks", "2")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{path}:13: ") and "carol" in lines[0]
    assert lines[1].startswith(f"{path}:19: ") and "five minutes" in lines[1]
    assert lines[2] == (f"{path}:20: policy ops tier 2 (senior) has nobody on call "
                        "from 2026-11-23 09:00 UTC to 2026-11-30 09:00 UTC")
    assert lines[3] == "2 mistake(s), 1 coverage gap(s) in 2 week(s) from 2026-11-23 09:00 UTC"


def test_check_reads_overrides_ics_beside_the_file_and_reports_events_that_match_nobody(tmp_path):
    import icalendar as ical

    calendar = ical.Calendar()
    calendar.add("prodid", "-//test//EN")
    calendar.add("version", "2.0")
    for day, uid, summary in ((24, "cover-1", "mgr"), (25, "cover-2", "Mallory")):
        event = ical.Event()
        event.add("uid", uid)
        event.add("summary", summary)
        event.add("dtstart", datetime(2026, 11, day, 9))
        event.add("dtend", datetime(2026, 11, day, 17))
        calendar.add_component(event)
    (tmp_path / "cover.ics").write_bytes(calendar.to_ical())
    text = ONCALL.replace('people: [alice, bob]}\n', 'people: [alice, bob]}\n    overrides_ics: cover.ics\n', 1)
    text = text.replace("{name: senior, notify: [{schedule: office}]}", "{name: senior, notify: [{schedule: primary}]}")
    path = write(tmp_path, text)
    result = run("check", path, "--from", "2026-11-23T00:00")
    assert result.exit_code == 1
    assert result.output.splitlines()[0].startswith(f"{path}:12: schedules.primary.overrides_ics: ")
    assert "event UID 'cover-2' summary 'Mallory': matches no person" in result.output
    assert "cover-1" not in result.output
    (tmp_path / "cover.ics").write_bytes(calendar.to_ical().replace(b"Mallory", b"bob"))
    assert run("check", path, "--from", "2026-11-23T00:00").exit_code == 0
    # the overrides apply: mgr covers the primary schedule on Tuesday from 09:00
    who = run("who", "--at", "2026-11-24T10:00Z", "--json", "--config", path).output
    assert json.loads(who)["teams"][0]["tiers"][0]["people"] == ["mgr"]


def test_without_config_the_running_stacks_oncall_file_is_read(tmp_path):
    import fcntl
    import os
    import subprocess
    import sys

    from vigil.stack.runstate import ComponentState, StackState
    from vigil.stack.config import RunLayout

    run_dir, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    run_dir.mkdir()
    elsewhere.mkdir()
    (elsewhere / "team-oncall.yaml").write_text(ONCALL)
    # a stand-in notifier started as the stack starts it, its on-call file relative to its own folder
    notifier = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--oncall-config",
                                 "team-oncall.yaml"], cwd=elsewhere)
    layout = RunLayout(run_dir)
    try:
        # Popen returns once the child's exec has begun; the kernel fills /proc/PID/cmdline a moment later
        # (a running notifier's is there long since): wait for it, as the CLI reads it
        cmdline = Path(f"/proc/{notifier.pid}/cmdline")
        deadline = time.monotonic() + 10
        while b"--oncall-config" not in cmdline.read_bytes():
            assert time.monotonic() < deadline, "the stand-in notifier's command line never showed"
            time.sleep(0.01)
        with open(layout.lock_file, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # what the supervisor holds while the stack runs
            StackState(supervisor_pid=os.getpid(), port_base=0, gpu_backend="sim", ready=True, components={
                "notifier": ComponentState("http://127.0.0.1:9", "http://127.0.0.1:9/healthz", notifier.pid)}
            ).write(layout)
            result = run("who", "--at", "2026-11-24T10:00Z", "--run-dir", str(run_dir))
    finally:
        notifier.terminate()
        notifier.wait(timeout=10)
    assert result.exit_code == 0, result.output
    assert "tier 1 (DRI): bob" in result.output
