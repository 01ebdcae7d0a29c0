"""`vigil up`'s demo login for the web console: the demo on-call file gives its first DRI the hash of a
password generated once into the run directory's secrets, and the stack's banner says the console's URL
and that login (or, with a team's own on-call file, how to get one)."""

from __future__ import annotations

import stat

from vigil.notifier.console.passwords import verify_password
from vigil.oncall.loader import load_oncall
from vigil.stack.runstate import ComponentState, StackState
from vigil.stack.run import console_hint
from vigil.stack.config.demo_oncall import DEMO_CONSOLE_USER
from test_stack_config import generate  # the stack's files written into a run directory under tmp_path


def test_the_demo_person_logs_in_with_the_generated_password_kept_owner_only(tmp_path):
    _, layout = generate(tmp_path)
    password = layout.demo_password_file.read_text().strip()
    assert len(password) >= 16 and stat.S_IMODE(layout.demo_password_file.stat().st_mode) == 0o600
    config = load_oncall(layout.oncall_config)
    assert verify_password(config.people[DEMO_CONSOLE_USER].password_hash, password)
    assert password not in layout.oncall_config.read_text()  # the file holds only the hash
    assert [key for key, person in config.people.items() if person.password_hash] == [DEMO_CONSOLE_USER]
    generate(tmp_path)  # a restart keeps the password (a new salt, the same login)
    assert layout.demo_password_file.read_text().strip() == password
    assert verify_password(load_oncall(layout.oncall_config).people[DEMO_CONSOLE_USER].password_hash, password)


def test_the_banner_gives_the_console_url_and_the_demo_login(tmp_path):
    settings, layout = generate(tmp_path)
    state = StackState(supervisor_pid=1, port_base=9000, gpu_backend="sim",
                       components={"notifier": ComponentState("http://127.0.0.1:9005", "http://127.0.0.1:9005/healthz")})
    hint = console_hint(settings, layout, state)
    password = layout.demo_password_file.read_text().strip()
    assert "web console: http://127.0.0.1:9005/console/" in hint
    assert f"log in as {DEMO_CONSOLE_USER}, password {password}" in hint
    logged = console_hint(settings, layout, state, reveal=False)  # what the supervisor's log gets
    assert password not in logged and f"with the password in {layout.demo_password_file} (owner-only)" in logged
    assert layout.oncall_config.stat().st_mode & 0o077 == 0  # it holds the password's Argon2id hash


def test_with_a_teams_own_oncall_file_the_banner_says_how_to_get_a_login(tmp_path):
    own = tmp_path / "oncall.yaml"
    own.write_text("people:\n  zoe:\n    contacts:\n      phone: {inbox: true}\n")
    settings, layout = generate(tmp_path, oncall_config=own)
    state = StackState(supervisor_pid=1, port_base=9000, gpu_backend="sim",
                       components={"notifier": ComponentState("http://127.0.0.1:9005", "")})
    hint = console_hint(settings, layout, state)
    assert "vigil oncall hash-password" in hint and str(layout.token_file) in hint
    assert not layout.demo_password_file.exists()
