"""A real PostgreSQL server for the notifier tests (no tests here), and a `db_url` fixture that runs a
test on SQLite and on PostgreSQL, each case with an empty database of its own.

PostgreSQL runs when Debian's server binaries are installed and the tests run as root (the server is
started as the `postgres` user on a temp directory and a loopback port); otherwise those cases skip.
Import both fixtures into a test module: `from pg_support import db_url, postgres_server`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from test_notifier_support import free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")


@pytest.fixture(scope="module")
def postgres_server():
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
