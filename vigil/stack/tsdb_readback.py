"""Read a stopped stack's metrics back: a temporary Prometheus on a copy of its run directory's TSDB.

`vigil postmortem` on a stopped stack still wants the charts and the first sign of the fault. The
stack's own launcher (`components.prometheus_spec`, run by the `Supervisor`) starts a Prometheus with a
configuration of its own: no scrape targets, no Alertmanager and no rule files, so it only answers
queries (it evaluates nothing and writes no samples), on a free random loopback port; it is stopped
once the postmortem has its answers. A Prometheus writes to the TSDB it opens even so (measured on the
e2e stack: a new WAL segment at every start, its query log `queries.active`; on a bigger head it
compacts blocks and truncates the WAL), and it cannot open one read-only: it serves a scratch TSDB
instead (`scratch_tsdb`), whose blocks are symbolic links to the stack's (a block's files are never
changed in place) and whose WAL and `chunks_head` are copies (bounded by the head: the last hours). The
run directory is left exactly as it was. None is started while a process (the stack's Prometheus
outliving its supervisor) has the TSDB as its `--storage.tsdb.path`: its WAL would be copied mid-write.
The alert expressions the evidence needs (`/api/v1/rules` on a running stack) are read from the rule
files the stack's Prometheus loaded (its `prometheus.yml`'s `rule_files`) instead.
"""

from __future__ import annotations

import glob
import logging
import re
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import yaml

from vigil.common.ports import free_port
from vigil.common.prometheus_api import LoadedRules, PrometheusClient, PrometheusUnavailable, RecordedRule

from vigil.stack.components import SYSTEM_BINARIES, prometheus_spec
from vigil.stack.settings import StackSettings
from vigil.stack.config import RunLayout
from vigil.stack.supervisor import Supervisor

NAME = "prometheus-readback"
READY_TIMEOUT_S = 60.0  # replaying the write-ahead log of a big TSDB takes a while
ERROR = re.compile(r'level=error .*?err="?((?:[^"\\]|\\.)*)')


class ReadBackUnavailable(Exception):
    """The metrics of the stopped stack cannot be read back; the message says why."""


class RuleFileClient(PrometheusClient):
    """A Prometheus client whose loaded rules are those of `rule_files` (globs), read from disk."""

    def __init__(self, url: str, rule_files: list[str], timeout: float = 10.0):
        super().__init__(url, timeout=timeout)
        self.rule_files = rule_files

    def loaded_rules(self) -> LoadedRules:
        alerts: dict[str, str] = {}
        records: list[RecordedRule] = []
        for path in sorted({p for pattern in self.rule_files for p in glob.glob(pattern)}):
            try:
                groups = (yaml.safe_load(Path(path).read_text()) or {}).get("groups") or []
            except (OSError, yaml.YAMLError, AttributeError) as exc:
                raise PrometheusUnavailable(f"cannot read the rule file {path}: {exc}") from None
            for rule in (r for group in groups for r in group.get("rules") or []):
                if "alert" in rule:
                    alerts[rule["alert"]] = str(rule.get("expr", ""))
                elif "record" in rule:
                    records.append(RecordedRule(rule["record"], str(rule.get("expr", "")),
                                                tuple(sorted((rule.get("labels") or {}).items()))))
        return LoadedRules(alerts=alerts, records=records)


def stack_rule_files(layout: RunLayout) -> list[str]:
    """The rule-file globs of the stack's `prometheus.yml` (relative ones from its folder)."""
    try:
        config = yaml.safe_load(layout.prometheus_config.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return [str(layout.rules_dir / "*.yml")]
    return [str(layout.prometheus_config.parent / pattern) for pattern in config.get("rule_files") or []]


@contextmanager
def tsdb_prometheus(run_dir: Path, ready_timeout_s: float = READY_TIMEOUT_S) -> Iterator[RuleFileClient]:
    """A client of a temporary Prometheus serving `run_dir`'s TSDB, stopped on leaving the block;
    ReadBackUnavailable (saying why) when none can be started."""
    layout = RunLayout(run_dir.resolve())
    data = layout.prometheus_data
    if not data.is_dir():
        raise ReadBackUnavailable(f"the run directory has no Prometheus data ({data} does not exist)")
    if holders := serving(data):
        raise ReadBackUnavailable(f"{data} is still served by another Prometheus (pid {holders[0]}): stop it first")
    with tempfile.TemporaryDirectory(prefix="vigil-readback-") as scratch:
        try:
            tsdb = scratch_tsdb(data, Path(scratch) / "data")
        except OSError as exc:
            raise ReadBackUnavailable(f"cannot lay out a copy of {data}: {exc}") from None
        with prometheus_on(tsdb, Path(scratch), ready_timeout_s) as prometheus:
            yield RuleFileClient(prometheus.url, stack_rule_files(layout))


@contextmanager
def prometheus_on(tsdb: Path, scratch: Path, ready_timeout_s: float = READY_TIMEOUT_S) -> Iterator[PrometheusClient]:
    """A Prometheus that only answers queries, on the TSDB `tsdb` (its configuration and log in `scratch`)."""
    binary, package = SYSTEM_BINARIES["prometheus"]
    found = shutil.which(binary)
    if found is None:
        raise ReadBackUnavailable(f"the {binary} binary is not installed (Debian package {package})")
    settings = StackSettings()
    config = scratch / "prometheus.yml"
    # no scrape_configs, alerting or rule_files: a Prometheus that only answers queries
    config.write_text(yaml.safe_dump({"global": {"evaluation_interval": "1h", "scrape_interval": "1h"}}))
    spec = prometheus_spec(settings, {"prometheus": found}, NAME, free_port(settings.host), config, tsdb)
    supervisor = Supervisor([spec], scratch / "logs")
    quiet = logging.getLogger("vigil.stack.supervisor")  # its restarts are ours to tell, as why it failed
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    supervisor.start()
    try:
        _wait_ready(supervisor, scratch / "logs" / f"{NAME}.log", ready_timeout_s)
        yield PrometheusClient(spec.url)
    finally:
        supervisor.stop()
        quiet.setLevel(level)


def scratch_tsdb(data: Path, scratch: Path) -> Path:
    """A TSDB at `scratch` that reads as `data` and whose changes stay there: each block's files linked
    (symbolic links; Prometheus never changes a block's file in place: it replaces meta.json by renaming
    and deletes whole blocks), the rest (the WAL, `chunks_head`, whatever Prometheus may repair, append
    to or truncate) copied; its own lock and query log left out."""
    scratch.mkdir()
    for entry in sorted(data.iterdir()):
        if entry.name in ("lock", "queries.active"):
            continue
        if entry.is_dir() and (entry / "meta.json").is_file():
            (scratch / entry.name).mkdir()
            for path in sorted(entry.rglob("*")):
                target = scratch / path.relative_to(data)
                if path.is_dir():
                    target.mkdir()
                else:
                    target.symlink_to(path)
        elif entry.is_dir():
            shutil.copytree(entry, scratch / entry.name)
        else:
            shutil.copyfile(entry, scratch / entry.name)
    return scratch


def serving(data: Path, proc: Path = Path("/proc")) -> list[int]:
    """The processes whose command line names `data` as their `--storage.tsdb.path`."""
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            paths = [arg.partition("=")[2] for arg in argv if arg.startswith("--storage.tsdb.path=")]
            if paths and (entry / "cwd").resolve().joinpath(paths[0]).resolve() == data.resolve():
                found.append(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return sorted(found)


def _wait_ready(supervisor: Supervisor, log: Path, timeout_s: float) -> None:
    """Wait for the Prometheus to answer `/-/ready`; ReadBackUnavailable as soon as it exits (a TSDB
    locked by another Prometheus, a corrupt one) or after `timeout_s`, with the error it logged."""
    deadline = time.monotonic() + timeout_s
    while supervisor.wait_healthy(0.5):
        if supervisor.restarts()[NAME] or time.monotonic() > deadline:
            why = _logged_error(log) or f"it did not become ready within {timeout_s:.0f}s"
            raise ReadBackUnavailable(f"a Prometheus on the run directory's TSDB did not start: {why}")


def _logged_error(log: Path) -> str | None:
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if match := ERROR.search(line):
            return match.group(1).replace('\\"', '"')
    return None


@contextmanager
def read_back(run_dir: Path) -> Iterator[PrometheusClient]:
    """`tsdb_prometheus(run_dir)`, or when it cannot be had a client that answers every question with
    why (the postmortem's evidence lists it, and writes no charts)."""
    try:
        with tsdb_prometheus(run_dir) as prometheus:
            yield prometheus
            return
    except ReadBackUnavailable as exc:
        reason = f"the stack is stopped and its metrics cannot be read back: {exc}"
    yield Unanswered(reason)


class Unanswered(PrometheusClient):
    """A Prometheus that could not be had: every question raises PrometheusUnavailable with `reason`."""

    def __init__(self, reason: str):
        super().__init__("http://prometheus.invalid")
        self.reason = reason

    def _get(self, path: str, params: dict, what: str):
        raise PrometheusUnavailable(self.reason)
