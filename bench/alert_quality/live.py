"""Alert quality on the real stack: how many pages a fresh demo sends with no fault, and per fault.

    .venv/bin/python bench/alert_quality/live.py [--quiet 10m] [--faults xid79,ecc-dbe,...] [--nodes 4]
        [--gap 1m] [--record]

Starts `vigil up` (the demo's own settings: simulated fleet, real Prometheus, Alertmanager and notifier,
the demo rota paging the local inbox, 14 days of backfilled history), leaves
it alone for `--quiet`, then runs `vigil drill FAULT` for each fault (default: every drill that needs
neither a GPU held by a job nor trained baselines), one after the other on a node not used by the previous one, `--gap` apart, each injected,
paged, acknowledged, cleared and resolved by the drill itself. From the notifier's inbox and incidents it
counts:

- pages with no fault: firing pages sent during the quiet stretch and the gaps, by rule;
- per fault: firing pages from injection to the end of its drill (by rule and by person), the incidents
  it opened that did not join the drill's (what `vigil drill` fails on), and the time from injection to
  the first page;
- whether every full-form firing page of a fault (IM, e-mail; SMS and phone get the 160-character
  form) carries an `action:` line and a runbook.

Prints a table; section `alert-quality-live` of docs/benchmarks.md only with `--record`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402
from vigil.common.durations import format_duration, parse_duration  # noqa: E402
from vigil.common.ports import free_port_base  # noqa: E402
from vigil.common.times import parse_time  # noqa: E402
from vigil.stack.client import StackClient  # noqa: E402
from vigil.stack.drill import shipped_fault_expectations  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
SECTION = "alert-quality-live"
VIGIL = str(Path(sys.executable).with_name("vigil"))
PAGES = 5000


def vigil(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([VIGIL, *args], capture_output=True, text=True, timeout=timeout)


def firing_pages(apis: StackClient, since: float, until: float) -> list[dict]:
    return [p for p in apis.pages(PAGES) if p.get("status") == "firing" and since <= parse_time(p["time"]) < until]


def by_rule(pages: list[dict]) -> dict[str, int]:
    return dict(Counter(p.get("labels", {}).get("alertname", "?") for p in pages).most_common())


# the drills that need neither a GPU held by a simulated job (job-hang) nor trained baselines (load-anomaly)
DEFAULT_FAULTS = ("xid79", "ecc-dbe", "overheat", "node-down", "disk-failing")
SHORT_FORM = ("sms", "phone")  # one line of 160 characters: the action, no runbook (docs/notifier.md)


def drill(apis: StackClient, run_dir: Path, fault: str, node: str, gpu: int) -> dict:
    """One drill; what it paged, and whether it passed (one incident: `vigil drill`'s last check)."""
    started = time.time()
    done = vigil("drill", fault, "--node", node, "--gpu", str(gpu), "--timeout", "180", "--json",
                 "--run-dir", str(run_dir))
    ended = time.time()
    report = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {"ok": False, "error": done.stderr}
    pages = firing_pages(apis, started, ended)
    full = [p for p in pages if p.get("channel") not in SHORT_FORM]
    complete = [p for p in full if "\naction: " in p.get("body", "") and "\nrunbook: " in p.get("body", "")]
    return {"fault": fault, "node": node, "gpu": gpu, "ok": report.get("ok", False),
            "error": report.get("error"), "pages": len(pages), "by_rule": by_rule(pages),
            "people": dict(Counter(p.get("recipient", "?") for p in pages)),
            "first_page_s": round(min(parse_time(p["time"]) for p in pages) - started, 1) if pages else None,
            "full_form": len(full), "with_action_and_runbook": len(complete), "seconds": round(ended - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quiet", default="10m", help="how long the fresh stack is left alone first")
    parser.add_argument("--gap", default="1m", help="quiet time between two drills")
    parser.add_argument("--faults", default=",".join(DEFAULT_FAULTS),
                        help=f"comma-separated drill faults, in order (any of {', '.join(sorted(shipped_fault_expectations()))})")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--backfill-days", type=float, default=14.0, help="as the demo (its AIOps service needs history)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    add_record_option(parser)
    args = parser.parse_args()
    quiet_s, gap_s = parse_duration(args.quiet), parse_duration(args.gap)
    faults = [f for f in args.faults.split(",") if f]
    with tempfile.TemporaryDirectory(prefix="vigil-alert-quality-") as work:
        work = Path(work)
        config = work / "vigil.yaml"
        config.write_text(yaml.safe_dump({"stack": {"sim_nodes": args.nodes, "backfill_days": args.backfill_days}}))
        run_dir = work / "run"
        up = vigil("up", "--detach", "--config", str(config), "--run-dir", str(run_dir),
                   "--port-base", str(free_port_base()), "--gpu-backend", "sim")
        if up.returncode != 0:
            raise SystemExit(f"vigil up failed:\n{up.stdout}\n{up.stderr}")
        apis = StackClient.from_run_dir(run_dir)
        try:
            started = time.time()
            time.sleep(quiet_s)
            quiet = firing_pages(apis, 0, time.time())
            results, quiet_gaps = [], []
            for n, fault in enumerate(faults):
                node = f"node-{n % args.nodes + 1}"
                results.append(drill(apis, run_dir, fault, node, n % 4))
                print(json.dumps(results[-1]), flush=True)
                gap_start = time.time()
                time.sleep(gap_s)
                quiet_gaps += firing_pages(apis, gap_start, time.time())
            total_s = time.time() - started
        finally:
            vigil("down", "--run-dir", str(run_dir))
    figures = {"quiet_s": quiet_s, "quiet_pages": len(quiet), "quiet_by_rule": by_rule(quiet),
               "gap_pages": len(quiet_gaps), "gap_by_rule": by_rule(quiet_gaps), "faults": results,
               "total_s": round(total_s)}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    rows = [f"| {r['fault']} | {r['node']} | {'yes' if r['ok'] else 'no: ' + str(r['error'])[:120]} | {r['pages']} | "
            f"{', '.join(f'{k} {v}' for k, v in r['by_rule'].items()) or '-'} | "
            f"{', '.join(f'{k} {v}' for k, v in r['people'].items()) or '-'} | {r['first_page_s']} | "
            f"{r['with_action_and_runbook']}/{r['full_form']} |" for r in results]
    body = "\n".join([
        "## Alert quality on the live stack (`python bench/alert_quality/live.py`)",
        "",
        f"Machine: {machine_summary()}. Date: {utc_now()}. A fresh `vigil up` ({args.nodes} simulated nodes, the demo's "
        f"settings, backfill {args.backfill_days:g} days) left alone {format_duration(quiet_s)}, then one `vigil drill` per "
        f"fault, {format_duration(gap_s)} apart ({format_duration(round(total_s))} in all).",
        "",
        f"Pages with no fault: **{len(quiet)}** in the first {format_duration(quiet_s)}"
        + (f" ({', '.join(f'{k} {v}' for k, v in by_rule(quiet).items())})" if quiet else "")
        + f", **{len(quiet_gaps)}** in the gaps between drills"
        + (f" ({', '.join(f'{k} {v}' for k, v in by_rule(quiet_gaps).items())})" if quiet_gaps else "") + ".",
        "",
        "| fault | node | drill passed (one incident) | firing pages | by rule | by person | first page s | IM/e-mail pages with action and runbook |",
        "|---|---|---|---:|---|---|---:|---:|",
        *rows,
    ])
    print(body)
    if args.record:
        write_section(DOC, SECTION, body)
        print(f"recorded in {DOC} (section {SECTION})")


if __name__ == "__main__":
    main()
