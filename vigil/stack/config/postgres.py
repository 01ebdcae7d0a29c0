"""The ha profile's throwaway PostgreSQL for the two notifiers, when the user names no database.

`initdb` makes a cluster once (password auth, the password kept owner-only in `secrets/`), the
supervisor then runs `postgres` in the foreground on a loopback port (TCP only). The notifiers find
the password through a libpq password file (`PGPASSFILE`), so it is never on a command line. PostgreSQL refuses to run as root: as root the cluster belongs to the
`postgres` user (Debian's package creates it) and lives where that user can reach it, in
`/tmp/vigil-pg-<hash of the run directory>`, linked from the run directory as `postgres`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from vigil.common.hostport import format_host_port

from vigil.stack.config.layout import RunLayout
from vigil.stack.config.secret_files import OWNER_ONLY_FILE, _ensure_secret

PG_LIB = Path("/usr/lib/postgresql")
PG_USER = "postgres"
DATABASE = "postgres"


class PostgresUnavailable(Exception):
    """The PostgreSQL server binaries are missing; the message says how to install them."""


def server_bin() -> Path:
    """The newest installed PostgreSQL server's bin directory (Debian: /usr/lib/postgresql/VERSION/bin)."""
    found = sorted((p.parent for p in PG_LIB.glob("*/bin/postgres")), key=lambda p: int(p.parent.name)
                   if p.parent.name.isdigit() else 0)
    if not found:
        raise PostgresUnavailable("the ha profile runs PostgreSQL for its notifiers: install it with "
                                  "sudo apt-get install -y postgresql (or give --database-url)")
    return found[-1]


def as_root() -> bool:
    return os.geteuid() == 0


def data_dir(layout: RunLayout) -> Path:
    if not as_root():
        return layout.root / "postgres"
    digest = hashlib.sha256(str(layout.root).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"vigil-pg-{digest}"


def password_file(layout: RunLayout) -> Path:
    return layout.secrets_dir / "postgres-password"


def pgpass_file(layout: RunLayout) -> Path:
    return layout.secrets_dir / "pgpass"


def _run_as(argv: list[str]) -> list[str]:
    return ["runuser", "-u", PG_USER, "--", *argv] if as_root() else argv


def ensure_cluster(layout: RunLayout, host: str, port: int) -> Path:
    """Create the cluster once (idempotent) and write the notifiers' password file; return the data dir."""
    password = _ensure_secret(layout, password_file(layout), 24)
    pgpass = pgpass_file(layout)
    fd = os.open(pgpass, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, OWNER_ONLY_FILE)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"{host}:{port}:*:{PG_USER}:{password}\n")
    root = data_dir(layout)
    if (root / "data" / "PG_VERSION").exists():
        return root / "data"
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    if as_root():
        shutil.chown(root, PG_USER, PG_USER)
        link = layout.root / "postgres"
        if link.is_symlink():
            link.unlink()  # left by an earlier cluster of this run directory that is gone now
        if not link.exists():
            link.symlink_to(root)
    pwfile = root / "initdb-password"
    pwfile.write_text(password + "\n")
    os.chmod(pwfile, OWNER_ONLY_FILE)
    if as_root():
        shutil.chown(pwfile, PG_USER, PG_USER)
    try:
        result = subprocess.run(_run_as([str(server_bin() / "initdb"), "-D", str(root / "data"), "-U", PG_USER,
                                         "-A", "scram-sha-256", f"--pwfile={pwfile}", "--no-sync"]),
                                capture_output=True, text=True)
    finally:
        pwfile.unlink(missing_ok=True)
    if result.returncode != 0:
        raise PostgresUnavailable(f"initdb failed in {root}: {result.stderr.strip()[-800:]}")
    return root / "data"


def server_argv(layout: RunLayout, host: str, port: int) -> list[str]:
    """`postgres` in the foreground on loopback TCP only (no unix socket: a deep run directory would
    make its path too long, and the notifiers connect by TCP)."""
    root = data_dir(layout)
    return _run_as([str(server_bin() / "postgres"), "-D", str(root / "data"), "-p", str(port), "-k", "",
                    "-c", f"listen_addresses={host}", "-c", "max_connections=50"])


def database_url(host: str, port: int) -> str:
    """The notifiers' URL: no password in it (libpq reads it from PGPASSFILE)."""
    return f"postgresql://{PG_USER}@{format_host_port(host, port)}/{DATABASE}"
