"""``chain-studio replay`` judges the replayed payloads by the trace's own provider unless ``--profile`` says
otherwise, and a Gemini trace's payloads are judged as Gemini bodies (their turns are ``contents``), not as
Chat Completions messages with an unknown role ``model``.

Expected text: google-gemini/gemini-cli#3124 (quoted in ../shared/design/protocol-errors.md).
"""
from __future__ import annotations

import json

from agent_core.cli.main import main
from agent_core.core.paths import PROJECT_ROOT

CHAINS = PROJECT_ROOT / "tests" / "fixtures" / "verdicts"
GEMINI_COUNT = ("Please ensure that the number of function response parts is equal to the number of function call "
                "parts of the function call turn.")


def _replay(capsys, name, *extra):
    assert main(["replay", str(CHAINS / name), "--policy", "keep-all", *extra]) == 0
    return capsys.readouterr().out


def test_a_gemini_trace_is_judged_by_gemini_unless_told_otherwise(capsys):
    lines = _replay(capsys, "gemini_short_response_turn.json", "--format", "text").splitlines()
    assert lines[1] == "  rejections judged by the gemini profile"
    assert lines[2].endswith("REJECTED: missing-tool-result at message 1")
    doc = json.loads(_replay(capsys, "gemini_short_response_turn.json", "--full"))
    (finding,) = [f for f in doc["calls"][0]["findings"] if f["severity"] == "error"]
    assert (finding["profile"], finding["rule"], finding["api_error"]) == ("gemini", "missing-tool-result",
                                                                          GEMINI_COUNT)
    lines = _replay(capsys, "gemini_short_response_turn.json", "--format", "text", "--profile", "openai").splitlines()
    assert lines[1] == "  rejections judged by the openai profile"
    assert lines[2].endswith("REJECTED: missing-tool-result at message 1")


def test_a_chat_completions_trace_is_judged_by_openai(capsys):
    lines = _replay(capsys, "cc_trimmed_orphan.json", "--format", "text").splitlines()
    assert lines[1] == "  rejections judged by the openai profile"
    assert "REJECTED: orphan-tool at message 1" in lines[2]


def test_an_anthropic_trace_is_judged_as_anthropic_bodies(capsys):
    """Replay lints an Anthropic trace's payloads as Messages API bodies: its content blocks hold the tool_use
    that Chat Completions cannot see, so a keep-all replay rejects what lint rejects (it reported 0 rejected).
    Expected text: Anthropic's, as quoted in ../shared/design/protocol-errors.md."""
    doc = json.loads(_replay(capsys, "anthropic_unanswered_tool_use.json", "--full"))
    (finding,) = [f for f in doc["calls"][0]["findings"] if f["severity"] == "error"]
    assert (finding["profile"], finding["rule"], finding["path"]) == (
        "anthropic", "missing-tool-result", "messages[1].content[1]")
    assert finding["api_error"] == ("messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
                                    "after: abcDEF123. Each `tool_use` block must have a corresponding `tool_result` "
                                    "block in the next message.")
    assert doc["totals"]["rejected"] == 1
