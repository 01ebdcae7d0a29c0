"""The incidents of a stack that has stopped, read from its run directory's notifier database.

A postmortem is written after the incident, often after `vigil down`: the notifier's SQLite database
(`<run-dir>/notifier.db`) is still there. `StoppedStack` answers `incidents()`, `incident()`, `pages()`
(`vigil inbox`) and `maintenance()` like `StackClient` does, with the same JSON shapes (the notifier's own queries: `Notifications.list_incidents`
and the REST API's `incident_detail`), reading the database without writing anything in the run
directory: nothing is migrated, and no `-wal`/`-shm` file is left behind. A notifier that closed its
database (a stack stopped by `vigil down` or Ctrl-C) left it whole, so it is opened `immutable=1`: no
lock, no `-shm`, no `-wal` (SQLite's plain `mode=ro` creates both, and leaves them). A `-wal` (or
rollback `-journal`) with content beside it holds commits not yet in the file (a notifier killed):
`immutable=1` would not see them, and `mode=ro` would rebuild the `-shm` index in the run directory,
so the database and that file are copied to a temporary folder and the copy is read (once per command,
taking the database's size in temporary space). Either way nothing may write to it meanwhile: the stack
is stopped (no supervisor holds the run directory's lock). What changes an incident needs the running
notifier (its on-call engine pages and escalates): `vigil incidents` refuses those verbs on a stopped
stack, saying so.

`oncall_report()` is `vigil report oncall`'s report (`GET /api/v1/reports/oncall`'s answer), judged against the
on-call file the stack ran with (its teams, time zones and working hours): the one its supervisor recorded
on its way out (`stopped.json`), else the run directory's `oncall.yaml` (the demo's, written by `vigil up`).

`stopped_at()` is when the stack stopped, the moment a postmortem measures an incident still open then up
to: what the supervisor recorded on its way out (`stopped.json`), unless the database holds newer records
(the stack ran again since and its supervisor was killed); else, for those and for run directories of an
older vigil, the newest time the database recorded (an alert received, an incident event, a page
tried, a heartbeat), a moment the stack still ran; else the database file's last change.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import sqlalchemy as sa

from vigil.common.times import parse_time
from vigil.notifier.core.rejected import Rejected
from vigil.notifier.read_models import incident_detail, oncall_health, period
from vigil.notifier.migrate import SchemaError, schema_state
from vigil.notifier.schema import delivery_attempts, heartbeats, incident_events, notifications
from vigil.notifier.store.engine import engine_for, reading
from vigil.notifier.store.inbox import Inbox
from vigil.notifier.store.maintenance import Maintenance
from vigil.notifier.store.notifications import Notifications
from vigil.notifier.store.outbox import Outbox
from vigil.notifier.store.timeline import Timeline
from vigil.oncall.loader import OncallConfigError, load_oncall

from vigil.stack.runstate import NoStack
from vigil.stack.client import StackRequestError
from vigil.stack.config import RunLayout

# what SQLite leaves beside a database that was not closed (a notifier killed): commits not yet in the file
UNFINISHED = ("-wal", "-journal")
# the times the notifier records as things happen: the newest is a moment the stack still ran
RECORD_TIMES = (notifications.c.received_at, incident_events.c.at, delivery_attempts.c.at, heartbeats.c.last_seen_at)


def read_only_url(db: Path, scratch: Path) -> str:
    """The SQLAlchemy URL that reads the SQLite file `db` without writing anything in its folder: `db` itself,
    `immutable=1`, when nothing is left beside it; else a copy in `scratch` (see the module's doc)."""
    left = [p for p in (db.with_name(db.name + suffix) for suffix in UNFINISHED) if p.is_file() and p.stat().st_size]
    if not left:
        return f"sqlite:///file:{quote(str(db.resolve()))}?mode=ro&immutable=1&uri=true"
    for path in (db, *left):
        shutil.copyfile(path, scratch / path.name)
    return f"sqlite:///file:{quote(str(scratch / db.name))}?uri=true"


@dataclass
class ReadOnlyStore:
    """The parts of the notifier's `Store` that reading incidents uses, on a read-only engine
    (`Store` itself migrates the database when it opens it)."""

    engine: sa.Engine

    def __post_init__(self) -> None:
        self.outbox = Outbox(self.engine)
        self.notifications = Notifications(self.engine, self.outbox)
        self.timeline = Timeline(self.engine)
        self.inbox = Inbox(self.engine, self.outbox, self.notifications)


class StoppedStack:
    """The incidents in `run_dir`'s notifier database, asked like the running notifier's REST API."""

    def __init__(self, run_dir: Path, why: NoStack):
        """Open `run_dir`'s notifier database; `why`: how the running stack was looked for and not found
        (raised again when there is no database either, a NoStack saying why for one that cannot be read)."""
        self.db = RunLayout(run_dir.resolve()).notifier_db
        if not self.db.is_file() or self.db.stat().st_size == 0:
            raise why  # none, or empty as `vigil up` creates it (the ha profile keeps incidents in PostgreSQL)
        self._scratch = tempfile.TemporaryDirectory(prefix="vigil-notifier-db-")
        try:
            engine = engine_for(read_only_url(self.db, Path(self._scratch.name)))
        except OSError as exc:
            self._scratch.cleanup()
            raise NoStack(f"{why.reason}, and its notifier database {self.db} cannot be read: {exc}") from None
        try:
            state = schema_state(engine)
        except (SchemaError, sa.exc.SQLAlchemyError) as exc:
            self._drop(engine)
            raise NoStack(f"{why.reason}, and its notifier database {self.db} cannot be read: {_first_line(exc)}") from None
        if state.current is None and not state.unversioned:
            self._drop(engine)
            raise why  # no tables: nothing to read
        if not state.up_to_date:
            self._drop(engine)
            raise NoStack(f"{why.reason}, and its notifier database {self.db} has an older schema "
                          f"({state.describe_current()}; this vigil reads {state.head}): start the stack once "
                          f"(vigil up --run-dir {run_dir}) to upgrade it")
        self.store = ReadOnlyStore(engine)
        self._run_dir = run_dir

    def stopped_at(self) -> float:
        """When the stack stopped (the module docstring says how it is found). Only a postmortem needs it,
        so it is read on request, while the database (or its copy) is open."""
        return stop_time(self._run_dir, self.db, newest_record(self.store.engine))

    def close(self) -> None:
        self._drop(self.store.engine)

    def _drop(self, engine: sa.Engine) -> None:
        engine.dispose()
        self._scratch.cleanup()

    def incidents(self, limit: int = 500, **filters: str | None) -> list[dict]:
        """Incidents, oldest first (the newest `limit`), filtered by state, priority, team."""
        return self.store.notifications.list_incidents(limit, filters.get("state"), filters.get("priority"),
                                                       filters.get("team"))

    def pages(self, limit: int = 500, **filters) -> list[dict]:
        """The local inbox's pages, oldest first (the newest `limit`), filtered as `StackClient.pages`."""
        since = filters.get("since")
        return self.store.inbox.list_pages(limit, recipients=tuple(filters.get("to") or ()),
                                           incident_ids=tuple(filters.get("incident") or ()),
                                           status=filters.get("status"), since=parse_time(since) if since else None)

    def maintenance(self, include_past: bool = False) -> list[dict]:
        """The maintenance windows made with `vigil maintenance add` (the on-call file's are in the file),
        as the API lists them; `active` means now, where they would apply if the stack started again."""
        now = time.time()
        return [window.as_json(now) for window in Maintenance(self.store.engine).windows(now, include_past)]

    def oncall_report(self, start: str | None, end: str | None, team: str | None = None) -> dict:
        """The on-call health report of the incidents opened in [start, end) (`docs/oncall-health.md`), as the
        notifier answers it; its refusals (an unreadable period, an unknown team) as StackRequestError."""
        path = oncall_file(self._run_dir)
        try:
            oncall = load_oncall(path)
        except OncallConfigError as exc:
            raise StackRequestError("the on-call file the stack ran with cannot be read (the report needs its teams "
                                    "and working hours):\n" + "\n".join(exc.problems)) from None
        try:
            return oncall_health(self.store, oncall, *period(oncall, start, end, time.time()), team)
        except Rejected as exc:
            raise StackRequestError(exc.message) from None

    def incident(self, incident_id: int) -> dict:
        """One incident with its alerts, timeline and pages (StackRequestError if there is none)."""
        found = incident_detail(self.store, incident_id)
        if found is None:
            raise StackRequestError(f"no incident {incident_id}")
        return found


def stopped_record(run_dir: Path) -> dict:
    """What the supervisor recorded on its way out (`stopped.json`); {} when there is none or not one we wrote."""
    try:
        found = json.loads(RunLayout(run_dir).stopped_file.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def oncall_file(run_dir: Path) -> Path:
    """The on-call file the stopped stack in `run_dir` ran with (see the module's doc)."""
    recorded = stopped_record(run_dir).get("oncall_config")
    return Path(recorded) if isinstance(recorded, str) and recorded else RunLayout(run_dir.resolve()).oncall_config


def stop_time(run_dir: Path, db: Path, newest: float | None) -> float:
    """When the stack in `run_dir` stopped (see the module's doc); `newest`: the database's newest record."""
    try:
        recorded = parse_time(stopped_record(run_dir).get("stopped_at"))
    except (ValueError, AttributeError, TypeError):  # none, or not one we wrote
        recorded = None
    if recorded is not None and (newest is None or recorded >= newest):
        return recorded
    return newest if newest is not None else db.stat().st_mtime


def newest_record(engine: sa.Engine) -> float | None:
    with reading(engine) as conn:
        return max((t for c in RECORD_TIMES if (t := conn.execute(sa.select(sa.func.max(c))).scalar()) is not None),
                   default=None)


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]
