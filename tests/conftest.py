"""The fixtures every test module may ask for, found by pytest (nothing imports them):

- `sim_now`, `fake_clock`, `clock`: the simulated now (tests/sim_clock.py) and a fake clock set to it.
  A test that asks for one of them (or for `seeded`), or whose module imports SIM_NOW, is marked
  `sim_now`: `pytest -m sim_now` runs every test that simulates time, and VIGIL_TEST_NOW moves their
  now (`make test-any-day`, docs/testing.md).
- `postgres_server`, `db_url`: a real PostgreSQL server per module, and a test run on SQLite and on
  PostgreSQL, each case with an empty database of its own (skipped where the server cannot run).
- `client`: the web console on a fresh notifier (no worker), nobody logged in, its clock `clock`.
- from the plugins below: `browser` (tests/browser_support.py), `seeded` (tests/postmortem_support.py),
  `rendered`, `alertmanager`, `run_dir` (tests/shared_fixtures.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from vigil.common.ports import free_port
from vigil.common.times import rfc3339

try:
    from sim_clock import NOW_VARIABLE, SIM_NOW, FakeClock
except ValueError as exc:  # a VIGIL_TEST_NOW that names no instant: one line, not a traceback
    raise pytest.UsageError(str(exc)) from None

# support modules that hold fixtures as plugins: the tests find their fixtures without importing them
pytest_plugins = ["browser_support", "postmortem_support", "shared_fixtures"]
PG_BIN = Path("/usr/lib/postgresql/15/bin")
SIM_FIXTURES = {"sim_now", "fake_clock", "clock", "seeded"}


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "sim_now: simulates time from the one simulated now (moved by VIGIL_TEST_NOW)")


def pytest_report_header(config) -> str:
    moved = "moved by " + NOW_VARIABLE if os.environ.get(NOW_VARIABLE) else "the default"
    return f"simulated now: {rfc3339(SIM_NOW)} ({moved}); TZ={os.environ.get('TZ', 'unset')}"


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        module = getattr(item, "module", None)
        imports_now = module is not None and "SIM_NOW" in vars(module)
        if imports_now or SIM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.sim_now)
    longest_modules_first(items)


# Seconds each test module took in a whole run (`VIGIL_RECORD_DURATIONS=1 .venv/bin/pytest -n 3 --dist
# loadfile` writes it); the modules are handed to the xdist workers longest first, so no long module
# starts last and keeps one worker busy after the others are done. A module not listed (new, or under 5 s)
# goes after the listed ones; a stale figure costs time, never a result.
MODULE_SECONDS = Path(__file__).with_name("module_seconds.json")
RECORD_DURATIONS = "VIGIL_RECORD_DURATIONS"


def longest_modules_first(items) -> None:
    seconds = json.loads(MODULE_SECONDS.read_text()) if MODULE_SECONDS.exists() else {}
    items.sort(key=lambda item: -seconds.get(Path(str(item.fspath)).stem, 0.0))  # stable: a module's order kept


_module_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report) -> None:
    if os.environ.get(RECORD_DURATIONS):  # on the controller, every worker's reports come here
        module = Path(report.nodeid.split("::")[0]).stem
        _module_seconds[module] = _module_seconds.get(module, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus) -> None:
    if os.environ.get(RECORD_DURATIONS) and not hasattr(session.config, "workerinput") and _module_seconds:
        longest = sorted(_module_seconds.items(), key=lambda kv: -kv[1])
        MODULE_SECONDS.write_text(json.dumps({m: round(s, 1) for m, s in longest if s >= 5}, indent=0) + "\n")


@pytest.fixture
def sim_now() -> float:
    return SIM_NOW


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock(SIM_NOW)


@pytest.fixture
def clock(fake_clock) -> FakeClock:
    return fake_clock


@pytest.fixture(scope="module")
def postgres_server():
    """A PostgreSQL server on a temp directory and a loopback port, run as the `postgres` user."""
    if not (PG_BIN / "initdb").exists() or os.geteuid() != 0:
        pytest.skip("PostgreSQL server binaries or root (to run them as `postgres`) not available")
    root = Path(tempfile.mkdtemp(prefix="vigil-pg-"))
    shutil.chown(root, "postgres")
    port = free_port()
    as_postgres = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*as_postgres, PG_BIN / "initdb", "-D", root / "data", "-A", "trust", "-U", "postgres"],
                   check=True, capture_output=True)
    subprocess.run([*as_postgres, PG_BIN / "pg_ctl", "-D", root / "data", "-l", root / "log", "-w", "-o",
                    f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run([*as_postgres, PG_BIN / "pg_ctl", "-D", root / "data", "-m", "fast", "-w", "stop"],
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'notifier.db'}"
    server = request.getfixturevalue("postgres_server")
    name = f"t_{tmp_path.name.lower().replace('-', '_')}"[:60]
    admin = sa.create_engine(server.replace("postgresql://", "postgresql+psycopg://") + "/postgres",
                             isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()
    return f"{server}/{name}"


@pytest.fixture
def client(tmp_path, clock):
    """The console on a fresh notifier (no worker), nobody logged in."""
    from console_support import console_client

    with console_client(tmp_path, clock) as console:
        yield console
