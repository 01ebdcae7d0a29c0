"""The console's door: no session, no page; passwords from the on-call file or the API token; sessions
that logout and expiry really revoke; a CSRF token on every POST; failed logins throttled per user; and
the `/api/` bearer-token contract unchanged by a console cookie."""

from __future__ import annotations

import pytest

from vigil.notifier.console.auth import MAX_CLIENT_FAILURES, MAX_FAILURES, SESSION_COOKIE
from console_support import AUTH, console_client, csrf_of, log_in, open_incident
from sim_clock import SIM_NOW


def state_of(client, incident_id) -> dict:
    return client.get(f"/api/v1/incidents/{incident_id}", headers=AUTH).json()


def test_without_a_session_pages_redirect_to_the_login_and_posts_are_refused(client):
    incident = open_incident(client)
    for path in ("/console/incidents", f"/console/incidents/{incident}", "/console/incidents/rows?state=open"):
        answer = client.get(path)
        assert answer.status_code == 303 and answer.headers["location"].startswith("/console/login?next=%2Fconsole")
    refused = client.post(f"/console/incidents/{incident}/ack", data={"csrf_token": "anything"})
    assert refused.status_code == 401 and "log in again" in refused.text
    client.cookies.set(SESSION_COOKIE, "made-up-token")
    assert client.get("/console/incidents").status_code == 303
    assert state_of(client, incident)["state"] == "triggered"


def test_a_person_logs_in_with_the_password_whose_hash_is_in_the_oncall_file(client):
    answer = log_in(client, "alice", next="/console/incidents?state=open")
    assert answer.status_code == 303 and answer.headers["location"] == "/console/incidents?state=open"
    cookie = answer.headers["set-cookie"]
    assert f"{SESSION_COOKIE}=" in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert "Secure" not in cookie  # plain http here (see the https test)
    page = client.get("/console/incidents")
    assert page.status_code == 200 and "alice" in page.text and "Log out" in page.text


@pytest.mark.parametrize("username, password", [("alice", "wrong"), ("alice", "bob-password-2"),
                                                ("nobody", "alice-password-1"), ("carol", ""), ("carol", "x"),
                                                ("", "not-the-token-0123456789")])
def test_wrong_passwords_unknown_people_and_people_without_a_hash_are_refused(client, username, password):
    answer = log_in(client, username, password)
    assert answer.status_code == 401 and "Wrong user name or password" in answer.text
    assert SESSION_COOKIE not in answer.cookies and client.get("/console/incidents").status_code == 303


def test_the_api_token_logs_in_as_token(client):
    from test_notifier_support import TOKEN
    incident = open_incident(client)
    assert log_in(client, "", TOKEN).status_code == 303
    page = client.get(f"/console/incidents/{incident}")
    client.post(f"/console/incidents/{incident}/ack", data={"csrf_token": csrf_of(page.text)})
    assert state_of(client, incident)["acknowledged_by"] == "token"


def test_login_form_without_its_csrf_cookie_is_refused(client):
    page = client.get("/console/login")
    client.cookies.clear()
    answer = client.post("/console/login", data={"username": "alice", "password": "alice-password-1",
                                                 "csrf_token": csrf_of(page.text)})
    assert answer.status_code == 403 and SESSION_COOKIE not in answer.cookies


@pytest.mark.parametrize("target", ["//evil.example.com/x", "https://evil.example.com/", "/api/v1/incidents",
                                    "/console\\..\\x", ""])
def test_login_goes_back_only_to_a_console_page(client, target):
    answer = log_in(client, next=target)
    assert answer.headers["location"] == "/console/incidents"


def test_every_post_needs_the_sessions_csrf_token(client, clock):
    incident = open_incident(client)
    log_in(client)
    page = client.get(f"/console/incidents/{incident}")
    token = csrf_of(page.text)
    for form in ({}, {"csrf_token": ""}, {"csrf_token": token[:-1] + ("A" if token[-1] != "A" else "B")}):
        for verb in ("ack", "resolve", "escalate"):
            refused = client.post(f"/console/incidents/{incident}/{verb}", data=form)
            assert refused.status_code == 403 and "CSRF" in refused.text
        assert client.post(f"/console/incidents/{incident}/note", data={**form, "text": "x"}).status_code == 403
        assert client.post("/console/logout", data=form).status_code == 403
    detail = state_of(client, incident)
    assert detail["state"] == "triggered"
    assert not {"acknowledged", "resolved", "escalated", "note"} & {e["kind"] for e in detail["timeline"]}
    other = console_client(client.app.state.settings.oncall_config.parent, clock)
    with other:  # a second session's token is not this session's
        log_in(other, "bob")
        bobs = csrf_of(other.get(f"/console/incidents/{incident}").text)
    assert client.post(f"/console/incidents/{incident}/ack", data={"csrf_token": bobs}).status_code == 403
    done = client.post(f"/console/incidents/{incident}/ack", data={"csrf_token": token})
    assert done.status_code == 303 and state_of(client, incident)["acknowledged_by"] == "alice"


def test_logout_revokes_the_session_even_for_a_kept_cookie(client):
    log_in(client)
    kept = client.cookies.get(SESSION_COOKIE)
    page = client.get("/console/incidents")
    out = client.post("/console/logout", data={"csrf_token": csrf_of(page.text)})
    assert out.status_code == 303 and out.headers["location"] == "/console/login"
    client.cookies.set(SESSION_COOKIE, kept)  # a copy of the cookie taken before logout
    assert client.get("/console/incidents").status_code == 303


def test_sessions_expire_when_idle_and_at_the_latest_after_their_lifetime(client, clock):
    sessions = client.app.state.store.console_sessions
    log_in(client)
    clock.now = SIM_NOW + sessions.idle_s - 60
    assert client.get("/console/incidents").status_code == 200  # activity keeps it alive
    clock.now += sessions.idle_s - 60
    assert client.get("/console/incidents").status_code == 200
    clock.now = SIM_NOW + sessions.ttl_s
    assert client.get("/console/incidents").status_code == 303
    log_in(client)
    clock.now += sessions.idle_s
    assert client.get("/console/incidents").status_code == 303


def test_failed_logins_are_throttled_per_user(client, clock):
    for _ in range(MAX_FAILURES):
        assert log_in(client, "alice", "guess").status_code == 401
    locked = log_in(client, "alice")  # even the right password waits
    assert locked.status_code == 429 and "try again in" in locked.text
    assert log_in(client, "bob").status_code == 303  # another user is not locked out
    clock.now += 301
    assert log_in(client, "alice").status_code == 303


def test_the_cookie_is_secure_behind_an_https_public_url(tmp_path, clock):
    with console_client(tmp_path, clock, public_url="https://vigil.example.com",
                        base_url="https://vigil.example.com") as client:
        assert "Secure" in client.get("/console/login").headers["set-cookie"]
        answer = log_in(client)
        assert answer.status_code == 303 and "Secure" in answer.headers["set-cookie"]


def test_a_console_session_does_not_open_the_api(client):
    log_in(client)
    assert client.get("/api/v1/incidents").status_code == 401
    assert client.get("/api/v1/incidents", headers=AUTH).status_code == 200


def test_the_lockout_is_shared_by_every_notifier_on_the_database_and_survives_a_restart(tmp_path, clock):
    """Two notifiers on one database (the HA profile) count the same failures: five wrong guesses spread
    over both lock the account on both, and on a notifier started afterwards."""
    def notifier():
        return console_client(tmp_path, clock)
    with notifier() as first, notifier() as second:
        for n in range(MAX_FAILURES):
            assert log_in(first if n % 2 else second, "alice", "guess").status_code == 401
        assert log_in(first, "alice").status_code == 429 and log_in(second, "alice").status_code == 429
    with notifier() as restarted:
        assert log_in(restarted, "alice").status_code == 429
        assert log_in(restarted, "ALICE").status_code == 429  # one key per account, however it is typed


def test_one_client_guessing_many_names_runs_out_of_tries(client, clock):
    """Each guess costs an Argon2 hash: a client that tries name after name is stopped by its own budget."""
    for n in range(MAX_CLIENT_FAILURES):
        assert log_in(client, f"made-up-{n}", "guess").status_code == 401
    stopped = log_in(client, "bob")
    assert stopped.status_code == 429 and "from this address" in stopped.text
    clock.now += 301
    assert log_in(client, "bob").status_code == 303


def test_a_huge_password_is_just_wrong(client):
    answer = log_in(client, "alice", "x" * 100_000)
    assert answer.status_code == 401


def test_sessions_live_in_the_database_on_sqlite_and_postgresql(tmp_path, clock, db_url):
    with console_client(tmp_path, clock, db_url=db_url) as first:
        log_in(first)
        kept = first.cookies.get(SESSION_COOKIE)
        with console_client(tmp_path, clock, db_url=db_url) as second:  # another notifier on the same database
            second.cookies.set(SESSION_COOKIE, kept)
            assert second.get("/console/incidents").status_code == 200
            assert first.app.state.store.console_sessions.count(clock.now) == 1
            first.post("/console/logout", data={"csrf_token": csrf_of(first.get("/console/incidents").text)})
            assert second.get("/console/incidents").status_code == 303  # revoked everywhere
            assert first.app.state.store.console_sessions.count(clock.now) == 0
