"""DeepSeek's opposite contracts for reasoning_content, keyed by model version (lint/deepseek.py).

Expected behaviour from DeepSeek's docs, not from our profiles:
- thinking mode (api-docs.deepseek.com/guides/thinking_mode#tool-calls): a tool-call turn must pass its
  reasoning_content back; a turn without tool calls may leave it out. Text: deepseek-ai/DeepSeek-V3#1053.
- the 2025 deepseek-reasoner, R1 (api-docs.deepseek.com/guides/reasoning_model, archived 2025-07-28): reasoning_content
  in any input message is a 400; the error body is not documented, so no error text may be shown.
"""
from __future__ import annotations

from agent_core.cli.main import main
from agent_core.lint.scan import lint_payload, lint_request, lint_trace
from agent_core.trace.model import Call, Trace

THINKING_MISSING = ("Missing `reasoning_content` field in the assistant message at message index 1. For more "
                    "information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls")
R1_DOC = "if the reasoning_content field is included in the sequence of input messages, the API will return a 400 error"

CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def _chain(reasoning: bool) -> list[dict]:
    assistant = {"role": "assistant", "content": "", "tool_calls": [CALL]}
    if reasoning:
        assistant["reasoning_content"] = "I need the weather tool."
    return [{"role": "user", "content": "weather?"}, assistant,
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]


def _errors(messages, profile):
    body = {"model": "deepseek-reasoner", "messages": messages, "tools": TOOLS}
    return [(f.rule, f.path, f.api_error) for f in lint_request(body, profile=profile) if f.severity == "error"]


def test_a_tool_turn_with_reasoning_is_required_by_thinking_mode_and_refused_by_r1():
    assert _errors(_chain(True), "deepseek") == []
    assert _errors(_chain(True), "deepseek-r1") == [("reasoning-content-in-input", "messages[1].reasoning_content",
                                                     None)]


def test_a_tool_turn_without_reasoning_is_refused_by_thinking_mode_and_accepted_by_r1():
    assert _errors(_chain(False), "deepseek") == [("missing-reasoning-content", "messages[1].reasoning_content", THINKING_MISSING)]
    assert _errors(_chain(False), "deepseek-r1") == []


def test_r1_refuses_reasoning_on_any_message_and_quotes_the_documentation_not_an_error_body():
    chat = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "reasoning_content": "r"},
            {"role": "user", "content": "c"}, {"role": "assistant", "content": "d", "reasoning_content": None}]
    found = lint_payload(chat, profile="deepseek-r1")
    assert [(f.rule, f.index, f.severity, f.api_error) for f in found] == [
        ("reasoning-content-in-input", 1, "error", None), ("reasoning-content-in-input", 3, "error", None)]
    assert R1_DOC in found[0].message
    # every other profile leaves the field alone (the deepseek profile: a turn without tool calls may carry it)
    assert [f for p in ("openai", "deepseek", "mistral", "vllm") for f in lint_payload(chat, profile=p)] == []


def test_a_full_history_log_reports_the_echoed_reasoning_in_every_call_that_resends_it():
    m = _chain(True)
    first = {"model": "deepseek-reasoner", "messages": m[:1], "tools": TOOLS}
    second = {"model": "deepseek-reasoner", "messages": m, "tools": TOOLS}
    third = {"model": "deepseek-reasoner", "messages": m + [{"role": "assistant", "content": "Sunny."},
                                                              {"role": "user", "content": "thanks"}], "tools": TOOLS}
    trace = Trace(source="t", format="request-jsonl", calls=[Call(index=i, request=b) for i, b in enumerate((first, second, third))])
    found = [(f.call, f.path) for f in lint_trace(trace, profile="deepseek-r1") if f.rule == "reasoning-content-in-input"]
    assert found == [(1, "messages[1].reasoning_content"), (2, "messages[1].reasoning_content")]


def test_cli_names_the_profile_and_shows_the_documented_sentence(tmp_path, capsys):
    path = tmp_path / "r1.json"
    import json

    path.write_text(json.dumps({"model": "deepseek-reasoner", "messages": _chain(True), "tools": TOOLS}))
    assert main(["lint", str(path), "--profile", "deepseek-r1"]) == 1
    out = capsys.readouterr().out
    assert "profile deepseek-r1: 1 errors" in out and R1_DOC in out
    assert "deepseek-r1 says:" not in out          # no error body is invented
    assert main(["lint", str(path), "--profile", "deepseek-reasoner-r1"]) == 1    # the alias
    capsys.readouterr()
