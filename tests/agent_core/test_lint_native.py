"""Native Anthropic Messages and Gemini rules: hand-made bodies, every native rule positive and negative.

Expected texts are typed from the public reports quoted in ../shared/design/protocol-errors.md
(section 5) and the issue threads named next to each, not copied from agent_core/lint/anthropic.py.
"""
from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent_core.lint.profiles import PROFILES
from agent_core.lint.rules import NATIVE_RULES
from agent_core.lint.scan import lint_request, lint_trace
from agent_core.lint.verdicts import verdicts
from agent_core.trace.model import Call, Trace

TOOLS = [{"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}}]
USE = {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "sunny"}
THINK = {"type": "thinking", "thinking": "Call the tool.", "signature": "EqQBCkYIsig"}


def A(*blocks):
    return {"role": "assistant", "content": list(blocks)}


def U(*blocks):
    return {"role": "user", "content": list(blocks) if blocks else "Weather in Paris?"}


def body(*messages, thinking=False, **extra):
    out = {"model": "claude-sonnet-4-5", "max_tokens": 512, "tools": TOOLS, "messages": list(messages), **extra}
    if thinking:
        out["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    return out


T = {"type": "text", "text": "ok"}
# (name, body, expected [(rule, native path, exact text)])
CASES = [
    ("clean-tool-round", body(U(), A(T, USE), U(RESULT)), []),
    ("clean-thinking-round", body(U(), A(THINK, USE), U(RESULT), thinking=True), []),
    ("missing-tool-result", body(U(), A(T, USE), U(T)), [(
        "missing-tool-result", "messages[1].content[1]",
        ("messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A. Each "
        "`tool_use` block must have a corresponding `tool_result` block in the next message."))]),   # claude-code#5989
    ("unexpected-tool-use-id", body(U(), A(T), U(dict(RESULT, tool_use_id="toolu_09Z"))), [(
        "unknown-tool-call-id", "messages[2].content[0].tool_use_id",
        ("messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_09Z. Each `tool_result` "
        "block must have a corresponding `tool_use` block in the previous message."))]),   # claude-code#13460
    ("tool-result-in-assistant", body(U(), A(T, USE), U(RESULT), A(RESULT), U(T)), [(
        "tool-result-outside-user", "messages[3].content[0]",
        "`tool_result` blocks can only be in `user` messages")]),   # tghamm/Anthropic.SDK#128
    ("thinking-on-final-turn-without-thinking", body(U(), A(USE), U(RESULT), thinking=True), [(
        "thinking-not-first", "messages[1].content[0]",
        ("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` "
        "is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of "
        "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid "
        "this requirement, disable `thinking`. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"))]),   # ai-sdk-provider#162, n8n#22550
    ("thinking-off-final-turn-with-thinking", body(U(), A(THINK, USE), U(RESULT)), [(
        "thinking-when-disabled", "messages[1].content[0]",
        ("messages.1.content.0: When thinking is disabled, an `assistant` message in the final position cannot "
        "contain `thinking`. To use thinking blocks, enable `thinking` in your request."))]),   # forgecode#1195
    ("thinking-off-old-turn-with-thinking", body(U(), A(THINK, T), U(T)), []),
    ("thinking-after-text", body(U(), A(T, THINK), U(T)), [(
        "thinking-not-first", "messages[1].content[0]",
        ("messages.1.content.0: If an assistant message contains any thinking blocks, the first block must be "
        "thinking or redacted_thinking. Found text."))]),   # claude-code#20705
    ("empty-text-block", body(U(), A({"type": "text", "text": ""}), U(T)), [(
        "empty-text-block", "messages[1].content[0]", "messages: text content blocks must be non-empty")]),  # #59812
    ("empty-message", body(U(), {"role": "assistant", "content": []}, U(T)), [(
        "empty-message", "messages[1].content",
        "messages.1: all messages must have non-empty content except for the optional final assistant message")]),
    ("empty-final-assistant-is-a-prefill", body(U(), {"role": "assistant", "content": ""}), []),
    ("tool-role", body(U(), {"role": "tool", "content": "x"}), [(
        "invalid-role", "messages[1].role",
        ('messages: Unexpected role "tool". Allowed roles are "user" or "assistant". For instructions on how to use '
        "tools, see https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview."))]),  # NyarchAssistant#157
]


@pytest.mark.parametrize("name,request_body,expected", CASES, ids=[c[0] for c in CASES])
def test_anthropic_case(name, request_body, expected):
    before = copy.deepcopy(request_body)
    found = [(f.rule, f.path, f.api_error) for f in lint_request(request_body, profile="anthropic")
             if f.severity == "error"]
    assert found == expected
    assert request_body == before


def _trace(*calls) -> Trace:
    return Trace(source="<test>", format="test", calls=[
        Call(index=i, request=req, response=resp) for i, (req, resp) in enumerate(calls)])


def test_thinking_block_changed_between_calls():
    returned = [THINK, USE]
    first = body(U(), thinking=True)
    resent = body(U(), A(*returned), U(RESULT), thinking=True)
    edited = body(U(), A(dict(THINK, thinking="Call the tool. (edited)"), USE), U(RESULT), thinking=True)
    response = {"type": "message", "role": "assistant", "content": returned}
    assert lint_trace(_trace((first, response), (resent, None)), profile="anthropic") == []
    found = lint_trace(_trace((first, response), (edited, None)), profile="anthropic")
    assert [(f.rule, f.call, f.path, f.api_error) for f in found] == [(
        "thinking-changed", 1, "messages[1].content[0]",
        "messages.1.content.0: Invalid `signature` in `thinking` block")]     # claude-code#10627


GEMINI_TOOLS = [{"functionDeclarations": [{"name": "get_weather"}, {"name": "get_time"}]}]


def _fc(name, sig=None):
    part = {"functionCall": {"name": name, "args": {}}}
    return dict(part, thoughtSignature=sig) if sig else part


def _fr(name):
    return {"functionResponse": {"name": name, "response": {"ok": True}}}


def test_gemini_thought_signatures_first_of_batch_and_each_sequential_step():
    user = {"role": "user", "parts": [{"text": "Weather and time in Paris?"}]}
    parallel = {"role": "model", "parts": [_fc("get_weather", "sigA"), _fc("get_time")]}   # only the first carries it
    answers = {"role": "user", "parts": [_fr("get_weather"), _fr("get_time")]}
    ok = {"contents": [user, parallel, answers], "tools": GEMINI_TOOLS}
    assert lint_request(ok, profile="gemini") == []
    step2 = {"role": "model", "parts": [_fc("get_time")]}     # a sequential call without its signature
    bad = {"contents": [user, parallel, answers, step2, {"role": "user", "parts": [_fr("get_time")]}],
           "tools": GEMINI_TOOLS}
    found = lint_request(bad, profile="gemini")
    assert [(f.rule, f.path) for f in found] == [("missing-thought-signature", "contents[3].parts[0]")]
    # 5ire#405 (text quoted in protocol-errors.md section 5); the position value is ours (its meaning is undocumented)
    assert found[0].api_error.startswith(
        "Function call is missing a thought_signature in functionCall parts. This is required for tools to work "
        "correctly, and missing thought_signature may lead to degraded model performance. Additional data, function "
        "call `default_api:get_time` , position ")


def test_every_native_rule_is_exercised():
    fired = {c[2][0][0] for c in CASES if c[2]} | {"thinking-changed", "missing-thought-signature",
                                                    "conversion-loss", "function-call-placement",
                                                    "function-response-placement"}
    assert NATIVE_RULES <= fired


_KEYS = ["type", "id", "tool_use_id", "content", "role", "text", "thinking", "signature", "input", "name", "parts",
         "functionCall", "functionResponse", "thoughtSignature", "args", "response"]
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4) | st.sampled_from(
        ["tool_use", "tool_result", "thinking", "text", "user", "assistant", "model", "toolu_1"]),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(_KEYS), c, max_size=5), max_leaves=25)
_UNHASHABLE = [{"role": "assistant", "content": [{"type": "tool_use", "id": ["x"], "name": {}, "input": []}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": {"a": 1}}]}]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(_JSON, _JSON, st.booleans())
@example(_UNHASHABLE, None, False)
def test_native_rules_and_conversion_never_raise(messages, tools, thinking):
    bodies = ({"system": "s", "messages": messages, "tools": tools,
               "thinking": {"type": "enabled" if thinking else "disabled"}}, {"contents": messages, "tools": tools})
    for request_body in bodies:
        for profile in PROFILES:
            for f in lint_request(request_body, profile=profile):
                assert f.path and f.message
        verdicts(Trace(source="<fuzz>", format="test", calls=[
            Call(index=0, request=request_body, response={"content": messages}), Call(index=1, request=request_body)]))
