"""`POST /api/v1/ask` of the AIOps service: the same answer as `vigil ask --json`.

Body: `{"question": "...", "run": false}`. Answers 200 `{"promql", "metrics", "explanation"[, "result"]}`,
with `"ask_back"` and `"readings"` added when the question has two readings (docs/ask.md "Asking back");
400 `{"error"}` for a body that is not such an object; 422 `{"error", "reason": "unanswerable"}` for a
question no metric of vigil answers; 502 when `run` is asked and the service's Prometheus fails.
"""

from __future__ import annotations

from vigil.common.json_body import BodyRejected, decode_json_body
from vigil.common.prometheus_api import PrometheusUnavailable

from .answer import ask
from .results import run_query
from .retrieve import Unanswerable

MAX_BODY = 16 * 1024


def handle_ask(raw: bytes, prometheus_url: str | None) -> tuple[int, dict]:
    """(HTTP status, JSON body) for one request body."""
    if len(raw) > MAX_BODY:
        return 413, {"error": f"body larger than {MAX_BODY} bytes"}
    try:
        body = decode_json_body(raw)
    except BodyRejected as exc:
        return 400, {"error": str(exc)}
    if not isinstance(body, dict):
        return 400, {"error": 'body must be a JSON object: {"question": "...", "run": false}'}
    question, run = body.get("question"), body.get("run", False)
    unknown = sorted(set(body) - {"question", "run"})
    problems = [f"unknown field {name!r}" for name in unknown]
    if not isinstance(question, str) or not question.strip():
        problems.append("'question' must be a non-empty string")
    if not isinstance(run, bool):
        problems.append("'run' must be true or false")
    if run is True and not prometheus_url:
        problems.append("'run' needs a Prometheus: this service was started without --prometheus-url")
    if problems:
        return 400, {"error": "; ".join(problems)}
    try:
        answer = ask(question)
    except Unanswerable as exc:
        return 422, {"error": str(exc), "reason": "unanswerable"}
    reply = answer.as_json()
    if run:
        try:
            reply["result"] = run_query(answer.promql, prometheus_url)
        except PrometheusUnavailable as exc:
            return 502, {"error": str(exc)}
    return 200, reply
