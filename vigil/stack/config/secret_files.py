"""The run directory's secrets, owner-only: the webhook token, the demo's console password, and the
notifier database they guard.

`secrets/` is 0700 and the token 0600. `notifier.db` holds every alert and page, so it is created
0600 before the notifier first opens it; SQLite gives its `-wal` and `-shm` files the database file's
mode, so they are owner-only too.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from vigil.stack.config.layout import RunLayout

OWNER_ONLY_DIR = 0o700
OWNER_ONLY_FILE = 0o600


def ensure_token(layout: RunLayout) -> str:
    """Return the webhook bearer token, generating it (mode 0600, in a 0700 directory) on first use."""
    return _ensure_secret(layout, layout.token_file, 32)


def ensure_demo_password(layout: RunLayout) -> str:
    """Return the demo person's console password, generated like the token on first use (shorter: typed)."""
    return _ensure_secret(layout, layout.demo_password_file, 12)


def _ensure_secret(layout: RunLayout, path: Path, nbytes: int) -> str:
    _private_dir(layout.secrets_dir)
    if path.exists():
        os.chmod(path, OWNER_ONLY_FILE)
        secret = path.read_text().strip()
        if secret:
            return secret
    secret = secrets.token_urlsafe(nbytes)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, OWNER_ONLY_FILE)
    with os.fdopen(fd, "w") as fh:
        fh.write(secret + "\n")
    return secret


def ensure_private_database(path: Path) -> None:
    """Create the SQLite file `path` empty and 0600 (SQLite takes an empty file as an empty database),
    or make an existing one 0600 with its `-wal` and `-shm` companions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, OWNER_ONLY_FILE))
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if file.exists():
            os.chmod(file, OWNER_ONLY_FILE)


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=OWNER_ONLY_DIR)
    os.chmod(path, OWNER_ONLY_DIR)  # mkdir's mode is cut by the umask, and an existing directory keeps its own
