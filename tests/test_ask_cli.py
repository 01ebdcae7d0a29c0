"""`vigil ask` as a user runs it (the installed entry point), the AIOps service's ask handler, and the
prompt the optional language-model backend sends."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from stack_support import vigil
from vigil.aiops.ask.http import handle_ask
from vigil.aiops.ask.knowledge import load_knowledge
from vigil.aiops.ask.llm import build_messages, chat_completions_url, extract_query
from vigil.common.ports import free_port


def test_json_answer_has_the_contract_shape():
    result = vigil("ask", "which GPUs on node-3 ran hottest in the last hour?", "--json")
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert set(body) == {"promql", "metrics", "explanation"}
    assert "vigil_gpu_temperature_celsius" in body["promql"] and '[1h]' in body["promql"]
    assert body["metrics"] == ["vigil_gpu_temperature_celsius"]
    assert isinstance(body["explanation"], str) and body["explanation"]


def test_an_unanswerable_question_exits_1_with_a_reason_and_no_query():
    result = vigil("ask", "what's the weather in Paris", "--json")
    assert result.returncode == 1
    assert "weather" in result.stderr and "Traceback" not in result.stderr
    assert set(json.loads(result.stdout)) == {"error"}  # no made-up promql


def test_run_without_a_stack_is_a_clear_error(tmp_path):
    result = vigil("ask", "GPU power draw on node-1", "--run", "--run-dir", str(tmp_path / "none"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "--prometheus" in result.stderr


def test_a_prometheus_url_runs_the_query_there_and_a_malformed_one_is_refused_before_any_request():
    result = vigil("ask", "GPU power draw on node-1", "--prometheus-url", f"http://127.0.0.1:{free_port()}")
    assert result.returncode == 1 and "cannot reach Prometheus at http://127.0.0.1:" in result.stderr  # no --run needed
    result = vigil("ask", "GPU power draw on node-1", "--prometheus", "not-a-url")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "'not-a-url' is not an http:// or https:// URL" in result.stderr


def test_the_service_handler_answers_like_the_cli_and_refuses_bad_requests():
    status, body = handle_ask(b'{"question": "top 3 GPUs by power draw"}', None)
    assert status == 200 and body["promql"] == "topk(3, vigil_gpu_power_watts)"
    assert set(body) == {"promql", "metrics", "explanation"}
    status, body = handle_ask(b'{"question": "what is the weather in Paris"}', None)
    assert status == 422 and body["reason"] == "unanswerable" and "weather" in body["error"]
    for raw, wanted in ((b"not json", "not valid JSON"), (b"[1]", "JSON object"), (b'{"question": 3}', "non-empty string"),
                        (b'{"question": "x", "colour": 1}', "unknown field 'colour'"),
                        (b'{"question": "GPU power", "run": true}', "--prometheus-url"),
                        (b'{"question": "GPU power", "run": "yes"}', "true or false")):
        status, body = handle_ask(raw, None)
        assert status == 400 and wanted in body["error"], (raw, body)
    assert handle_ask(b" " * 20000, None)[0] == 413


@pytest.mark.parametrize("question, reason", [
    ("top 99999999999999999999999 nodes by gpu temperature", "a ranking of 99999999999999999999999 is longer"),
    ("gpu temperature over the last 99999999999999999999 days", "at most 10 years"),
    ("gpu temperature over the last 0 minutes", "more than nothing"),
    ("gpu temperature over the last -5 minutes", "a positive span"),
    ("gpu temperature over -5m", "a positive span"),
    ("gpu temperature in the recent -5 minutes", "a positive span"),
    ("gpus hotter than 1" + "0" * 400, "too large a number"),
    ("gpu temperature now vs 99999999999999999999 days ago", "an offset of more than 10 years"),
])
def test_a_number_no_query_can_hold_is_unanswerable_saying_why(question, reason):
    status, body = handle_ask(json.dumps({"question": question}).encode(), None)
    assert status == 422 and reason in body["error"], body
    result = vigil("ask", question, "--json")
    assert result.returncode == 1 and reason in result.stderr and "Traceback" not in result.stderr


def test_the_llm_prompt_carries_the_retrieved_metrics_and_worked_examples():
    messages = build_messages("which GPUs on node-3 ran hottest in the last hour?", load_knowledge())
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert "vigil_gpu_temperature_celsius (gauge, celsius; labels:" in user and "sensor" in user
    assert "Question: Which GPUs on node-2 are the hottest right now?" in user  # the nearest worked example
    assert "PromQL: sort_desc(vigil_gpu_temperature_celsius" in user
    assert user.rstrip().endswith("Question: which GPUs on node-3 ran hottest in the last hour?\nReasoning:")


@pytest.mark.parametrize("reply, query", [
    ("The die sensor...\n```promql\nmax(vigil_gpu_temperature_celsius)\n```", "max(vigil_gpu_temperature_celsius)"),
    ("reasoning\nPromQL: up == 0", "up == 0"),
])
def test_the_query_is_read_from_the_models_reply(reply, query):
    assert extract_query(reply) == query


def test_an_unreachable_language_model_is_a_clear_error():
    port = free_port()  # a port nothing listens on
    result = vigil("ask", "GPU power draw on node-1", "--llm-url", f"http://127.0.0.1:{port}")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"127.0.0.1:{port}" in result.stderr


class _ChatModel:
    """An OpenAI-compatible chat endpoint on a free loopback port whose every reply is `reply` (the
    language model is an outside service the tests cannot run; its HTTP contract is what is tested)."""

    def __init__(self, reply: str) -> None:
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]}).encode()
        self.asked: list[dict] = []
        self.paths: list[str] = []  # the request paths, as the server saw them
        asked, paths = self.asked, self.paths

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                paths.append(self.path)
                asked.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200 if self.path == "/v1/chat/completions" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def chat_model(request):
    model = _ChatModel(request.param)
    yield model
    model.close()


@pytest.mark.parametrize("chat_model", ["The XID counter per node:\n```promql\nsum by (node) "
                                        "(increase(vigil_gpu_xid_errors_total[1d]))\n```"], indirect=True)
def test_the_models_valid_query_is_kept_even_where_the_offline_path_has_no_answer(chat_model):
    result = vigil("ask", "how is the weather for our accelerators", "--json", "--llm-url", chat_model.url)
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["promql"] == "sum by (node) (increase(vigil_gpu_xid_errors_total[1d]))"
    assert body["metrics"] == ["vigil_gpu_xid_errors_total"] and "written by the model" in body["explanation"]
    assert chat_model.asked and chat_model.asked[0]["messages"][-1]["content"].endswith("Reasoning:")


@pytest.mark.parametrize("chat_model", ["```promql\nmax(vigil_gpu_no_such_metric)\n```"], indirect=True)
def test_a_model_query_naming_unknown_metrics_falls_back_to_the_offline_answer(chat_model):
    result = vigil("ask", "GPU power draw on node-1", "--json", "--llm-url", chat_model.url)
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert "vigil_gpu_power" in body["promql"] and "vigil_gpu_no_such_metric" in body["explanation"]


@pytest.mark.parametrize("chat_model", ["```promql\nmax(vigil_gpu_power_watts)\n```"], indirect=True)
@pytest.mark.parametrize("suffix", ["", "/v1", "/v1/"])
def test_the_llm_url_may_be_the_host_or_the_usual_v1_base_url(chat_model, suffix):
    result = vigil("ask", "GPU power draw on node-1", "--json", "--llm-url", chat_model.url + suffix)
    assert result.returncode == 0, result.stderr
    assert chat_model.paths == ["/v1/chat/completions"]
    assert json.loads(result.stdout)["promql"] == "max(vigil_gpu_power_watts)"


@pytest.mark.parametrize("url", ["http://gpu-box:8000", "http://gpu-box:8000/", "http://gpu-box:8000/v1",
                                 "http://gpu-box:8000/v1/", "http://gpu-box:8000/v1/chat/completions"])
def test_every_spelling_of_the_llm_url_reaches_the_same_endpoint(url):
    assert chat_completions_url(url) == "http://gpu-box:8000/v1/chat/completions"


@pytest.mark.parametrize("chat_model", ["```promql\nmax(vigil_gpu_power_watts)\n```"], indirect=True)
def test_an_endpoint_that_answers_with_an_http_error_is_a_clear_error(chat_model):
    result = vigil("ask", "GPU power draw on node-1", "--llm-url", chat_model.url + "/openai")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "404" in result.stderr and "/openai/v1/chat/completions" in result.stderr
