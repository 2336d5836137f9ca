"""What ``lint_trace`` works out once per distinct message (``lint/facts.py``) never changes a finding.

A windowed replay feeds each message at many positions; the scan skips the checks ``entry_kind`` has already
settled for it. The reference is linting each payload on its own (``lint_request``), where every entry is fed
through every check (``feed``'s default kind), at profiles whose rules differ in what they read (DeepSeek's thinking
mode and R1 reasoning check, Anthropic's turn numbering and id form, Mistral's 9-character ids, Bedrock's
reused ids, OpenAI's id length).
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.apis.chat_completions import CHAT_COMPLETIONS
from agent_core.lint import scan
from agent_core.lint.facts import CALLS, GENERAL, PLAIN, TYPED, entry_kind
from agent_core.lint.scan import lint_request, lint_trace
from agent_core.trace.model import Call, Trace

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
PROFILES = ["openai", "deepseek", "deepseek-r1", "anthropic", "mistral", "bedrock"]


def _kind(message) -> int:
    return entry_kind(CHAT_COMPLETIONS.entries([message], 0)[0])


def test_a_plain_turn_a_typed_message_and_a_wrongly_typed_one() -> None:
    assert _kind({"role": "user", "content": "hi"}) == PLAIN
    assert _kind({"role": "system", "content": [{"type": "text", "text": "be brief"}]}) == PLAIN
    # whatever a rule may still say of it from the message alone keeps it out of PLAIN
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assert _kind({"role": "assistant", "content": None, "tool_calls": [call]}) == CALLS
    assert _kind({"role": "assistant", "content": None, "tool_calls": [call, {**call, "id": "c2"}]}) == CALLS
    assert _kind({"role": "assistant", "content": None, "tool_calls": [call, call]}) == TYPED      # id twice
    for bad in ({"name": "f g", "arguments": "{}"}, {"name": "f", "arguments": "[1]"}, {"name": "f"},
                {"name": "", "arguments": "{}"}, {"name": "f", "arguments": "{"}):
        assert _kind({"role": "assistant", "tool_calls": [{**call, "function": bad}]}) == TYPED, bad
    assert _kind({"role": "assistant", "tool_calls": [{"id": "c1", "function": call["function"]}]}) == TYPED
    assert _kind({"role": "assistant", "tool_calls": [{**call, "id": ""}]}) == TYPED
    assert _kind({"role": "tool", "tool_call_id": "c1", "content": "18C"}) == TYPED
    assert _kind({"role": "user", "content": None}) == TYPED
    assert _kind({"role": "user"}) == TYPED
    assert _kind({"role": "assistant", "content": "x", "reasoning_content": "why"}) == TYPED
    assert _kind({"role": "function", "name": "f", "content": "x"}) == TYPED
    assert _kind({"role": "nope", "content": "x"}) == TYPED
    assert _kind({"role": "assistant", "content": "x", "tool_calls": []}) == TYPED
    # a field of the wrong JSON type, or no object at all: every check runs
    assert _kind({"role": ["user"], "content": "x"}) == GENERAL
    assert _kind({"role": "user", "content": 7}) == GENERAL
    assert _kind({"role": "tool", "tool_call_id": 3, "content": "x"}) == GENERAL
    assert _kind("user: hi") == GENERAL


def test_a_sliding_window_of_well_typed_messages_is_never_type_checked(monkeypatch) -> None:
    checked: list[int] = []
    real = scan.check_types
    monkeypatch.setattr(scan, "check_types", lambda s, e, i: (checked.append(i), real(s, e, i)))
    history = [{"role": "system", "content": "be brief"}]
    for k in range(30):
        history += [{"role": "user", "content": f"q{k}"},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": f"c{k}", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": f"c{k}", "content": "18C"}]
    bodies = [{"model": "gpt-4o", "messages": [history[0], *history[1 + k:11 + k]], "tools": TOOLS} for k in range(60)]
    trace = Trace(source="<test>", format="test", calls=[Call(index=k, request=b) for k, b in enumerate(bodies)])
    found = lint_trace(trace)
    assert checked == []
    assert found == [f for k, b in enumerate(bodies) for f in lint_request(b, call=k)]
    # a window may start at a result (orphan) or end at a call (no result); a question follows each result
    assert {f.rule for f in found} == {"orphan-tool", "missing-tool-result", "user-after-tool"}


_ids = st.one_of(st.sampled_from(["c1", "c2", "call_abcdefghi", ""]), st.integers(0, 2), st.none())
_call = st.one_of(st.integers(), st.fixed_dictionaries({"id": _ids}, optional={
    "type": st.one_of(st.just("function"), st.none()), "function": st.one_of(st.none(), st.fixed_dictionaries(
        {}, optional={"name": st.sampled_from(["get_weather", "bad name", "", "other"]),
                      "arguments": st.sampled_from(["{}", "[1]", "{", 3])}))}))
_plain = st.fixed_dictionaries({"role": st.sampled_from(["system", "developer", "user", "assistant"]),
                                "content": st.one_of(st.text(max_size=2), st.just([{"type": "text", "text": "t"}]))})
_result = st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": _ids},
                                optional={"content": st.one_of(st.none(), st.text(max_size=2))})
_any = st.fixed_dictionaries({}, optional={
    "role": st.one_of(st.sampled_from(["user", "assistant", "tool", "function", "nope"]), st.integers()),
    "content": st.one_of(st.none(), st.text(max_size=2), st.integers()),
    "tool_calls": st.one_of(st.none(), st.integers(), st.lists(_call, max_size=3)), "tool_call_id": _ids,
    "function_call": st.one_of(st.none(), st.fixed_dictionaries({"name": st.text(max_size=2)})),
    "reasoning_content": st.text(max_size=2)})
_good_call = st.builds(lambda cid, name, args: {"id": cid, "type": "function",
                                                "function": {"name": name, "arguments": args}},
                       st.sampled_from(["c1", "c2", "call_abcdefghi", "abcDEF123", "toolu_01", "x" * 50]),
                       st.sampled_from(["get_weather", "other"]), st.sampled_from(["{}", '{"city": "Paris"}']))
_calling = st.builds(lambda calls, content, reasoning: {"role": "assistant", "content": content,
                                                        "tool_calls": calls, **reasoning},
                     st.lists(_good_call, min_size=1, max_size=3), st.sampled_from([None, "", "let me look"]),
                     st.sampled_from([{}, {"reasoning_content": "why"}]))
_message = st.one_of(_plain, _plain, _result, _calling, _calling, _any, st.integers())


@settings(max_examples=250, deadline=None)
@given(st.lists(_message, min_size=1, max_size=14), st.integers(1, 6), st.sampled_from(PROFILES),
       st.booleans())
def test_windows_over_any_messages_say_what_each_payload_alone_says(history, width, profile, tools) -> None:
    head = history[0]
    bodies = []
    for k in range(len(history)):       # a system head kept, the rest a sliding window; then whole history again
        body = {"model": "deepseek-reasoner", "messages": [head, *history[1 + k:1 + k + width]]}
        if tools:
            body["tools"] = TOOLS
        bodies.append(body)
    bodies.append({**bodies[-1], "messages": list(history)})
    trace = Trace(source="<test>", format="test", calls=[Call(index=k, request=b) for k, b in enumerate(bodies)])
    alone = [f for k, b in enumerate(bodies) for f in lint_request(b, profile=profile, call=k)]
    assert lint_trace(trace, profile=profile) == alone
