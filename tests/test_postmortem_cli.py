"""`vigil postmortem N --format pdf` run as a user runs it, a real process with its standard output on a
terminal (a pseudo-terminal) or on a pipe: the terminal gets no binary, the pipe gets the PDF."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import requests

from test_notifier_support import AUTH, NotifierServer, alert, free_port, make_settings, payload, run_dir_for

VIGIL = Path(sys.executable).with_name("vigil")


@pytest.fixture
def incident(tmp_path):
    with NotifierServer(make_settings(tmp_path, port=free_port())) as server, run_dir_for(server, tmp_path / "run"):
        answer = requests.post(server.url + "/api/v1/alerts/alertmanager", json=payload(alert("pdf")), headers=AUTH,
                               timeout=5)
        answer.raise_for_status()
        yield server.run_dir, answer.json()["incident_id"]


def on_terminal(*args: str) -> tuple[int, bytes, str]:
    """Run vigil with standard output on a pseudo-terminal: (exit code, what reached the terminal, stderr).
    The terminal is read while vigil runs, so a long output never fills its buffer."""
    controller, terminal = pty.openpty()
    shown = bytearray()

    def read_terminal():
        try:
            while chunk := os.read(controller, 65536):
                shown.extend(chunk)
        except OSError:  # the terminal's other end is closed: all read
            pass

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    try:
        done = subprocess.run([str(VIGIL), *args], stdout=terminal, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              timeout=60)
    finally:
        os.close(terminal)
    reader.join(10)
    os.close(controller)
    return done.returncode, bytes(shown), done.stderr.decode()


def test_a_pdf_is_refused_on_a_terminal_and_written_to_a_pipe(incident):
    run_dir, number = incident
    code, shown, said = on_terminal("postmortem", str(number), "--format", "pdf", "--run-dir", str(run_dir))
    assert code == 2 and shown == b"", shown[:200]
    assert "Error: a PDF is not for a terminal: give --output FILE.pdf (or redirect standard output)" in said
    assert "Traceback" not in said

    piped = subprocess.run([str(VIGIL), "postmortem", str(number), "--format", "pdf", "--run-dir", str(run_dir)],
                           capture_output=True, timeout=120)
    assert piped.returncode == 0, piped.stderr.decode()[-2000:]
    assert piped.stdout.startswith(b"%PDF-")


def test_markdown_still_goes_to_a_terminal(incident):
    run_dir, number = incident
    code, shown, said = on_terminal("postmortem", str(number), "--run-dir", str(run_dir))
    assert code == 0, said
    assert f"(incident #{number})".encode() in shown
