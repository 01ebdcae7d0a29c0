"""Optional backend: a language model behind an OpenAI-compatible endpoint (vLLM, Ollama, ...) writes
the query from the same retrieved context the offline path uses (the best-matching metrics of the
catalog with type, unit, labels and help, and the nearest worked examples with their reasoning); its
answer is validated like any other (parses, names only existing metrics and labels). When the model's
query does not validate, the offline answer is returned, and the explanation says so.
"""

from __future__ import annotations

import re

import requests

from .answer import Answer, Unanswerable, ask, check_question
from .examples import load_examples, nearest
from .intent import parse_question
from .knowledge import Knowledge, load_knowledge
from .retrieve import rank
from .validate import InvalidQuery, validate

CONTEXT_METRICS = 12
TIMEOUT_S = 60
_FENCE = re.compile(r"```(?:promql)?\s*(.+?)```", re.S)


class LlmUnavailable(RuntimeError):
    """The endpoint could not be reached or did not answer like an OpenAI-compatible chat API."""


def build_messages(question: str, knowledge: Knowledge) -> list[dict]:
    """The chat messages sent to the model: the system rules, the retrieved metrics and examples."""
    intent = parse_question(question, knowledge)
    near = nearest(set(intent.words), load_examples(), n=4)
    lines = []
    for match in rank(intent.words, knowledge, near)[:CONTEXT_METRICS]:
        doc = knowledge.metrics.get(match.name)
        if doc is None:  # a derived measure
            lines.append(f"- derived: {match.measure['name']}: {match.measure['expr'].format(*match.measure['metrics'])}")
            continue
        labels = "unknown" if doc.labels is None else ", ".join(sorted(knowledge.labels(doc.name)))
        lines.append(f"- {doc.name} ({doc.type}{', ' + doc.unit if doc.unit else ''}; labels: {labels}): {doc.help}")
    shots = []
    for _, example in near:
        reasoning = "\n".join(f"  - {step}" for step in example.reasoning)
        shots.append(f"Question: {example.question}\nReasoning:\n{reasoning}\nPromQL: {example.promql}")
    system = ("You translate operators' questions about a GPU cluster into one PromQL query for Prometheus 2.42. "
              "Use only the metrics and labels listed; counters need rate() or increase(). Think step by step "
              "like the examples, then end with the query alone in a ```promql``` block.")
    user = ("Metrics:\n" + "\n".join(lines) + "\n\nExamples:\n" + "\n\n".join(shots)
            + f"\n\nQuestion: {question}\nReasoning:")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def extract_query(text: str) -> str:
    """The query in the model's reply: the last ```promql``` block, else its last non-empty line."""
    blocks = _FENCE.findall(text)
    if blocks:
        return blocks[-1].strip()
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1].removeprefix("PromQL:").strip() if lines else ""


def chat_completions_url(url: str) -> str:
    """The chat-completions endpoint of `url`: the server (`http://host:port`), its OpenAI-style base URL
    (`http://host:port/v1`, what vLLM and Ollama print) or the endpoint itself, with or without a
    trailing slash."""
    base = url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    return base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")


def ask_llm(question: str, url: str, model: str = "default") -> Answer:
    question = check_question(question)
    knowledge = load_knowledge()
    messages = build_messages(question, knowledge)
    try:
        response = requests.post(chat_completions_url(url), timeout=TIMEOUT_S,
                                 json={"model": model, "messages": messages, "temperature": 0})
        response.raise_for_status()  # a 404 from a wrong path is no answer, whatever its body
        reply = response.json()["choices"][0]["message"]["content"]
    except (requests.RequestException, ValueError, KeyError, IndexError, TypeError) as exc:
        raise LlmUnavailable(f"no chat answer from {url}: {exc.__class__.__name__}: {exc}") from None
    promql = extract_query(reply)
    try:
        metrics = validate(promql, knowledge)
    except InvalidQuery as exc:
        offline = ask(question, knowledge)  # raises Unanswerable when neither path has an answer
        offline.explanation += f"; the model's query {promql!r} was refused ({exc}), this is the offline answer"
        return offline
    try:
        reading = f"offline reading: {ask(question, knowledge).explanation}"
    except Unanswerable as exc:  # the model answered what the offline path cannot: keep its answer
        reading = f"no offline reading ({exc})"
    return Answer(promql, metrics, f"written by the model at {url} from the retrieved context; {reading}")
