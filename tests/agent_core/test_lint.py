"""The protocol linter on hand-made payloads (tests/fixtures/lint/cases.py) and on arbitrary JSON."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lint import cases

from agent_core.lint.profiles import PROFILES, SEVERITIES, get_profile
from agent_core.lint.rules import NATIVE_RULES
from agent_core.lint.scan import (
    RULES,
    Finding,
    api_rejection,
    group_findings,
    lint_payload,
    lint_request,
    lint_trace,
)
from agent_core.trace.model import Call, Trace

CASES = cases.CASES


def _summary(findings: list[Finding]) -> list[tuple]:
    return [(f.rule, f.severity, f.index, f.tool_call_ids) for f in findings]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case):
    before = copy.deepcopy(case.messages)
    findings = lint_payload(case.messages, case.tools, profile=case.profile, call=7, thinking=case.thinking)
    assert _summary(findings) == case.expected
    assert case.messages == before, "the linter must not modify the payload"
    for position, text in case.api_errors.items():
        assert findings[position].api_error == text
    for f in findings:
        assert f.call == 7 and f.profile == get_profile(case.profile).name
        assert f.message and "\n" not in f.message and f.fix and "\n" not in f.fix


def test_table_has_enough_cases_and_covers_every_rule_both_ways():
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)
    for rule in RULES:
        if rule in NATIVE_RULES or rule.startswith("responses-"):     # native tables: test_lint_native.py, test_responses_lint.py
            continue
        positive = [c for c in CASES if c.rule == rule and c.positive]
        negative = [c for c in CASES if c.rule == rule and not c.positive]
        assert positive, f"no positive case for {rule}"
        assert all(any(e[0] == rule for e in c.expected) for c in positive), rule
        assert negative, f"no negative case for {rule}"
        assert all(not any(e[0] == rule for e in c.expected) for c in negative), rule


def test_negative_cases_for_structural_rules_are_the_clean_chains():
    # orphan-tool, invalid-tool-call-id, malformed-tool-call and invalid-messages never fire on clean payloads.
    for c in CASES:
        if c.name.startswith("clean-"):
            assert lint_payload(c.messages, c.tools, profile="openai") == []
    ok = [cases.U(), cases.AC(cases.C(cases.M1)), cases.T(cases.M1), cases.A()]
    assert lint_payload(ok, cases.TOOLS, profile="mistral") == []
    assert lint_payload(ok, cases.TOOLS, profile="anthropic") == []


def test_export_schema():
    f = lint_payload([cases.U(), cases.AC(cases.C("a"))], cases.TOOLS)[0]
    data = f.export()
    assert set(data) >= {"rule", "severity", "call", "index", "message", "api_error", "fix", "tool_call_ids"}
    assert json.loads(json.dumps(data)) == data
    assert data["rule"] == "missing-tool-result" and data["tool_call_ids"] == ["a"] and data["index"] == 1


def test_rules_catalogue():
    for rule_id, info in RULES.items():
        assert info.id == rule_id and info.severity in ("error", "warning", "info") and info.title and info.explanation
    issue_rules = {"missing-tool-result", "orphan-tool", "interleaved-message", "unknown-tool-call-id",
                   "duplicate-tool-call-id", "missing-tool-call-id", "invalid-tool-arguments", "empty-tool-calls",
                   "null-content", "invalid-role", "invalid-tool-name", "tool-call-id-too-long",
                   "legacy-function-call", "undeclared-tool", "tools-missing-for-history", "system-not-first",
                   "user-after-tool"}
    assert issue_rules <= set(RULES)
    for rule in ("legacy-function-call", "undeclared-tool", "system-not-first", "user-after-tool"):
        assert RULES[rule].severity == "warning"
    assert RULES["tools-missing-for-history"].severity == "info"     # OpenAI accepts it


def test_profiles():
    assert set(PROFILES) == {"openai", "deepseek", "deepseek-r1", "dashscope", "mistral", "anthropic", "bedrock",
                             "gemini", "ollama", "vllm"}
    assert get_profile("azure") is PROFILES["openai"] and get_profile(None) is PROFILES["openai"]
    with pytest.raises(KeyError, match="unknown provider profile"):
        get_profile("nope")
    for p in PROFILES.values():
        for key, value in p.severities.items():
            assert value in SEVERITIES and key.split(":")[0] in RULES, (p.name, key)
        for key in p.templates:
            assert key.split(":")[0] in RULES, (p.name, key)
    assert get_profile("mistral").severity("user-after-tool") == "error"
    assert get_profile("openai").severity("user-after-tool", default="warning") == "warning"


def test_api_rejection_envelope():
    body = {"model": "m", "messages": [cases.U(), cases.AC(cases.C("call_1"), cases.C("call_2")), cases.T("call_1")]}
    assert api_rejection(body) == {"error": {
        "message": cases.O1 + "call_2", "type": "invalid_request_error", "param": "messages.[1].role", "code": None}}
    assert api_rejection({"messages": [cases.U(), cases.A()]}) is None
    # warnings never reject
    assert api_rejection({"messages": [cases.U(), cases.AC(cases.C("a")), cases.T("a"), cases.U()]}) is None
    orphan = api_rejection({"messages": [cases.T("a")]})["error"]
    assert orphan == {"message": cases.O2, "type": "invalid_request_error", "param": "messages.[0].role", "code": None}
    empty = api_rejection({"messages": [cases.U(), {"role": "assistant", "content": "x", "tool_calls": []}]})
    assert empty["error"]["code"] == "empty_array" and empty["error"]["param"] == "messages[1].tool_calls"


def test_thinking_mode_is_detected_from_the_body():
    msgs = [cases.U(), cases.AC(cases.C("a")), cases.T("a")]
    rules = lambda body: [f.rule for f in lint_request(body, profile="deepseek", check_tools=False)]  # noqa: E731
    assert rules({"model": "deepseek-reasoner", "messages": msgs}) == ["missing-reasoning-content"]
    assert rules({"model": "deepseek-chat", "messages": msgs, "thinking": {"type": "enabled"}}) == [
        "missing-reasoning-content"]
    assert rules({"model": "deepseek-chat", "messages": msgs}) == []


def test_lint_request_uses_tools_and_legacy_functions():
    msgs = [cases.U(), cases.AC(cases.C("a", name="lookup")), cases.T("a"), cases.A()]
    assert _summary(lint_request({"messages": msgs, "tools": cases.TOOLS})) == [("undeclared-tool", "warning", 1, ["a"])]
    assert lint_request({"messages": msgs, "functions": [{"name": "lookup", "parameters": {}}]}) == []
    assert _summary(lint_request({"messages": msgs})) == [("tools-missing-for-history", "info", 1, [])]
    assert _summary(lint_request({"messages": msgs}, check_tools=False)) == []


def test_tools_missing_for_history_follows_each_provider():
    # The classic flow's second call: tool history, no tools key at all.
    body = {"messages": [cases.U(), cases.AC(cases.C("a")), cases.T("a")]}
    assert _summary(lint_request(body)) == [("tools-missing-for-history", "info", 1, [])]
    assert api_rejection(body) is None
    # Bedrock Converse's text as users quote it (langgenius/dify#17545, aws-samples/bedrock-access-gateway#239).
    [bedrock] = lint_request(body, profile="bedrock")
    assert (bedrock.severity, bedrock.path) == ("error", "tools")
    assert bedrock.api_error == ("The toolConfig field must be defined when using toolUse and toolResult content "
                                 "blocks.")
    assert api_rejection(body, profile="bedrock")["error"]["message"] == bedrock.api_error
    # Anthropic answers HTTP 200 since (vercel/ai#17005), older models with empty content: a warning, no text.
    [anthropic] = lint_request(body, profile="anthropic")
    assert (anthropic.severity, anthropic.api_error) == ("warning", None)
    assert lint_request({**body, "tools": cases.TOOLS, "tool_choice": "none"}, profile="bedrock") == []


def test_group_findings_collapses_repeats():
    msgs = [cases.U(), cases.AC(cases.C("a")), cases.U()]
    trace = Trace(source="t", format="x", calls=[Call(index=k, request={"messages": msgs + [cases.A()] * k})
                                                  for k in range(3)])
    rows = group_findings(lint_trace(trace))
    assert [(f.rule, calls) for f, calls in rows] == [("missing-tool-result", [0, 1, 2]),
                                                      ("tools-missing-for-history", [0, 1, 2])]


# --- robustness --------------------------------------------------------------------------------------

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda children: st.lists(children, max_size=4) | st.dictionaries(
                         st.sampled_from(["role", "content", "tool_calls", "tool_call_id", "id", "function",
                                          "name", "arguments", "type", "x"]), children, max_size=5), max_leaves=20)
_roles = st.sampled_from(["user", "assistant", "tool", "system", "function", "bot", None, 3])


@st.composite
def _messageish(draw):
    m = draw(st.dictionaries(st.sampled_from(["content", "tool_calls", "tool_call_id", "name", "function_call"]),
                             _json, max_size=4))
    m["role"] = draw(_roles)
    return m


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_json, _messageish()), max_size=8), st.one_of(st.none(), _json),
       st.sampled_from(sorted(PROFILES)))
def test_never_raises_on_arbitrary_json(messages, tools, profile):
    before = copy.deepcopy(messages)
    findings = lint_payload(messages, tools, profile=profile)
    assert all(isinstance(f, Finding) and f.severity in ("error", "warning", "info") for f in findings)
    indexes = [-1 if f.index is None else f.index for f in findings]
    assert indexes == sorted(indexes)
    assert messages == before
    lint_request({"messages": messages, "tools": tools}, profile=profile)
    api_rejection({"messages": messages}, profile=profile)


@settings(max_examples=100, deadline=None)
@given(st.one_of(_json, st.lists(_json)))
def test_never_raises_on_any_body(value):
    lint_payload(value)
    lint_request(value)


def test_deeply_nested_values_anywhere_do_not_crash():
    deep_list: list = []
    deep_dict: dict = {}
    for _ in range(100000):
        deep_list, deep_dict = [deep_list], {"x": deep_dict}
    msgs = [{"role": deep_list, "content": "x", "tool_calls": [{"id": "a", "function": {"name": deep_list}}]},
            {"role": "user", "content": deep_dict, "function_call": deep_dict}, deep_dict, deep_list]
    rules = [f.rule for f in lint_payload(msgs, tools=[deep_dict, {"function": deep_dict}])]
    assert rules == ["wrong-type", "wrong-type", "malformed-tool-call", "wrong-type", "legacy-function-call",
                     "invalid-role", "invalid-role"]      # a role or name that is an array, content an object
    trace = Trace(source="t", format="x", calls=[Call(index=0, request={"messages": msgs}),
                                                 Call(index=1, request={"messages": msgs + [deep_dict]})])
    assert len(lint_trace(trace)) == 15


def test_deeply_nested_arguments_do_not_crash():
    deep = "[" * 100000 + "]" * 100000
    msgs = [cases.U(), cases.AC(cases.C("a", args=deep)), cases.T("a"), cases.A()]
    assert _summary(lint_payload(msgs, cases.TOOLS)) == [("invalid-tool-arguments", "error", 1, ["a"])]


def test_docs_lint_md_is_generated_from_the_rules():
    from agent_core.lint.rules import rules_markdown

    doc = Path(__file__).resolve().parents[2] / "docs" / "lint.md"
    assert doc.read_text(encoding="utf-8") == rules_markdown(), "regenerate docs/lint.md with rules_markdown()"
