"""Exports re-send a Responses call: curl to /responses with the exact body; pytest with the chain it continues."""
from __future__ import annotations

import json
import shlex

import pytest

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.export.formats import call_curl, call_pytest
from agent_core.export.responses_pytest import chain_calls
from agent_core.trace.reader import read_trace

SAMPLE = SAMPLE_TRACES / "responses_previous_id.jsonl"


def test_curl_posts_the_exact_body_to_the_responses_endpoint():
    trace = read_trace(SAMPLE)
    command = call_curl(trace, 1)
    assert '/v1}/responses"' in command and "/chat/completions" not in command
    words = shlex.split(command.replace("\\\n", " "))      # as the shell reads it
    assert json.loads(words[words.index("--data-binary") + 1]) == trace.calls[1].request


def test_pytest_export_re_sends_the_previous_response_id_chain_and_passes(tmp_path):
    trace = read_trace(SAMPLE)
    assert [c.index for c in chain_calls(trace, trace.calls[3])] == [0, 1, 2, 3]
    path = tmp_path / "test_resend.py"
    path.write_text(call_pytest(trace, 3), encoding="utf-8")
    # run in-process (a subprocess would spend most of the time importing); it starts its own demo model
    assert pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(path)]) == 0
