"""What the capacity table needs beyond the GPU exporter: a store's bytes per sample once its parts are
merged, and the series each node adds besides its GPUs.

    .venv/bin/python bench/scaling/steady_store.py [--nodes 25] [--minutes 90] [--json F] [--record]

The simulated fleet (`--nodes` x 8 GPUs, each node its own target, as `run.py` scrapes it), this host's
real node_exporter (the stack's flags) and vigil's node-health exporter (`vigil exporter node
--simulate`), scraped every 15 s by the real Prometheus with the whole rule catalog, which remote-writes
everything to VictoriaMetrics (the flags `run.py` uses). Every `--every` minutes, after a forced flush,
VictoriaMetrics' bytes per stored sample (`vm_data_size_bytes` / `vm_rows` of its `storage/*` parts, the
series index apart); at the end a forced merge of its partitions (`/internal/force_merge`), waited on
until no merge is active, and the same figure again: the steady state a long-running store approaches,
which the scaling run's few minutes of young parts over-estimate. Also the series one node's
node_exporter and node-health exporter expose (sample lines of their `/metrics`): `run.py --steady F`
adds them to the capacity table's series and samples per GPU. Writes section `scaling-steady-store` of
docs/benchmarks.md only with `--record`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stores  # noqa: E402
from reuse import rules_run, stack  # noqa: E402

sys.path.insert(0, str(stack.ROOT))
from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402
from vigil.stack.components import SYSTEM_BINARIES, node_exporter_flags, vigil_argv  # noqa: E402

SECTION = "scaling-steady-store"
SCRAPE_S = rules_run.SCRAPE_S


def sample_lines(url: str) -> int:
    """Series a /metrics page exposes: its sample lines."""
    text = requests.get(url, timeout=30).text
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def exporter(running: ExitStack, argv: list[str], port: int, workdir: Path, name: str) -> str:
    """Start an exporter listening on `port` (stopped when `running` closes); its HOST:PORT."""
    running.enter_context(stores.started(argv, workdir / f"{name}.log", f"http://127.0.0.1:{port}/metrics", name))
    return f"127.0.0.1:{port}"


def wait_merged(url: str, timeout_s: float = 1800) -> float:
    """Force a merge of every partition and wait until no merge is active; seconds it took."""
    began = time.monotonic()
    requests.get(f"{url}/internal/force_merge", timeout=60).raise_for_status()
    def idle() -> bool:
        active = rules_run.prom_metrics(url).get("vm_active_merges", {})
        return sum(v for k, v in active.items() if dict(k).get("type", "").startswith("storage/")) == 0
    time.sleep(2)  # the merge starts in the background
    stack.wait_until(idle, timeout_s, "VictoriaMetrics' forced merge", step=5)
    return time.monotonic() - began


def measure(args, workdir: Path) -> dict:
    rules = stack.generate_rules(workdir / "rules")
    with ExitStack() as running:
        fleet, fleet_port = running.enter_context(stack.fleet(args.nodes, args.gpus, 120, workdir))
        node_exporter_bin = shutil.which(SYSTEM_BINARIES["node-exporter"][0])
        if node_exporter_bin is None:
            raise SystemExit("node_exporter is not installed (Debian package prometheus-node-exporter)")
        port = stack.free_port()
        node = exporter(running, [node_exporter_bin, *node_exporter_flags(), f"--web.listen-address=127.0.0.1:{port}"],
                        port, workdir, "node-exporter")
        port = stack.free_port()
        health = exporter(running, vigil_argv("exporter", "node", "--listen", f"127.0.0.1:{port}", "--simulate",
                                              "--node", "node-1"), port, workdir, "node-health")
        per_node = {"node_exporter": sample_lines(f"http://{node}/metrics"),
                    "node_health": sample_lines(f"http://{health}/metrics")}
        vm, vm_url = running.enter_context(stores.victoria_metrics(workdir, SCRAPE_S))
        prom_port = stack.free_port()
        config = stack.prometheus_config(fleet_port, args.nodes, rules, prom_port, SCRAPE_S)
        config["scrape_configs"] += [{"job_name": "node", "static_configs": [{"targets": [node], "labels": {"node": "node-1"}}]},
                                     {"job_name": "vigil-node", "static_configs": [{"targets": [health]}]}]
        config["remote_write"] = [{"url": f"{vm_url}/api/v1/write"}]
        prom, url = running.enter_context(stack.prometheus(config, workdir))
        stack.wait_until(lambda: rules_run.targets_up(url) >= args.nodes, 120, "every target up", step=2, process=prom)
        began, timeline = time.monotonic(), []
        while (elapsed := time.monotonic() - began) < args.minutes * 60:
            time.sleep(min(args.every * 60, args.minutes * 60 - elapsed))
            figures = stores.vm_figures(vm_url, workdir / "vm-data")
            timeline.append({"minutes": (time.monotonic() - began) / 60, "rows": figures["rows"],
                             "bytes_per_sample": figures["storage_bytes"] / figures["rows"],
                             "index_bytes": figures["size_bytes"] - figures["storage_bytes"]})
            print(f"{timeline[-1]['minutes']:.0f} min: {figures['rows']:,.0f} rows, "
                  f"{timeline[-1]['bytes_per_sample']:.2f} bytes/sample", flush=True)
        merge_s = wait_merged(vm_url)
        merged = stores.vm_figures(vm_url, workdir / "vm-data")
        head = rules_run.prom_metrics(url)
        return {"nodes": args.nodes, "gpus": args.gpus, "minutes": args.minutes, "per_node": per_node,
                "timeline": timeline, "merge_s": merge_s, "merged_rows": merged["rows"],
                "merged_bytes_per_sample": merged["storage_bytes"] / merged["rows"],
                "index_bytes": merged["size_bytes"] - merged["storage_bytes"],
                "head_series": sum(head.get("prometheus_tsdb_head_series", {}).values()),
                "vm_rss_mib": stack.proc_figures(vm.pid)["rss_mib"]}


def report(r: dict, args) -> str:
    lines = [f"Machine: {machine_summary()}. Date: {utc_now()}. Command: `.venv/bin/python bench/scaling/steady_store.py "
             f"--nodes {args.nodes} --minutes {args.minutes:g} --every {args.every:g}`.", "",
             f"{r['nodes']} simulated nodes x {r['gpus']} GPUs, this host's node_exporter and the node-health exporter, "
             f"scraped every {SCRAPE_S} s by one Prometheus with the whole rule catalog, remote-writing everything to "
             f"VictoriaMetrics ({r['head_series']:,.0f} head series).", "",
             "| minutes | rows stored | bytes per sample |", "|---:|---:|---:|"]
    lines += [f"| {t['minutes']:.0f} | {t['rows']:,.0f} | {t['bytes_per_sample']:.2f} |" for t in r["timeline"]]
    lines += [f"| {r['minutes']:g}, merged | {r['merged_rows']:,.0f} | **{r['merged_bytes_per_sample']:.2f}** |", "",
              f"After a forced merge ({r['merge_s']:.0f} s): **{r['merged_bytes_per_sample']:.2f} bytes per sample** "
              f"in the data parts; the series index {r['index_bytes'] / 2**20:,.1f} MiB (it grows with new series, not "
              f"with time); VictoriaMetrics resident {r['vm_rss_mib']:,.0f} MiB.", "",
              f"Series each node adds besides its GPUs: node_exporter **{r['per_node']['node_exporter']:,}** (this "
              f"host), node-health exporter **{r['per_node']['node_health']:,}** (`--simulate`: its simulated disks).", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=25)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--minutes", type=float, default=90.0, help="how long the store fills before the merge")
    parser.add_argument("--every", type=float, default=15.0, help="minutes between two readings")
    parser.add_argument("--json", type=Path, help="also write every figure to this file (run.py --steady reads it)")
    add_record_option(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vigil-bench-steady-") as tmp:
        figures = measure(args, Path(tmp))
    text = report(figures, args)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    if args.record:
        write_section(stack.ROOT / "docs" / "benchmarks.md", SECTION,
                      "## Scaling: a store's bytes per sample once merged, and each node's own series "
                      "(`bench/scaling/steady_store.py`)\n\n" + text)


if __name__ == "__main__":
    main()
