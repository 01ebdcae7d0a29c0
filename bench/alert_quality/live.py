"""Alert quality on the real stack: how many pages a fresh demo sends with no fault, and per fault.

    .venv/bin/python bench/alert_quality/live.py [--quiet 10m] [--faults xid79,ecc-dbe,...] [--nodes 4]
        [--gap 1m] [--fault-window 2m] [--json FILE] [--record]

Starts `vigil up` (the demo's settings: simulated fleet, real Prometheus, Alertmanager and notifier, 14
days of backfilled history, the demo rota paging the local inbox, with one change: P1 and P2 pages also
go to IM at once, beside the phone call, so that the full form of every firing page can be read), leaves
it alone for `--quiet`, then runs every chaos fault of `vigil chaos inject` once, `--gap` apart, each on
a GPU of its own (`scenario.py`: drilled where a shipped rule names the fault, else injected, observed
for `--fault-window` while each page is acknowledged by the person paged as it arrives, as the drill
does, then cleared), and last a planned reboot inside a maintenance window.
From the notifier's inbox and incidents it counts:

- pages with no fault: firing pages sent during the quiet stretch and the gaps, by rule;
- per fault: pages (one per incident, person and tier, however many channels carried it), first-tier
  pages and escalations, by rule and by person, incidents it opened that joined no other, tickets, and
  the time from injection to the first page;
- what the full-form firing pages (IM, e-mail) carried: the repair action (`action:`, else the
  description as `about:`), the runbook, the dashboard link and, for a job's GPU, the job;
- pages and incidents during a fault about other GPUs or nodes (an earlier fault's after-effects, or
  noise), apart from the fault's own.

Prints a table; section `alert-quality-live` of docs/benchmarks.md only with `--record`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from scenario import REBOOT, SimulatorFaults, by_rule, firing_pages, plan, run_step, vigil  # noqa: E402
from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402
from vigil.common.durations import format_duration, parse_duration  # noqa: E402
from vigil.common.ports import free_port_base  # noqa: E402
from vigil.exporters.sim.faults import FAULTS  # noqa: E402
from vigil.stack.client import StackClient  # noqa: E402
from vigil.stack.config import demo_oncall_config  # noqa: E402
from vigil.stack.drill import shipped_fault_expectations  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
SECTION = "alert-quality-live"


def oncall_with_im(resolve_after_s: float) -> dict:
    """The demo's on-call file, P1 and P2 also sent to IM at once (the full form, beside the phone call)."""
    config = demo_oncall_config(resolve_after_s=resolve_after_s)
    for person in config["people"].values():
        for rule in person["notify"]:
            if "P1" in rule["priorities"] and "im" in person["contacts"]:
                rule["steps"].insert(1, {"contact": "im"})
    return config


def table(results: list[dict]) -> list[str]:
    def listed(counts: dict) -> str:
        return ", ".join(f"{k} {v}" for k, v in counts.items()) or "-"

    rows = ["| fault | where | passed | pages (tier 1 + escalated) | incidents | by rule | by person | first page s "
            "| full form: action / what to do / runbook / dashboard / job | meanwhile elsewhere |",
            "|---|---|---|---:|---:|---|---|---:|---|---|"]
    for r in results:
        where = r["node"] if r["fault"] in (REBOOT, "node-down", "disk-failing") else f"{r['node']} gpu {r['gpu']}"
        passed = "yes" if r["ok"] else "no: " + str(r["error"])[:140].replace("|", "/").replace("\n", " ")
        carried = (f"{r['with_action']} / {r['with_what_to_do']} / {r['with_runbook']} / {r['with_dashboard']} of "
                   f"{r['full_form']}; job {r['with_job']} of {r['job_bound']}")
        rows.append(f"| {r['fault']}{' (drill)' if r['drill'] else ''} | {where} | {passed} | {r['pages']} "
                    f"({r['first_tier_pages']} + {r['escalated_pages']}) | {r['incidents']}"
                    f"{' (' + str(r['tickets']) + ' ticket)' if r['tickets'] else ''} | {listed(r['by_rule'])} | "
                    f"{listed(r['people'])} | {r['first_page_s']} | {carried} | "
                    f"{r['pages_elsewhere']} pages; {', '.join(r['incidents_elsewhere']) or '-'} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quiet", default="10m", help="how long the fresh stack is left alone first")
    parser.add_argument("--gap", default="1m", help="quiet time between two faults")
    parser.add_argument("--fault-window", default="2m", help="how long a fault no rule drills is left in")
    parser.add_argument("--faults", default=",".join([*FAULTS, REBOOT]),
                        help=f"comma-separated faults, in order (of {', '.join(FAULTS)}, {REBOOT})")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--backfill-days", type=float, default=14.0, help="as the demo (its AIOps service needs history)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    add_record_option(parser)
    args = parser.parse_args()
    quiet_s, gap_s, window_s = parse_duration(args.quiet), parse_duration(args.gap), parse_duration(args.fault_window)
    faults = [f for f in args.faults.split(",") if f]
    with tempfile.TemporaryDirectory(prefix="vigil-alert-quality-") as work:
        work = Path(work)
        (work / "oncall.yaml").write_text(yaml.safe_dump(oncall_with_im(60.0), sort_keys=False))
        config = work / "vigil.yaml"
        config.write_text(yaml.safe_dump({"stack": {"sim_nodes": args.nodes, "backfill_days": args.backfill_days,
                                                    "oncall_config": str(work / "oncall.yaml")}}))
        run_dir = work / "run"
        up = vigil("up", "--detach", "--config", str(config), "--run-dir", str(run_dir),
                   "--port-base", str(free_port_base()), "--gpu-backend", "sim")
        if up.returncode != 0:
            raise SystemExit(f"vigil up failed:\n{up.stdout}\n{up.stderr}")
        apis = StackClient.from_run_dir(run_dir)
        try:
            with SimulatorFaults(apis) as simulated:
                started = time.time()
                fleet = apis.chaos("GET", "/chaos")
                steps = plan(faults, set(shipped_fault_expectations()), [n["name"] for n in fleet["nodes"]],
                             fleet.get("jobs", []))
                time.sleep(quiet_s)
                quiet = firing_pages(apis, 0, time.time())
                results, quiet_gaps = [], []
                for step in steps:
                    results.append(run_step(apis, run_dir, step, window_s))
                    print(json.dumps(results[-1]), flush=True)
                    gap_start = time.time()
                    time.sleep(gap_s)
                    quiet_gaps += firing_pages(apis, gap_start, time.time())
                total_s = time.time() - started
        finally:
            vigil("down", "--run-dir", str(run_dir))
    # a job the simulator hung on its own is a fault: its JobHung pages are not pages without a fault
    own = [p for p in quiet + quiet_gaps if simulated.explains(p)]
    quiet = [p for p in quiet if not simulated.explains(p)]
    quiet_gaps = [p for p in quiet_gaps if not simulated.explains(p)]
    figures = {"quiet_s": quiet_s, "quiet_pages": len(quiet), "quiet_by_rule": by_rule(quiet),
               "gap_pages": len(quiet_gaps), "gap_by_rule": by_rule(quiet_gaps), "faults": results,
               "simulator_fault_pages": len(own), "simulator_hung_jobs": sorted(simulated.hung),
               "total_s": round(total_s)}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    one_page = sum(r["first_tier_pages"] == 1 and r["escalated_pages"] == 0 for r in results if r["pages"])
    body = "\n".join([
        "## Alert quality on the live stack (`python bench/alert_quality/live.py`)",
        "",
        f"Machine: {machine_summary()}. Date: {utc_now()}. A fresh `vigil up` ({args.nodes} simulated nodes, the demo's "
        f"settings, backfill {args.backfill_days:g} days, P1/P2 also to IM so the full form can be read) left alone "
        f"{format_duration(quiet_s)}, then each fault once, {format_duration(gap_s)} apart, a fault no rule drills "
        f"left in {format_duration(window_s)} ({format_duration(round(total_s))} in all).",
        "",
        f"Pages with no fault: **{len(quiet)}** in the first {format_duration(quiet_s)}"
        + (f" ({', '.join(f'{k} {v}' for k, v in by_rule(quiet).items())})" if quiet else "")
        + f", **{len(quiet_gaps)}** in the gaps between faults"
        + (f" ({', '.join(f'{k} {v}' for k, v in by_rule(quiet_gaps).items())})" if quiet_gaps else "") + ". "
        + (f"Meanwhile the simulator hung {len(simulated.hung)} job(s) on its own (it hangs 12 % of its jobs "
           f"part-way: a fault, with no chaos fault injected): {len(own)} page(s) "
           f"({', '.join(f'{k} {v}' for k, v in by_rule(own).items())}), counted apart. " if own else "")
        + f"Faults that paged: {sum(1 for r in results if r['pages'])} of {len(results)}, "
        f"{one_page} of them with exactly one page (tier 1, no escalation).",
        "",
        *table(results),
    ])
    print(body)
    if args.record:
        write_section(DOC, SECTION, body)
        print(f"recorded in {DOC} (section {SECTION})")


if __name__ == "__main__":
    main()
