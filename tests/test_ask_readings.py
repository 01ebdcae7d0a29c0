"""`vigil ask` asks back when a question has two readings ("how many jobs": training jobs or Prometheus
scrape jobs) and chooses by context when the question says which; the readings reach the user through
the JSON (`ask_back`, `readings`), the AIOps service's `POST /api/v1/ask` and the CLI's printed lines; the
bench judges an ambiguous question by the readings offered. Also: the outside evaluation set is kept apart
from the tuning set."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from stack_support import vigil
from vigil.aiops.ask.answer import ask
from vigil.aiops.ask.examples import load_examples
from vigil.aiops.ask.http import handle_ask
from vigil.aiops.ask.judge import judge_one
from vigil.aiops.ask.knowledge import load_knowledge
from vigil.aiops.ask.validate import validate

BENCH = Path(__file__).resolve().parent.parent / "bench" / "ask"
TRAINING = "count(count by (job_id) (vigil_gpu_job))"
SCRAPE = "count(count by (job) (up))"


def test_a_question_with_two_readings_answers_the_first_and_offers_both():
    answer = ask("how many jobs exist?")
    assert answer.promql == TRAINING and answer.metrics == ["vigil_gpu_job"]
    assert [r.promql for r in answer.readings] == [TRAINING, SCRAPE]
    assert [r.metrics for r in answer.readings] == [["vigil_gpu_job"], ["up"]]
    assert "training jobs" in answer.ask_back and "scrape jobs" in answer.ask_back
    body = answer.as_json()
    assert set(body) == {"promql", "metrics", "explanation", "ask_back", "readings"}
    assert body["readings"][1] == {"meaning": answer.readings[1].meaning, "promql": SCRAPE, "metrics": ["up"]}


@pytest.mark.parametrize("question, promql", [
    ("how many training jobs exist?", TRAINING),
    ("how many scrape jobs exist?", SCRAPE),
    ("how many jobs hold GPUs on node-2?", 'count(count by (job_id) (vigil_gpu_job{node="node-2"}))'),
])
def test_context_chooses_the_reading_and_nothing_is_asked(question, promql):
    answer = ask(question)
    assert answer.promql == promql and not answer.readings
    assert set(answer.as_json()) == {"promql", "metrics", "explanation"}  # the contract's three fields only


def test_the_service_returns_the_readings_and_the_question_back():
    status, body = handle_ask(b'{"question": "list the jobs please"}', None)
    assert status == 200 and body["promql"] == "vigil_job_info"
    assert [r["promql"] for r in body["readings"]] == ["vigil_job_info", "count by (job) (up)"]
    assert body["ask_back"].startswith("which do you mean")


def test_the_cli_prints_the_question_back_and_each_reading():
    result = vigil("ask", "how many jobs exist?")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == TRAINING
    assert any(line.startswith("ambiguous: which do you mean") for line in lines)
    assert f"  reading 2 (Prometheus scrape jobs (the job label of targets)): {SCRAPE}" in lines
    result = vigil("ask", "how many jobs exist?", "--json")
    body = json.loads(result.stdout)
    assert body["promql"] == TRAINING and [r["promql"] for r in body["readings"]] == [TRAINING, SCRAPE]


@dataclass
class _Sample:
    labels: dict
    value: float


class _Prometheus:
    """Answers instant queries from a table (the judge's contract: `query(promql, at=...)`)."""

    def __init__(self, table: dict[str, list[_Sample]]) -> None:
        self.table = table

    def query(self, promql: str, at: float | None = None) -> list[_Sample]:
        return self.table.get(promql, [])


def test_the_bench_counts_an_ambiguous_question_right_only_when_it_asks_back_with_a_gold_reading():
    knowledge = load_knowledge()
    prometheus = _Prometheus({TRAINING: [_Sample({}, 2.0)], SCRAPE: [_Sample({}, 7.0)]})
    entry = {"question": "how many jobs exist?", "ambiguous": True, "gold": SCRAPE, "also": [TRAINING]}
    outcome = judge_one(entry, prometheus, 0.0, knowledge)
    assert outcome.correct and outcome.asked_back
    entry = {"question": "how many training jobs exist?", "ambiguous": True, "gold": SCRAPE}
    outcome = judge_one(entry, prometheus, 0.0, knowledge)  # answered one reading without saying so
    assert not outcome.correct and "without saying so" in outcome.why
    entry = {"question": "how many jobs exist?", "gold": SCRAPE}  # not ambiguous: the main answer is judged
    assert not judge_one(entry, prometheus, 0.0, knowledge).correct


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def test_the_outside_set_is_kept_apart_and_every_gold_query_is_valid():
    outside = yaml.safe_load((BENCH / "outside_questions.yaml").read_text())["questions"]
    assert len(outside) >= 60 and {q["split"] for q in outside} <= {"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
                                                                   "twelfth", "thirteenth", "fourteenth",
                                                                   "fifteenth", "sixteenth", "seventeenth"}
    tuning = {_normal(q["question"]) for q in yaml.safe_load((BENCH / "eval_questions.yaml").read_text())["questions"]}
    tuning |= {_normal(e.question) for e in load_examples()}
    assert not tuning & {_normal(q["question"]) for q in outside}
    knowledge = load_knowledge()
    for entry in outside:
        assert entry["source"] and entry["category"]
        for gold in [entry["gold"], *entry.get("also", ())]:
            assert validate(gold, knowledge)


def test_recording_one_set_keeps_the_other_sets_part_of_the_ask_section():
    spec = importlib.util.spec_from_file_location("ask_bench_run", BENCH / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    before = "## Text2PromQL (`vigil ask`)\n\n`vigil ask` offline, 276 held-out questions ...\n\n| all | 92.0% |\n"
    section = run.ask_section(before, "outside", "116 questions ...\n\n| all | 87.1% |\n")
    assert section.index(run.SET_TITLES["eval"]) < section.index(run.SET_TITLES["outside"])
    assert "276 held-out questions" in section and "87.1%" in section
    again = run.ask_section(section, "eval", "338 questions ...")
    assert "276 held-out" not in again and "338 questions" in again and "87.1%" in again


def test_the_bench_on_a_run_dir_with_no_stack_says_so_without_a_traceback(tmp_path):
    result = subprocess.run([sys.executable, str(BENCH / "run.py"), "--run-dir", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert f"no vigil stack is running in {tmp_path}" in result.stderr and "Traceback" not in result.stderr
