"""`vigil ask`: Text2PromQL over vigil's own metrics (docs/ask.md)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from vigil.aiops.ask.answer import Answer, ask
from vigil.aiops.ask.results import run_query
from vigil.aiops.ask.llm import LlmUnavailable, ask_llm
from vigil.aiops.ask.retrieve import Unanswerable
from vigil.common.click_types import HttpUrl
from vigil.common.prometheus_api import PrometheusUnavailable
from vigil.stack.runstate import NoStack, read_state


def _prometheus_url(run_dir: Path | None, prometheus: str | None) -> str:
    if prometheus:
        return prometheus
    try:
        state = read_state(run_dir or Path(".vigil"))
        # the global view where the stack has one (VictoriaMetrics: every shard's nodes), else the Prometheus
        return state.urls.get("metrics_query") or state.components["prometheus"].url
    except NoStack as exc:
        raise click.ClickException(f"--run needs a Prometheus: {exc} (or give --prometheus URL)") from None


def _print_text(answer: Answer, result: list[dict] | None) -> None:
    click.echo(answer.promql)
    click.echo(f"metrics: {', '.join(answer.metrics)}")
    click.echo(f"why: {answer.explanation}")
    if len(answer.readings) > 1:  # the question has several readings: say so, and show each
        click.echo(f"ambiguous: {answer.ask_back}")
        for number, reading in enumerate(answer.readings, 1):
            click.echo(f"  reading {number} ({reading.meaning}): {reading.promql}")
    if result is not None:
        click.echo(f"result ({len(result)} series):")
        for row in result:
            labels = ", ".join(f"{k}={v}" for k, v in sorted(row["labels"].items()) if k != "__name__")
            value = row["value"]  # a number, or "NaN" / "+Inf" / "-Inf" as Prometheus spells them
            click.echo(f"  {{{labels}}} {value if isinstance(value, str) else format(value, 'g')}")


@click.command("ask")
@click.argument("question")
@click.option("--json", "as_json", is_flag=True, help='Print {"promql", "metrics", "explanation"[, "result"]}; a '
              'question with several readings adds "ask_back" and "readings".')
@click.option("--run", "run", is_flag=True, help="Also run the query on Prometheus and show the result.")
@click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run directory of the stack whose Prometheus --run queries [default: .vigil]; implies --run.")
@click.option("--prometheus", "--prometheus-url", "prometheus", type=HttpUrl(), metavar="URL", help="Prometheus to run the query on (instead of --run-dir's); implies --run.")
@click.option("--llm-url", metavar="URL", help="OpenAI-compatible endpoint (vLLM, Ollama) to write the query; "
              "it gets the same retrieved context and its query is validated the same way.")
@click.option("--llm-model", default="default", show_default=True, help="Model name sent to --llm-url.")
def ask_command(question, as_json, run, run_dir, prometheus, llm_url, llm_model):
    """Answer QUESTION with a PromQL query over vigil's metrics, the metrics it reads and why.

    Works offline: retrieval over the metric catalog and the worked examples of
    aiops/ask/examples.yaml. A question no metric answers exits 1 with the reason.
    """
    if run_dir is not None and prometheus:
        raise click.UsageError("give --run-dir or --prometheus, not both")
    try:
        answer = ask_llm(question, llm_url, llm_model) if llm_url else ask(question)
    except (Unanswerable, LlmUnavailable) as exc:
        if as_json:
            click.echo(json.dumps({"error": str(exc)}))
        raise click.ClickException(f"cannot answer: {exc}") from None
    result = None
    if run or run_dir is not None or prometheus:  # saying where to run it asks for it to be run
        try:
            result = run_query(answer.promql, _prometheus_url(run_dir, prometheus))
        except PrometheusUnavailable as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        body = answer.as_json()
        if result is not None:
            body["result"] = result
        click.echo(json.dumps(body, indent=2))
    else:
        _print_text(answer, result)
