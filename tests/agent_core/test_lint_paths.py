"""Every finding points at the native JSON path of the element at fault.

The expected paths are written by hand from the payloads below (which key of
which message is wrong), not copied from the linter's output.
"""
from __future__ import annotations

import pytest
from lint.cases import AC, LONG41, TOOLS, A, C, S, T, U

from agent_core.lint.scan import lint_payload, lint_request, lint_trace
from agent_core.trace.model import Call, Trace


def _paths(findings) -> list[tuple[str, str]]:
    return [(f.rule, f.path) for f in findings]


PAYLOAD_CASES = [
    # (name, messages, tools, profile, thinking, expected (rule, path) in the linter's order)
    ("second call unanswered", [U(), AC(C("a"), C("b")), T("a"), A()], TOOLS, "openai", False,
     [("missing-tool-result", "messages[1].tool_calls[1]")]),
    ("orphan first after a trim", [T("a"), U()], TOOLS, "openai", False,
     [("orphan-tool", "messages[0]"), ("user-after-tool", "messages[1]")]),
    ("user between call and result", [U(), AC(C("a")), U("wait"), T("a"), A()], TOOLS, "openai", False,
     [("interleaved-message", "messages[2]")]),
    ("system between call and result", [U(), AC(C("a")), S("note"), T("a"), A()], TOOLS, "openai", False,
     [("system-not-first", "messages[2]"), ("interleaved-message", "messages[2]")]),
    ("unknown id in the run", [U(), AC(C("a")), T("a"), T("x"), A()], TOOLS, "openai", False,
     [("unknown-tool-call-id", "messages[3].tool_call_id")]),
    ("two results for one call", [U(), AC(C("a")), T("a"), T("a"), A()], TOOLS, "openai", False,
     [("duplicate-tool-call-id", "messages[3].tool_call_id")]),
    ("one id twice in a list", [U(), AC(C("a"), C("a")), T("a"), A()], TOOLS, "openai", False,
     [("duplicate-tool-call-id", "messages[1].tool_calls[1].id")]),
    ("id over 40 characters", [U(), AC(C(LONG41)), T(LONG41), A()], TOOLS, "openai", False,
     [("tool-call-id-too-long", "messages[1].tool_calls[0].id")]),
    ("call without id", [U(), AC({"type": "function", "function": {"name": "get_weather", "arguments": "{}"}}), A()],
     TOOLS, "openai", False, [("missing-tool-call-id", "messages[1].tool_calls[0].id")]),
    ("tool message without tool_call_id", [U(), AC(C("a")), {"role": "tool", "content": "x"}, A()], TOOLS, "openai",
     False, [("missing-tool-result", "messages[1].tool_calls[0]"),
             ("missing-tool-call-id", "messages[2].tool_call_id")]),
    ("arguments sent as an object", [U(), AC(C("a", args={"city": "Paris"})), T("a"), A()], TOOLS, "openai", False,
     [("invalid-tool-arguments", "messages[1].tool_calls[0].function.arguments")]),
    ("dotted function name", [U(), AC(C("a", name="weather.get")), T("a"), A()], TOOLS, "openai", False,
     [("invalid-tool-name", "messages[1].tool_calls[0].function.name"),
      ("undeclared-tool", "messages[1].tool_calls[0].function.name")]),
    ("dotted declared tool", [U(), A()], [{"type": "function", "function": {"name": "get_weather"}},
                                          {"type": "function", "function": {"name": "fs/read"}}], "openai", False,
     [("invalid-tool-name", "tools[1].function.name")]),
    ("empty tools list", [U(), A()], [], "openai", False, [("empty-tools", "tools")]),
    ("no messages", [], TOOLS, "openai", False, [("invalid-messages", "messages")]),
    ("empty tool_calls", [U(), {"role": "assistant", "content": "hi", "tool_calls": []}], TOOLS, "openai", False,
     [("empty-tool-calls", "messages[1].tool_calls")]),
    ("tool_calls on a user message", [{"role": "user", "content": "x", "tool_calls": [C("a")]}], TOOLS, "openai",
     False, [("malformed-tool-call", "messages[0].tool_calls")]),
    ("call that is a string", [U(), AC("call_1"), A()], TOOLS, "openai", False,
     [("wrong-type", "messages[1].tool_calls[0]")]),
    ("call without type", [U(), AC({"id": "a", "function": {"name": "get_weather", "arguments": "{}"}}), T("a"), A()],
     TOOLS, "openai", False, [("malformed-tool-call", "messages[1].tool_calls[0].type")]),
    ("call without function", [U(), AC({"id": "a", "type": "function"}), T("a"), A()], TOOLS, "openai", False,
     [("malformed-tool-call", "messages[1].tool_calls[0].function")]),
    ("user content null", [{"role": "user", "content": None}], TOOLS, "openai", False,
     [("null-content", "messages[0].content")]),
    ("tool content missing", [U(), AC(C("a")), {"role": "tool", "tool_call_id": "a"}, A()], TOOLS, "openai", False,
     [("null-content", "messages[2].content")]),
    ("unknown role and a non-object", [{"role": "bot", "content": "x"}, 7], TOOLS, "openai", False,
     [("invalid-role", "messages[0].role"), ("invalid-role", "messages[1]")]),
    ("results out of order for vLLM", [U(), AC(C("a"), C("b")), T("b"), T("a"), A()], TOOLS, "vllm", False,
     [("results-out-of-order", "messages[1].tool_calls")]),
    ("thinking mode without reasoning", [U(), AC(C("a")), T("a"), A()], TOOLS, "deepseek", True,
     [("missing-reasoning-content", "messages[1].reasoning_content")]),
    ("legacy function_call to an undeclared tool",
     [U(), {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": "{}"}}],
     TOOLS, "openai", False,
     [("legacy-function-call", "messages[1].function_call"), ("undeclared-tool", "messages[1].function_call.name")]),
    ("legacy role function", [U(), {"role": "function", "name": "lookup", "content": "x"}], TOOLS, "openai", False,
     [("legacy-function-call", "messages[1]")]),
    ("function_call on a user message", [{"role": "user", "content": "x", "function_call": {"name": "f"}}], TOOLS,
     "openai", False, [("legacy-function-call", "messages[0].function_call")]),
]


@pytest.mark.parametrize("case", PAYLOAD_CASES, ids=[c[0] for c in PAYLOAD_CASES])
def test_each_finding_points_at_its_native_path(case):
    _, messages, tools, profile, thinking, expected = case
    assert _paths(lint_payload(messages, tools, profile=profile, thinking=thinking)) == expected


def test_request_level_paths_follow_the_body():
    history = [U(), AC(C("a")), T("a"), A()]
    assert _paths(lint_request({"messages": history})) == [("tools-missing-for-history", "tools")]
    # the legacy functions list is where the bad name sits, so the path names it
    body = {"messages": [U(), A()], "functions": [{"name": "a b", "parameters": {}}]}
    assert _paths(lint_request(body)) == [("invalid-tool-name", "functions[0].name")]
    assert _paths(lint_request({"messages": "hello"})) == [("invalid-messages", "messages")]


def test_a_resumed_payload_keeps_absolute_paths():
    first = [U(), AC(C("a")), T("a"), A()]
    second = first + [U("more"), T("zz")]          # extends the first: lint_trace resumes at message 4
    trace = Trace(source="t", format="x", calls=[Call(index=0, request={"messages": first, "tools": TOOLS}),
                                                  Call(index=1, request={"messages": second, "tools": TOOLS})])
    assert [(f.call, f.rule, f.path) for f in lint_trace(trace)] == [(1, "orphan-tool", "messages[5]")]


def test_path_is_exported():
    (f,) = lint_payload([U(), AC(C("a"), C("b")), T("b")], TOOLS)
    assert f.export()["path"] == "messages[1].tool_calls[0]"
