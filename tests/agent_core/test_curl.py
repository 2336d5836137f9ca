"""The curl command the Timeline's curl tab shows: the exact body, no key, the call's own endpoint."""
from __future__ import annotations

import json
import shlex

from agent_core.apis.chat_completions import chat_url, curl_command
from agent_core.core.paths import SAMPLE_TRACES
from agent_core.export.curl import call_base_url
from agent_core.trace.reader import read_trace


def test_curl_resends_the_exact_body_without_a_key():
    body = {"model": "m", "messages": [{"role": "user", "content": "it's \"quoted\" 成都 $HOME `x`"}]}
    cmd = curl_command(body, "https://user:secret@example.com/v1/")
    args = shlex.split(cmd.replace("\\\n", " "))
    assert args[0] == "curl" and args[1] == "https://example.com/v1/chat/completions"
    assert json.loads(args[args.index("-d") + 1]) == body
    assert "secret" not in cmd
    assert "Authorization: Bearer $OPENAI_API_KEY" in cmd
    assert chat_url(None) == "https://api.openai.com/v1/chat/completions"
    assert chat_url("http://h/v1/chat/completions") == "http://h/v1/chat/completions"


def test_call_base_url():
    classic = read_trace(SAMPLE_TRACES / "classic_remembers.jsonl")
    assert call_base_url(classic.calls[0]).endswith("/v1")
