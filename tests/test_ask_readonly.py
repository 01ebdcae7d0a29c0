"""`vigil ask` answers questions; a request to change something is refused with a reason, not answered
with whatever metric its words happen to match ("delete all data" once gave a TSDB replay metric)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vigil.aiops.ask.answer import ask
from vigil.aiops.ask.retrieve import Unanswerable
from vigil.cli import main


@pytest.mark.parametrize("request_text", ["delete all data", "Please restart node-3", "silence GpuOverheating on node-2",
                                          "drop the vigil_gpu_job series", "reset GPU 3 on node-1"])
def test_a_command_is_refused_with_a_reason(request_text):
    with pytest.raises(Unanswerable, match="asks to change something; vigil ask only reads metrics"):
        ask(request_text)
    result = CliRunner().invoke(main, ["ask", request_text, "--json"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "asks to change something" in result.output


def test_questions_about_the_same_things_are_still_answered():
    for question in ("how many GPUs were reset in the last day?", "which GPUs were drained?",
                     "restarts of the notifier in the last hour"):
        try:
            ask(question)
        except Unanswerable as exc:
            assert "asks to change something" not in str(exc), question
    answer = ask("how hot is GPU 0 on node-1?")
    assert "vigil_gpu_temperature_celsius" in json.dumps(answer.as_json())
